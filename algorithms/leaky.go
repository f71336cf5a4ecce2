package algorithms

// LeakyBucket is a leaky bucket as a queue (traffic shaping): admitted work
// joins a queue that drains one unit every Interval nanoseconds, and the
// queue holds at most Capacity units. Instead of only admitting or denying,
// it tells each admitted caller how long to wait before acting, so that
// admitted work leaves at exactly the rate.
//
// The zero value is not a valid bucket; the edge validates Interval ≥ 1,
// Capacity ≥ 1 and RefillFits, as for TokenBucket.
type LeakyBucket struct {
	Interval int64 // ns per unit
	Capacity int64 // units the queue holds
}

// LeakyState is a queue's whole state: the instant its last unit leaves
// (the queue is empty from then on). A TAT at or before now is an empty
// queue, which is the same as no state, so the zero value is an empty queue
// and a state expires exactly at its TAT.
type LeakyState struct {
	TAT int64
}

// Take queues n units at now. With start = max(TAT, now):
//
//   - n > 0 is admitted iff (start − now) + n·Interval ≤ Capacity·Interval;
//     the new TAT is start + n·Interval and RetryAfter is start − now, the
//     wait before the caller may act (0 on an empty queue, Interval for the
//     next unit, …). A denial changes nothing; RetryAfter is the time until
//     the request would fit, or NeverNS if n > Capacity.
//   - n = 0 is a peek: nothing changes; RetryAfter is the current wait.
//   - n < 0 takes -n units out of the queue, never below empty;
//     RetryAfter is 0.
//
// Remaining is the units that still fit (floor) and ResetAfter is TAT − now,
// when the queue is empty. If the clock went backwards, or the capacity
// shrank, the queue counts as full rather than fuller than full.
//
// Take is pure: it reads no clock and is deterministic.
func (b LeakyBucket) Take(s LeakyState, now, n int64) (Result, LeakyState) {
	tau := mulSat(b.Capacity, b.Interval) // the longest the queue can be
	wait := usedTime(s.TAT, now, tau)     // start − now
	r := Result{Allowed: true, Limit: b.Capacity}
	switch {
	case n == 0:
		r.RetryAfter = wait
	case n < 0:
		if refund := refundTime(n, b.Interval); refund >= wait {
			wait = 0
		} else {
			wait -= refund
		}
	case n > b.Capacity:
		r.Allowed, r.RetryAfter = false, NeverNS
	default:
		cost := mulSat(n, b.Interval) // n ≤ Capacity, so cost ≤ tau
		if wait <= tau-cost {
			r.RetryAfter = wait
			wait += cost
		} else {
			r.Allowed, r.RetryAfter = false, wait-(tau-cost)
		}
	}
	r.Remaining = (tau - wait) / b.Interval
	r.ResetAfter = wait
	return r, LeakyState{TAT: addSat(now, wait)}
}
