package algorithms

import (
	"math/big"
	"slices"
	"testing"
	"time"
)

// Reference implementations, written independently of the algorithms: each
// keeps the plainest state that defines its algorithm (credit, a queue of
// units, counts per window index, a list of timestamps, a map of leases) and
// finds retry instants by search instead of by formula. The differential
// test replays the same random sequences against both and wants identical
// results, field by field.

type reference interface {
	take(now, n int64) Result
}

// refToken: a bucket of credit in nanoseconds; one token is T of credit.
type refToken struct {
	T, cap int64
	credit int64
	at     int64
	init   bool
}

func (b *refToken) take(now, n int64) Result {
	if !b.init {
		b.credit, b.at, b.init = b.cap*b.T, now, true
	}
	b.credit = min(b.cap*b.T, b.credit+(now-b.at))
	b.at = now
	r := Result{Allowed: true, Limit: b.cap}
	switch {
	case n < 0:
		b.credit = min(b.cap*b.T, b.credit-n*b.T)
	case n > b.cap:
		r.Allowed, r.RetryAfter = false, -1
	case n > 0 && b.credit >= n*b.T:
		b.credit -= n * b.T
	case n > 0:
		r.Allowed, r.RetryAfter = false, n*b.T-b.credit
	}
	r.Remaining = b.credit / b.T
	r.ResetAfter = b.cap*b.T - b.credit
	return r
}

// refLeaky: the queue as a list of units, each taking T, served one after
// another; a unit is in the queue until its service ends.
type refLeaky struct {
	T, cap int64
	ends   []int64 // service end of each queued unit, ascending
}

