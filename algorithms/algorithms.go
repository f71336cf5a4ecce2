package algorithms

import "math"

// Algo names the algorithm a key's state belongs to. The zero value is None:
// no state.
type Algo uint8

const (
	None Algo = iota
	Token
)

// String returns the name TYPE and RL.INFO report for a key holding this kind
// of state.
func (a Algo) String() string {
	switch a {
	case Token:
		return "rl-token"
	default:
		return "none"
	}
}

// Result is the outcome of one decision. Durations are nanoseconds; the edge
// converts them to the reply's units and rounding.
type Result struct {
	Allowed bool
	// Limit is the capacity: tokens in a full bucket, requests per window.
	Limit int64
	// Remaining is what is left after this call (floor).
	Remaining int64
	// RetryAfter is, when denied, the time until the same request would be
	// admitted, or -1 if it never can. When admitted it is 0.
	RetryAfter int64
	// ResetAfter is the time until the key is back to its initial state.
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
