package algorithms

import (
	"math"
	"math/bits"
)

// Algo names the algorithm a key's state belongs to. The zero value is None:
// no state. The values are stored (snapshots, the Raft log): new algorithms
// are added at the end and existing values never change.
type Algo uint8

const (
	None        Algo = iota
	Token            // RL.TOKEN: TokenBucket
	Leaky            // RL.LEAKY: LeakyBucket
	Fixed            // RL.FIXED: FixedWindow
	Sliding          // RL.SLIDING: SlidingWindow
	Log              // RL.LOG: SlidingLog
	Concurrency      // RL.ACQUIRE, RL.RELEASE: Concurrency
	Throttle         // CL.THROTTLE: CellThrottle (redis-cell's GCRA)
	String           // a string a known limiter script or a plain string command wrote (package compat)
	Override         // a subject's override of a named policy (RL.OVERRIDE; see override.go)
	List             // a list of numbers a known limiter script wrote (package compat: Python limits' moving window)
)

// String returns the name TYPE and RL.INFO report for a key holding this kind
// of state.
func (a Algo) String() string {
	switch a {
	case Token:
		return "rl-token"
	case Leaky:
		return "rl-leaky"
	case Fixed:
		return "rl-fixed"
	case Sliding:
		return "rl-sliding"
	case Log:
		return "rl-log"
	case Concurrency:
		return "rl-concurrency"
	case Throttle:
		return "cl-throttle"
	case String:
		return "string"
	case Override:
		return "rl-override"
	case List:
		return "list"
	default:
		return "none"
	}
}

// Result is the outcome of one decision. Durations are nanoseconds; the edge
// converts them to the reply's units and rounding.
type Result struct {
	Allowed bool
	// Override is set by a keyspace when a subject's override (RL.OVERRIDE)
	// decided instead of the request's limit; OverrideNone otherwise. It
	// sits in Allowed's padding: a Result is no larger for it.
	Override OverrideKind
	// Limit is the capacity: tokens in a full bucket, requests per window.
	Limit int64
	// Remaining is what is left after this call (floor).
	Remaining int64
	// RetryAfter is, when denied, the time until the same request would be
	// admitted, or -1 if it never can. When admitted it is 0, except for a
	// leaky bucket, where it is the wait before the admitted work may start.
	RetryAfter int64
	// Granted is, for a take (Request.Min > 0, RL.TAKE), the amount taken
	// when admitted, and 0 otherwise; every other request leaves it 0.
	Granted int64
	// ResetAfter is the time until the key is back to its initial state:
	// the new state equals "absent" from now+ResetAfter on, which is when a
	// keyspace lets it expire. 0 means the state is absent already.
	ResetAfter int64
}

// NeverNS is RetryAfter's value for a request that can never be admitted.
const NeverNS = -1

// addSat returns a+b, saturated to the int64 range.
func addSat(a, b int64) int64 {
	c := a + b
	if (c > a) == (b > 0) {
		return c
	}
	if b > 0 {
		return math.MaxInt64
	}
	return math.MinInt64
}

// mulSat returns a*b for non-negative a and b, saturated to MaxInt64.
func mulSat(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

// subSat returns a-b for b ≥ 0, saturated to MinInt64.
func subSat(a, b int64) int64 {
	if a < math.MinInt64+b {
		return math.MinInt64
	}
	return a - b
}

// negSat returns -n for n < 0, with -MinInt64 saturated to MaxInt64: the
// amount a refund of n gives back.
func negSat(n int64) int64 {
	if n == math.MinInt64 {
		return math.MaxInt64
	}
	return -n
}

// windowStart returns the start of the window of length w (w ≥ 1) holding
// now, windows being aligned to multiples of w since the Unix epoch. It
// rounds down for instants before the epoch too.
func windowStart(now, w int64) int64 {
	r := now % w
	if r < 0 {
		r += w
	}
	return now - r // cannot overflow: 0 ≤ r ≤ |now| when now < 0 and r < w
}

// mulDivFloor returns floor(a·b/c) for a, b ≥ 0, c > 0 and b ≤ c, computed
// in 128 bits: the result is at most a, so it fits.
func mulDivFloor(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	q, _ := bits.Div64(hi, lo, uint64(c)) // hi < c because a·b ≤ a·c < 2^63·c
	return int64(q)
}

// largestBelow returns the largest d in [0, limit] with p·d < k·w, for
// k, w, p ≥ 1: the longest stretch of a decaying window (d) for which p units
// weigh less than k whole units. It is floor((k·w − 1)/p), capped at limit.
func largestBelow(k, w, p, limit int64) int64 {
	hi, lo := bits.Mul64(uint64(k), uint64(w))
	var borrow uint64
	lo, borrow = bits.Sub64(lo, 1, 0)
	hi -= borrow
	if hi >= uint64(p) { // the quotient needs more than 64 bits
		return limit
	}
	q, _ := bits.Div64(hi, lo, uint64(p))
	if q > uint64(limit) {
		return limit
	}
	return int64(q)
}
