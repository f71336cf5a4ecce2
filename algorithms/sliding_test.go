package algorithms

import (
	"math"
	"testing"
	"time"
)

func TestSlidingEstimateDecays(t *testing.T) {
	// limit 10 per minute; t0 is on the minute.
	m := time.Minute
	runScript(t, &slidingLimiter{w: SlidingWindow{Limit: 10, Window: int64(m)}}, []step{
		{0, 10, ok(10, 0, 2*m)}, // reset: the end of the next window
		// At the next window's first instant the previous still weighs 10.
		{59 * sec, 1, no(10, 0, m-59*sec+1, 2*m-59*sec)},
		{m, 1, no(10, 0, 1, m)},            // only previous: reset at this window's end
		{m + 1, 1, ok(10, 0, 2*m-1)},       // 1 + floor(10·(60s−1ns)/60s) = 1 + 9
		{m + 30*sec, 0, ok(10, 4, 90*sec)}, // 1 + floor(10·30/60) = 6
		{m + 30*sec, 4, ok(10, 0, 90*sec)}, // exactly to the limit
		// 5 + floor(10·(W−e)/W) ≤ 9 needs W−e < 30s.
		{m + 30*sec, 1, no(10, 0, 1, 90*sec)},
		{m + 36*sec, 1, ok(10, 0, 84*sec)}, // 5 + floor(10·24/60) = 9, +1
		{2*m + 59*sec, 0, ok(10, 10, sec)}, // previous 6 weighs floor(6·1s/60s) = 0 but is kept until 3m
		{3 * m, 0, ok(10, 10, 0)},          // both windows gone: absent
		{3*m + 1, -1, ok(10, 10, 0)},       // a refund on nothing
	})
}

func TestSlidingRetryInTheNextWindow(t *testing.T) {
	m := time.Minute
	// limit 4: current 3 at 50s. n = 3 cannot fit in this window (3+3 > 4),
	// and in the next one floor(3·(60s−e)/60s) ≤ 1 needs 3·(60s−e) < 120s:
	// e > 20s.
	runScript(t, &slidingLimiter{w: SlidingWindow{Limit: 4, Window: int64(m)}}, []step{
		{50 * sec, 3, ok(4, 1, 70*sec)},
		{50 * sec, 3, no(4, 1, 10*sec+20*sec+1, 70*sec)},
		{m + 20*sec, 3, no(4, 2, 1, 40*sec)}, // estimate floor(3·40/60) = 2
		{m + 20*sec + 1, 3, ok(4, 0, 2*m-20*sec-1)},
		{2*m + 40*sec, 5, no(4, 3, -1, 20*sec)}, // n > limit never fits; previous 3 weighs 1
	})
}

func TestSlidingRefundAndPeek(t *testing.T) {
	runScript(t, &slidingLimiter{w: SlidingWindow{Limit: 5, Window: int64(sec)}}, []step{
		{0, 0, ok(5, 5, 0)},
		{0, -1, ok(5, 5, 0)},
		{0, 5, ok(5, 0, 2*sec)},
		{sec, -2, ok(5, 0, sec)}, // a refund lowers the current count only, which is 0
		{sec + 500*ms, 2, ok(5, 1, 1500*ms)},
		{sec + 500*ms, -1, ok(5, 2, 1500*ms)},
		{sec + 500*ms, math.MinInt64, ok(5, 3, 500*ms)}, // current 0; previous 5 weighs 2 until the window ends
	})
}

func TestSlidingOverflowSizedParameters(t *testing.T) {
	w := SlidingWindow{Limit: math.MaxInt64, Window: math.MaxInt64}
	r, s := w.Take(SlidingState{}, t0, math.MaxInt64)
	if !r.Allowed || r.Remaining != 0 || r.ResetAfter != math.MaxInt64-t0 {
		t.Fatalf("Take(MaxInt64) = %s", fmtResult(r))
	}
	if r, _ := w.Take(s, t0+1, 1); r.Allowed || r.RetryAfter <= 0 {
		t.Fatalf("one more = %s; want denied with a positive retry", fmtResult(r))
	}
	// Huge counts in both windows: 128-bit products, no wrap.
	w = SlidingWindow{Limit: math.MaxInt64, Window: int64(time.Hour)}
	s = SlidingState{Start: t0 - int64(time.Hour), Current: math.MaxInt64 - 1}
	r, _ = w.Take(s, t0+int64(30*time.Minute), 1)
	if !r.Allowed || r.Remaining != math.MaxInt64-(math.MaxInt64-1)/2-1 {
		t.Fatalf("huge previous = %s", fmtResult(r))
	}
	r, _ = w.Take(s, t0+int64(30*time.Minute), math.MaxInt64)
	if r.Allowed || r.RetryAfter <= 0 {
		t.Fatalf("huge previous, huge n = %s", fmtResult(r))
	}
}

func TestSlidingClockGoingBackwardsKeepsTheCounts(t *testing.T) {
	w := SlidingWindow{Limit: 2, Window: int64(sec)}
	_, s := w.Take(SlidingState{}, t0, 2)
	if r, _ := w.Take(s, t0-int64(10*sec), 1); r.Allowed {
		t.Fatalf("Take(t0-10s) = %s; want denied", fmtResult(r))
	}
}

func BenchmarkSlidingTake(b *testing.B) {
	w := SlidingWindow{Limit: 1 << 40, Window: int64(time.Minute)}
	var s SlidingState
	now := t0
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		now += int64(ms)
		_, s = w.Take(s, now, 1)
	}
}
