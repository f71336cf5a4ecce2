package algorithms

// TokenBucket is a token bucket in GCRA form: a full bucket holds Capacity
// tokens and one token comes back every Interval nanoseconds.
//
// The zero value is not a valid bucket; the edge validates Interval ≥ 1,
// Capacity ≥ 1 and RefillFits before building one. (Beyond MaxRefill the
// arithmetic saturates rather than wraps, but Limit would then overstate
// the bucket and the state's expiry could saturate before its reset.)
type TokenBucket struct {
	Interval int64 // ns per token
	Capacity int64 // tokens in a full bucket
}

// MaxRefill is the longest time, in nanoseconds, that a token bucket may
// take to fill from empty, or a leaky bucket's queue to drain from full:
// Capacity × Interval is at most 2^62 ns, about 146 years. A state then
// ends at most that long after now, which int64 nanoseconds hold for any
// now before the year 2116, so that a state's reset after (ResetAfter) and
// the instant it expires always agree.
const MaxRefill = 1 << 62

// RefillFits reports whether a bucket of capacity units, one every
// interval nanoseconds (both ≥ 1), fills within MaxRefill.
func RefillFits(capacity, interval int64) bool {
	return capacity >= 1 && interval >= 1 && capacity <= MaxRefill/interval
}

// TokenState is a bucket's whole state: its theoretical arrival time (TAT),
// the instant at which the bucket is full again. A TAT at or before now is a
// full bucket, which is the same as no state at all, so the zero value is a
// full bucket and a state expires exactly at its TAT.
type TokenState struct {
	TAT int64
}

// Take spends n tokens at now and returns the decision and the new state.
//
//   - n > 0 is admitted iff at least n tokens are there; a denial changes
//     nothing and RetryAfter is the wait until n tokens are there, or
//     NeverNS if n > Capacity.
//   - n = 0 is a peek: the state is returned unchanged.
//   - n < 0 refunds -n tokens, never beyond a full bucket.
//
// If the clock went backwards, or the capacity shrank since the state was
// written, the bucket counts as empty rather than deeper than empty, so a
// state can never lock a key out for longer than one full refill.
//
// Take is pure: it reads no clock and is deterministic, so a Raft FSM can
// replay it.
func (b TokenBucket) Take(s TokenState, now, n int64) (Result, TokenState) {
	tau := mulSat(b.Capacity, b.Interval) // time to refill an empty bucket
	used := usedTime(s.TAT, now, tau)

	r := Result{Allowed: true, Limit: b.Capacity}
	switch {
	case n == 0:
		// peek: nothing changes
	case n < 0:
		refund := refundTime(n, b.Interval)
		if refund >= used {
			used = 0
		} else {
			used -= refund
		}
	case n > b.Capacity:
		r.Allowed, r.RetryAfter = false, NeverNS
	default:
		cost := mulSat(n, b.Interval) // n ≤ Capacity, so cost ≤ tau
		if used <= tau-cost {
			used += cost
		} else {
			r.Allowed, r.RetryAfter = false, used-(tau-cost)
		}
	}
	r.Remaining = (tau - used) / b.Interval
	r.ResetAfter = used
	return r, TokenState{TAT: addSat(now, used)}
}

// usedTime is how far a bucket with theoretical arrival time tat is from full
// at now, clamped to [0, tau]: 0 is full, tau is empty.
func usedTime(tat, now, tau int64) int64 {
	if tat <= now {
		return 0
	}
	d := tat - now
	if d < 0 || d > tau { // d < 0: tat - now overflowed, so it is huge
		return tau
	}
	return d
}

// refundTime is the time worth of -n units (n < 0), saturated.
func refundTime(n, interval int64) int64 {
	if n == -n { // MinInt64
		return mulSat(-(n + 1), interval)
	}
	return mulSat(-n, interval)
}
