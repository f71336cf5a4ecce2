package algorithms

import "slices"

// SlidingLog is an exact sliding window: it logs the instant of every
// admitted unit (denied calls are not logged) and admits while fewer than
// Limit units were admitted in the last Window nanoseconds. An entry logged
// at t counts while t > now − Window.
//
// Memory is one int64 per logged unit, so the edge bounds Limit (RL.LOG's
// log-max-limit). The zero value is not valid; the edge validates Limit ≥ 1
// and Window ≥ 1.
type SlidingLog struct {
	Limit  int64 // units per window
	Window int64 // ns
}

// LogState is a log's whole state: a ring of timestamps (unix ns), one per
// logged unit, oldest first from Ring[Head], wrapping around, Count of them
// in use. len(Ring) is the ring's capacity; it grows by doubling up to the
// limit and shrinks when the log empties out. Timestamps never decrease
// along the ring. The zero value is an empty log, the same as no state.
//
// Take writes into Ring, and into the spare capacity of its backing array,
// when it admits: the caller hands the ring over and keeps the state Take
// returns (see Take).
type LogState struct {
	Head  int64
	Count int64
	Ring  []int64
}

// Clone returns a copy of s whose ring shares no memory with s's.
func (s LogState) Clone() LogState {
	s.Ring = append([]int64(nil), s.Ring...)
	return s
}

// Entries appends the logged timestamps, oldest first, to dst.
func (s LogState) Entries(dst []int64) []int64 {
	if !s.valid() {
		return dst
	}
	for i := int64(0); i < s.Count; i++ {
		dst = append(dst, s.at(i))
	}
	return dst
}

// valid reports whether s describes a ring: a state restored from elsewhere
// that does not is treated as empty rather than trusted.
func (s LogState) valid() bool {
	c := int64(len(s.Ring))
	return s.Count > 0 && s.Count <= c && s.Head >= 0 && s.Head < c
}

// at returns the i-th oldest entry (0 ≤ i < Count).
func (s LogState) at(i int64) int64 {
	j := s.Head + i
	if c := int64(len(s.Ring)); j >= c {
		j -= c
	}
	return s.Ring[j]
}

// LogDraft is a log with decisions taken on it but not yet written: the
// state they started from (the base), which it only reads, and what they
// did to it: the oldest entries they dropped, the newest ones refunds
// removed, and the units they logged. Take is a draft, one Decide and one
// Apply. A group of decisions on one key (RL.ALL naming it many times)
// decides each on one draft and applies once: no decision copies the ring,
// so a group's memory does not grow with the ring times its size.
//
// Every Decide on one draft must pass the same now (a group is decided at
// one instant): the units it logs then share one stamp.
type LogDraft struct {
	base  LogState // valid, or the zero value
	from  int64    // oldest entries of base dropped
	n     int64    // entries of base still there: base.at(from … from+n-1)
	add   int64    // entries logged after them, all at stamp
	stamp int64
}

// NewLogDraft returns a draft of s with no decision taken on it. A state
// that does not describe a ring counts as empty (its ring's memory may
// still be reused).
func NewLogDraft(s LogState) LogDraft {
	if !s.valid() {
		s = LogState{Ring: s.Ring[:0]}
	}
	return LogDraft{base: s, n: s.Count}
}

// at returns the draft's i-th oldest entry (0 ≤ i < count).
func (d *LogDraft) at(i int64) int64 {
	if i < d.n {
		return d.base.at(d.from + i)
	}
	return d.stamp
}

