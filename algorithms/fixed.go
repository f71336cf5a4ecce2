package algorithms

// FixedWindow is a fixed window counter: at most Limit units per window,
// windows starting at multiples of Window nanoseconds since the Unix epoch
// (a one-minute window resets on the minute, for every key at once).
//
// The zero value is not valid; the edge validates Limit ≥ 1 and Window ≥ 1.
type FixedWindow struct {
	Limit  int64 // units per window
	Window int64 // ns
}

// FixedState is a counter's whole state: the start of the window it counts
// and the units admitted in it. A count of 0, or a window that has ended, is
// the same as no state; the zero value is that.
type FixedState struct {
	Start int64
	Count int64
}

// Take counts n units at now in the window holding now.
//
//   - n > 0 is admitted iff count + n ≤ Limit. A denial changes nothing;
//     RetryAfter is the time to the window's end, or NeverNS if n > Limit.
//   - n = 0 is a peek: nothing changes.
//   - n < 0 lowers the count by -n, not below 0.
//
// Remaining is Limit − count (0 if the limit shrank below the count) and
// ResetAfter the time to the window's end, or 0 when the count is 0 (the
// state is absent). A state from a later window (the clock went backwards)
// is counted in the current window, never dropped.
//
// Take is pure: it reads no clock and is deterministic.
func (w FixedWindow) Take(s FixedState, now, n int64) (Result, FixedState) {
	start := windowStart(now, w.Window)
	end := addSat(start, w.Window)
	count := int64(0)
	if s.Count > 0 && s.Start >= start {
		count = s.Count
	}
	r := Result{Allowed: true, Limit: w.Limit}
	switch {
	case n == 0:
	case n < 0:
		count -= min(count, negSat(n))
	case n > w.Limit:
		r.Allowed, r.RetryAfter = false, NeverNS
	case count <= w.Limit-n:
		count += n
	default:
		r.Allowed, r.RetryAfter = false, end-now
	}
	r.Remaining = max(w.Limit-count, 0)
	if count > 0 {
		r.ResetAfter = end - now
	}
	return r, FixedState{Start: start, Count: count}
}
