package algorithms

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
// Take writes into Ring when it admits: the caller hands the ring over and
// keeps the state Take returns (see Take).
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

// expired returns how many of the oldest entries no longer count at now:
// those logged at or before now − Window. Binary search: the ring is sorted.
func (l SlidingLog) expired(s LogState, now int64) int64 {
	cutoff := subSat(now, l.Window)
	lo, hi := int64(0), s.Count
	for lo < hi {
		mid := int64(uint64(lo+hi) >> 1)
		if s.at(mid) <= cutoff {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// logStep is what a decision does to a log: drop the gone oldest entries,
// drop the refunded newest ones, log add units at stamp.
type logStep struct {
	gone, drop, add, stamp int64
}

// Check returns the decision Take would make, changing nothing.
func (l SlidingLog) Check(s LogState, now, n int64) Result {
	r, _ := l.decide(s, now, n)
	return r
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
// respect, for speed: when it admits, it writes the new entries into
// s.Ring's free slots, overwriting entries that have left, or moves the log
// to a larger (or, once mostly empty, smaller) ring. The caller must keep
// the returned state and treat s as consumed; Check decides without
// writing.
func (l SlidingLog) Take(s LogState, now, n int64) (Result, LogState) {
	r, st := l.decide(s, now, n)
	if !r.Allowed || n == 0 {
		return r, s
	}
	if !s.valid() {
		s = LogState{}
	}
	count := s.Count - st.gone - st.drop
	if count+st.add == 0 {
		return r, LogState{}
	}
	head := s.Head + st.gone
	if c := int64(len(s.Ring)); head >= c {
		head -= c
	}
	s.Head, s.Count = head, count
	if need := count + st.add; need > int64(len(s.Ring)) || shrinkable(need, int64(len(s.Ring))) {
		s = s.resize(ringSize(need, l.Limit))
	}
	c := int64(len(s.Ring))
	j := s.Head + s.Count
	for i := int64(0); i < st.add; i++ {
		if j >= c {
			j -= c
		}
		s.Ring[j] = st.stamp
		j++
	}
	s.Count += st.add
	return r, s
}

// decide computes the decision and the step that carries it out.
func (l SlidingLog) decide(s LogState, now, n int64) (Result, logStep) {
	if !s.valid() {
		s = LogState{}
	}
	var st logStep
	st.gone = l.expired(s, now)
	counted := s.Count - st.gone
	r := Result{Allowed: true, Limit: l.Limit}
	switch {
	case n == 0:
	case n < 0:
		st.drop = min(counted, negSat(n))
	case n > l.Limit:
		r.Allowed, r.RetryAfter = false, NeverNS
	case counted <= l.Limit-n:
		st.add, st.stamp = n, now
		if counted > 0 {
			st.stamp = max(now, s.at(s.Count-1))
		}
	default:
		// The oldest counted+n−Limit entries must leave; the last of them
		// leaves at its instant + Window.
		oldest := s.at(st.gone + counted + n - l.Limit - 1)
		r.Allowed, r.RetryAfter = false, addSat(oldest, l.Window)-now
	}
	left := counted - st.drop + st.add
	r.Remaining = max(l.Limit-left, 0)
	switch {
	case st.add > 0:
		r.ResetAfter = addSat(st.stamp, l.Window) - now
	case left > 0:
		r.ResetAfter = addSat(s.at(st.gone+left-1), l.Window) - now
	}
	return r, st
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

// resize moves the log to a new ring of capacity size (≥ Count), oldest
// entry first.
func (s LogState) resize(size int64) LogState {
	ring := make([]int64, size)
	for i := int64(0); i < s.Count; i++ {
		ring[i] = s.at(i)
	}
	return LogState{Head: 0, Count: s.Count, Ring: ring}
}
