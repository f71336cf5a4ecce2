package algorithms

// SlidingWindow is a sliding window counter (the approximation Cloudflare
// describes): windows are aligned to multiples of Window since the Unix
// epoch, and at elapsed time e into the current window the estimate of the
// units in the last Window nanoseconds is
//
//	current + floor(previous × (Window − e) / Window)
//
// in exact integer arithmetic (128-bit products, no floats).
//
// The zero value is not valid; the edge validates Limit ≥ 1 and Window ≥ 1.
type SlidingWindow struct {
	Limit  int64 // units per window
	Window int64 // ns
}

// SlidingState is a counter's whole state: the start of its current window
// and the units admitted in it and in the window before. Zero counts are
// the same as no state; the zero value is that.
type SlidingState struct {
	Start    int64
	Current  int64
	Previous int64
}

// Take counts n units at now.
//
//   - n > 0 is admitted iff estimate + n ≤ Limit. A denial changes nothing;
//     RetryAfter is the earliest instant the same request fits if nothing
//     else arrives (it may lie inside the current window, as the previous
//     window's weight decays), or NeverNS if n > Limit.
//   - n = 0 is a peek: nothing changes.
//   - n < 0 lowers the current window's count by -n, not below 0.
//
// Remaining is Limit − estimate after the call (0 at worst). ResetAfter is
// the time until both counts have left: the end of the next window while
// the current count is above 0, else the end of the current window while
// the previous count is, else 0. (Because of the floor, the estimate can
// reach 0 a little earlier.) A state from a later window (the clock went
// backwards) is counted as the current one, never dropped.
//
// Take is pure: it reads no clock and is deterministic.
func (w SlidingWindow) Take(s SlidingState, now, n int64) (Result, SlidingState) {
	start := windowStart(now, w.Window)
	cur, prev := w.roll(s, start)
	weighted := mulDivFloor(prev, w.Window-(now-start), w.Window)
	estimate := addSat(cur, weighted)
	r := Result{Allowed: true, Limit: w.Limit}
	switch {
	case n == 0:
	case n < 0:
		cur -= min(cur, negSat(n))
	case n > w.Limit:
		r.Allowed, r.RetryAfter = false, NeverNS
	case estimate <= w.Limit-n:
		cur += n
	default:
		r.Allowed, r.RetryAfter = false, w.retry(cur, prev, start, now, n)
	}
	r.Remaining = max(w.Limit-addSat(cur, weighted), 0)
	switch {
	case cur > 0:
		r.ResetAfter = addSat(addSat(start, w.Window), w.Window) - now
	case prev > 0:
		r.ResetAfter = addSat(start, w.Window) - now
	}
	return r, SlidingState{Start: start, Current: cur, Previous: prev}
}

// roll returns the current and previous counts of s in the window that
// starts at start.
func (w SlidingWindow) roll(s SlidingState, start int64) (cur, prev int64) {
	switch {
	case s.Start >= start: // the same window, or a later one (clock went backwards)
		return s.Current, s.Previous
	case s.Start >= subSat(start, w.Window): // the window before
		return 0, s.Current
	default:
		return 0, 0
	}
}

// retry returns how long until n units fit, for a request denied at now with
// counts cur and prev in the window [start, start+Window). n ≤ Limit.
func (w SlidingWindow) retry(cur, prev, start, now, n int64) int64 {
	W := w.Window
	// Inside the current window: cur + floor(prev·(W−e)/W) ≤ Limit − n, that
	// is prev·(W−e) < (room+1)·W with room = Limit − n − cur.
	if room := w.Limit - n - cur; room >= 0 && prev > 0 {
		if d := largestBelow(room+1, W, prev, W); d > 0 {
			return addSat(start, W-d) - now // W−d > now−start, or it would have fitted
		}
	}
	// In the next window, where the current count becomes the previous one
	// and nothing is current: floor(cur·(W−e)/W) ≤ Limit − n.
	end := addSat(start, W)
	e := int64(0)
	if cur > 0 {
		e = W - largestBelow(w.Limit-n+1, W, cur, W)
	}
	return addSat(end, e) - now
}