// expired returns how many of the draft's oldest entries no longer count at
// now: those logged at or before now − Window. Binary search: the entries
// are sorted.
func (l SlidingLog) expired(d *LogDraft, now int64) int64 {
	cutoff := subSat(now, l.Window)
	lo, hi := int64(0), d.Count()
	for lo < hi {
		mid := int64(uint64(lo+hi) >> 1)
		if d.at(mid) <= cutoff {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// Check returns the decision Take would make, changing nothing.
func (l SlidingLog) Check(s LogState, now, n int64) Result {
	d := NewLogDraft(s)
	return l.Decide(&d, now, n)
}

// Take logs n units at now.
//
//   - n > 0 is admitted iff counted + n ≤ Limit, counted being the entries
//     logged after now − Window. A denial changes nothing; RetryAfter is the
//     time until enough of the oldest entries have left, or NeverNS if
//     n > Limit.
//   - n = 0 is a peek: nothing changes.
//   - n < 0 removes the -n newest entries (all of them at most).
//
// Remaining is Limit − counted after the call (0 at worst) and ResetAfter
// the time until the newest entry leaves (newest + Window − now), 0 for an
// empty log. If the clock went backwards, new entries are logged at the
// newest entry's instant rather than before it, which keeps the ring sorted
// and never lets a unit count for less than Window.
//
// Take is deterministic and reads no clock, but it is not pure in one
// respect, for speed: when it admits, it writes into s.Ring (see Apply).
// The caller must keep the returned state and treat s as consumed; Check
// decides without writing.
func (l SlidingLog) Take(s LogState, now, n int64) (Result, LogState) {
	d := NewLogDraft(s)
	r := l.Decide(&d, now, n)
	if !r.Allowed || n == 0 {
		return r, s
	}
	return r, d.Apply(l.Limit)
}

// Decide takes Take's decision on the draft d at now and, when it admits
// n ≠ 0, records it in d (nothing is written to the base's ring).
func (l SlidingLog) Decide(d *LogDraft, now, n int64) Result {
	gone := l.expired(d, now)
	counted := d.Count() - gone
	r := Result{Allowed: true, Limit: l.Limit}
	var drop, add, stamp int64
	switch {
	case n == 0:
	case n < 0:
		drop = min(counted, negSat(n))
	case n > l.Limit:
		r.Allowed, r.RetryAfter = false, NeverNS
	case counted <= l.Limit-n:
		add, stamp = n, now
		if counted > 0 {
			stamp = max(now, d.at(d.Count()-1))
		}
	default:
		// The oldest counted+n−Limit entries must leave; the last of them
		// leaves at its instant + Window.
		oldest := d.at(gone + counted + n - l.Limit - 1)
		r.Allowed, r.RetryAfter = false, addSat(oldest, l.Window)-now
	}
	left := counted - drop + add
	r.Remaining = max(l.Limit-left, 0)
	switch {
	case add > 0:
		r.ResetAfter = addSat(stamp, l.Window) - now
	case left > 0:
		r.ResetAfter = addSat(d.at(gone+left-1), l.Window) - now
	}
	if r.Allowed && n != 0 {
		d.step(gone, drop, add, stamp)
	}
	return r
}

// step drops the gone oldest entries and the drop newest ones, then logs
// add entries at stamp.
func (d *LogDraft) step(gone, drop, add, stamp int64) {
	if gone > d.n { // only when now moved on since units were logged
		d.add -= gone - d.n
		gone = d.n
	}
	d.from += gone
	d.n -= gone
	k := min(drop, d.add)
	d.add -= k
	d.n -= drop - k
	if add > 0 {
		if d.add > 0 && d.stamp != stamp {
			panic("algorithms: a LogDraft decided at two instants")
		}
		d.add += add
		d.stamp = stamp
	}
}

// Count returns the entries in the draft.
func (d *LogDraft) Count() int64 { return d.n + d.add }

// Rebase gives the draft's base a copy of its ring with more capacity, the
// room a keyspace reserved for Apply: ring's first words are the base
// ring's, the same entries at the same places.
func (d *LogDraft) Rebase(ring []int64) {
	d.base.Ring = ring[:len(d.base.Ring)]
}

// RingLen returns the capacity of the ring Apply leaves under limit: the
// base's while the entries fit in it and it is not mostly empty, else room
// to double within the limit; 0 for an empty log. A keyspace that keeps the
// ring in its own memory gives the base ring that capacity before Apply.
func (d *LogDraft) RingLen(limit int64) int64 {
	need, c := d.Count(), int64(len(d.base.Ring))
	switch {
	case need == 0:
		return 0
	case need > c || shrinkable(need, c):
		return ringSize(need, limit)
	}
	return c
}

// Apply writes the draft into its base's ring and returns the log's new
// state. It overwrites the base's free slots and entries that left and, to
// change the ring's size (see RingLen), moves the entries within the
// ring's backing array when its capacity allows, else into a new one. The
// caller keeps the returned state and drops the draft and its base.
func (d *LogDraft) Apply(limit int64) LogState {
	need := d.Count()
	if need == 0 {
		return LogState{}
	}
	s := d.base
	if c := int64(len(s.Ring)); c > 0 {
		head := s.Head + d.from
		if head >= c {
			head -= c
		}
		s.Head = head
	}
	s.Count = d.n
	if size := d.RingLen(limit); size != int64(len(s.Ring)) {
		s = s.resize(size)
	}
	c := int64(len(s.Ring))
	j := s.Head + s.Count
	for i := int64(0); i < d.add; i++ {
		if j >= c {
			j -= c
		}
		s.Ring[j] = d.stamp
		j++
	}
	s.Count += d.add
	return s
}

// minRing is the smallest ring a log gets, so that a few units do not cost a
// reallocation each.
const minRing = 8

// ringSize returns the capacity for a log of need entries under limit:
// room to double, within the limit, and never below need.
func ringSize(need, limit int64) int64 {
	size := limit
	if need <= limit/2 {
		size = 2 * need
	}
	return max(size, need, min(minRing, limit))
}

// shrinkable reports whether a ring of capacity c holding need entries is
// mostly empty: a quarter full or less, and not small.
func shrinkable(need, c int64) bool {
	return c > 4*minRing && need <= c/4
}

// resize moves the log to a ring of capacity size (≥ Count), oldest entry
// first: within s.Ring's backing array when its capacity allows (rotated in
// place), else to a new one.
func (s LogState) resize(size int64) LogState {
	if int64(cap(s.Ring)) >= size {
		r := s.Ring
		slices.Reverse(r[:s.Head])
		slices.Reverse(r[s.Head:])
		slices.Reverse(r)
		return LogState{Head: 0, Count: s.Count, Ring: r[:size]}
	}
	ring := make([]int64, size)
	for i := int64(0); i < s.Count; i++ {
		ring[i] = s.at(i)
	}
	return LogState{Head: 0, Count: s.Count, Ring: ring}
}