func (q *refLeaky) take(now, n int64) Result {
	for len(q.ends) > 0 && q.ends[0] <= now {
		q.ends = q.ends[1:]
	}
	backlog := func() int64 { // time until the queue is empty
		if len(q.ends) == 0 {
			return 0
		}
		return q.ends[len(q.ends)-1] - now
	}
	r := Result{Allowed: true, Limit: q.cap}
	switch {
	case n == 0:
		r.RetryAfter = backlog()
	case n < 0:
		// Refunded units leave from the back; a unit in service gives
		// back only what is left of it.
		left := -n * q.T
		for left > 0 && len(q.ends) > 0 {
			last := q.ends[len(q.ends)-1]
			start := now
			if len(q.ends) > 1 {
				start = max(now, q.ends[len(q.ends)-2])
			}
			if span := last - start; span <= left {
				q.ends, left = q.ends[:len(q.ends)-1], left-span
			} else {
				q.ends[len(q.ends)-1], left = last-left, 0
			}
		}
	case n > q.cap:
		r.Allowed, r.RetryAfter = false, -1
	case backlog()+n*q.T <= q.cap*q.T:
		r.RetryAfter = backlog()
		end := now + backlog()
		for i := int64(0); i < n; i++ {
			end += q.T
			q.ends = append(q.ends, end)
		}
	default:
		r.Allowed, r.RetryAfter = false, backlog()+n*q.T-q.cap*q.T
	}
	r.Remaining = (q.cap*q.T - backlog()) / q.T
	r.ResetAfter = backlog()
	return r
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// refFixed: a count per window index.
type refFixed struct {
	limit, W int64
	counts   map[int64]int64
}

func (f *refFixed) take(now, n int64) Result {
	idx := floorDiv(now, f.W)
	end := (idx + 1) * f.W
	c := f.counts[idx]
	r := Result{Allowed: true, Limit: f.limit}
	switch {
	case n < 0:
		c = max(0, c+n)
	case n > f.limit:
		r.Allowed, r.RetryAfter = false, -1
	case c+n <= f.limit:
		c += n
	default:
		r.Allowed, r.RetryAfter = false, end-now
	}
	f.counts[idx] = c
	r.Remaining = f.limit - c
	if c > 0 {
		r.ResetAfter = end - now
	}
	return r
}

// refSliding: a count per window index; the estimate in big integers; the
// retry instant by binary search over the estimate, which never grows while
// nothing arrives.
type refSliding struct {
	limit, W int64
	counts   map[int64]int64
}

func (s *refSliding) estimate(t int64) int64 {
	idx := floorDiv(t, s.W)
	e := t - idx*s.W
	weighted := new(big.Int).Mul(big.NewInt(s.counts[idx-1]), big.NewInt(s.W-e))
	weighted.Quo(weighted, big.NewInt(s.W))
	return s.counts[idx] + weighted.Int64()
}

func (s *refSliding) take(now, n int64) Result {
	idx := floorDiv(now, s.W)
	r := Result{Allowed: true, Limit: s.limit}
	switch {
	case n < 0:
		s.counts[idx] = max(0, s.counts[idx]+n)
	case n > s.limit:
		r.Allowed, r.RetryAfter = false, -1
	case n > 0 && s.estimate(now)+n <= s.limit:
		s.counts[idx] += n
	case n > 0:
		lo, hi := now, now+2*s.W // by then both windows are gone
		for lo < hi {
			mid := lo + (hi-lo)/2
			if s.estimate(mid)+n <= s.limit {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		r.Allowed, r.RetryAfter = false, lo-now
	}
	r.Remaining = max(0, s.limit-s.estimate(now))
	switch {
	case s.counts[idx] > 0:
		r.ResetAfter = (idx+2)*s.W - now
	case s.counts[idx-1] > 0:
		r.ResetAfter = (idx+1)*s.W - now
	}
	return r
}

// refLog: every admitted unit's timestamp in a plain list.
type refLog struct {
	limit, W int64
	stamps   []int64
}

func (l *refLog) counted(t int64) int64 {
	var c int64
	for _, s := range l.stamps {
		if s > t-l.W {
			c++
		}
	}
	return c
}

func (l *refLog) take(now, n int64) Result {
	r := Result{Allowed: true, Limit: l.limit}
	live := l.stamps[:0:0]
	for _, s := range l.stamps {
		if s > now-l.W {
			live = append(live, s)
		}
	}
	l.stamps = live
	switch {
	case n < 0:
		l.stamps = l.stamps[:max(0, int64(len(l.stamps))+n)]
	case n > l.limit:
		r.Allowed, r.RetryAfter = false, -1
	case n > 0 && l.counted(now)+n <= l.limit:
		for i := int64(0); i < n; i++ {
			l.stamps = append(l.stamps, now)
		}
	case n > 0:
		for _, s := range l.stamps { // the first instant an entry leaves at which n fits
			if l.counted(s+l.W)+n <= l.limit {
				r.Allowed, r.RetryAfter = false, s+l.W-now
				break
			}
		}
	}
	r.Remaining = l.limit - int64(len(l.stamps))
	if len(l.stamps) > 0 {
		r.ResetAfter = slices.Max(l.stamps) + l.W - now
	}
	return r
}

// randomGap returns a step forward in time that often lands exactly on, or
// one nanosecond either side of, a multiple of unit.
func randomGap(rng *rand, unit int64) int64 {
	switch rng.int63n(6) {
	case 0:
		return 0
	case 1:
		return unit
	case 2:
		return unit - 1
	case 3:
		return unit + 1
	default:
		return rng.int63n(2 * unit)
	}
}

func TestDifferentialAgainstReferences(t *testing.T) {
	rng := newRand(42)
	type pair struct {
		name string
		prod limiter
		ref  reference
		unit int64 // the time scale to step by
		max  int64 // the limit, for n
	}
	for trial := 0; trial < 400; trial++ {
		T := 1 + rng.int63n(int64(50*ms))
		W := 1 + rng.int63n(int64(sec))
		limit := 1 + rng.int63n(12)
		pairs := []pair{
			{"token", &tokenLimiter{b: TokenBucket{Interval: T, Capacity: limit}}, &refToken{T: T, cap: limit}, T, limit},
			{"leaky", &leakyLimiter{b: LeakyBucket{Interval: T, Capacity: limit}}, &refLeaky{T: T, cap: limit}, T, limit},
			{"fixed", &fixedLimiter{w: FixedWindow{Limit: limit, Window: W}}, &refFixed{limit: limit, W: W, counts: map[int64]int64{}}, W / 4, limit},
			{"sliding", &slidingLimiter{w: SlidingWindow{Limit: limit, Window: W}}, &refSliding{limit: limit, W: W, counts: map[int64]int64{}}, W / 4, limit},
			{"log", &logLimiter{l: SlidingLog{Limit: limit, Window: W}}, &refLog{limit: limit, W: W}, W / 4, limit},
		}
		for _, p := range pairs {
			now := t0 + rng.int63n(int64(time.Hour))
			for i := 0; i < 150; i++ {
				now += randomGap(rng, max(p.unit, 1))
				n := rng.int63n(p.max+4) - 2
				got, want := p.prod.take(now, n), p.ref.take(now, n)
				if got != want {
					t.Fatalf("%s trial %d step %d (T %v, W %v, limit %d) take(now, %d): got %s; reference %s",
						p.name, trial, i, time.Duration(T), time.Duration(W), limit, n, fmtResult(got), fmtResult(want))
				}
			}
		}
	}
}

// refLeases: a map from holder to lease end.
type refLeases struct {
	limit, lease int64
	ends         map[uint64]int64
}

func (l *refLeases) do(now int64, id uint64, op int64) Result {
	for k, end := range l.ends {
		if end <= now {
			delete(l.ends, k)
		}
	}
	r := Result{Allowed: true, Limit: l.limit}
	_, holds := l.ends[id]
	switch {
	case op == LeaseRelease:
		r.Allowed = holds
		delete(l.ends, id)
	case op == LeasePeek:
	case holds || int64(len(l.ends)) < l.limit:
		l.ends[id] = now + l.lease
	default:
		first := int64(-1)
		for _, end := range l.ends {
			if first < 0 || end < first {
				first = end
			}
		}
		r.Allowed, r.RetryAfter = false, first-now
	}
	r.Remaining = max(0, l.limit-int64(len(l.ends)))
	for _, end := range l.ends {
		r.ResetAfter = max(r.ResetAfter, end-now)
	}
	return r
}

func TestDifferentialLeasesAgainstReference(t *testing.T) {
	rng := newRand(9)
	for trial := 0; trial < 300; trial++ {
		lease := 1 + rng.int63n(int64(sec))
		limit := 1 + rng.int63n(5)
		ls := &leases{l: LeaseLimit{Limit: limit, Lease: lease}}
		ref := &refLeases{limit: limit, lease: lease, ends: map[uint64]int64{}}
		at := time.Duration(0)
		for i := 0; i < 200; i++ {
			at += time.Duration(randomGap(rng, lease/3+1))
			id := uint64(rng.int63n(8))
			op := rng.int63n(3) - 1
			got, want := ls.do(at, id, op), ref.do(t0+int64(at), id, op)
			if got != want {
				t.Fatalf("trial %d step %d: op %d id %d: got %s; reference %s", trial, i, op, id, fmtResult(got), fmtResult(want))
			}
		}
	}
}
