package algorithms

// A take (RL.TAKE) hands a holder a stock of units to spend without asking
// again: the largest amount in [lo, hi] that the state holds now, debited
// at once. A token bucket's units stay good until spent (a bucket never
// holds more than it refilled), so a holder may spend them at any later
// instant and give back what is left with a refund (n < 0). A fixed
// window's units are good only until the window they were counted in ends:
// spent in the next window they would come on top of that window's own
// limit. The other algorithms cannot be leased: a leaky bucket's admission
// carries the wait before the work may start, which a holder spending
// later cannot honour; a sliding window or log counts each unit at the
// instant it is admitted, so units taken ahead would be counted at the
// wrong instant and a refund could not take them back exactly; a
// concurrency limit's slots are held by name, and a throttle's reply is
// the wait itself.

// ErrNotLeasable is the text of a keyspace's refusal of a take on an
// algorithm that cannot be leased (a reply error without a code: ERR).
const ErrNotLeasable = "only token buckets (TOKEN) and fixed windows (FIXED) can be taken ahead (RL.TAKE)"

// Leasable reports whether a can be taken ahead (Request.Min > 0).
func Leasable(a Algo) bool { return a == Token || a == Fixed }

// grant is the amount a take of [lo, hi] asks the algorithm for, given
// what the state holds (avail): all of it up to hi, or lo, which the
// algorithm then denies, when less than lo is there. An hi below lo
// counts as lo.
func grant(avail, lo, hi int64) int64 {
	if avail < lo {
		return lo
	}
	return min(avail, max(hi, lo))
}

// TakeUpTo takes the largest g in [lo, hi] (1 ≤ lo ≤ hi) that the bucket
// holds at now: admitted with Granted = g, the state debited as Take(g)
// debits it; or, when fewer than lo tokens are there, denied exactly as
// Take(lo) is (RetryAfter the wait for lo tokens, NeverNS if lo exceeds the
// capacity), with nothing changed. Pure, like Take.
func (b TokenBucket) TakeUpTo(s TokenState, now, lo, hi int64) (Result, TokenState) {
	peek, _ := b.Take(s, now, 0)
	g := grant(peek.Remaining, lo, hi)
	r, next := b.Take(s, now, g)
	if r.Allowed {
		r.Granted = g
	}
	return r, next
}

// TakeUpTo takes the largest g in [lo, hi] (1 ≤ lo ≤ hi) that the window
// holding now has left: admitted with Granted = g, counted as Take(g)
// counts it; or denied exactly as Take(lo) is, with nothing changed. The
// units are good until the window ends, ResetAfter from now. Pure, like
// Take.
func (w FixedWindow) TakeUpTo(s FixedState, now, lo, hi int64) (Result, FixedState) {
	peek, _ := w.Take(s, now, 0)
	g := grant(peek.Remaining, lo, hi)
	r, next := w.Take(s, now, g)
	if r.Allowed {
		r.Granted = g
	}
	return r, next
}
