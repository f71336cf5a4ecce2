package algorithms

import (
	"math"
	"testing"
	"time"
)

func TestFixedWindowEdges(t *testing.T) {
	// t0 is on the minute: the window is [t0, t0+1m).
	runScript(t, &fixedLimiter{w: FixedWindow{Limit: 3, Window: int64(time.Minute)}}, []step{
		{0, 1, ok(3, 2, time.Minute)},
		{30 * sec, 2, ok(3, 0, 30*sec)},
		{30 * sec, 1, no(3, 0, 30*sec, 30*sec)},
		{time.Minute - 1, 1, no(3, 0, 1, 1)},    // the window's last nanosecond
		{time.Minute, 3, ok(3, 0, time.Minute)}, // its end: a new window, a full limit
		{2*time.Minute - 1, 0, ok(3, 0, 1)},
		{2 * time.Minute, 0, ok(3, 3, 0)}, // ended: absent
	})
}

func TestFixedWindowsAreEpochAligned(t *testing.T) {
	// A call 10s before the minute gets a window that resets on the minute.
	w := FixedWindow{Limit: 10, Window: int64(time.Minute)}
	r, s := w.Take(FixedState{}, t0-int64(10*sec), 1)
	if r != ok(10, 9, 10*sec) || s.Start != t0-int64(time.Minute) {
		t.Fatalf("Take(t0-10s) = %s, start t0%+v; want reset 10s, start t0-1m", fmtResult(r), time.Duration(s.Start-t0))
	}
	// 1500ms windows are aligned to multiples of 1.5s since the epoch.
	w = FixedWindow{Limit: 1, Window: int64(1500 * ms)}
	at := int64(3000*ms) + 1 // 3s+1ns after the epoch: window [3s, 4.5s)
	if r, _ := w.Take(FixedState{}, at, 1); r.ResetAfter != int64(1500*ms)-1 {
		t.Fatalf("1500ms window at 3s+1ns: reset %v; want 1.5s-1ns", time.Duration(r.ResetAfter))
	}
	// Before the epoch, windows still start at multiples of the window.
	if got := windowStart(-1, int64(sec)); got != -int64(sec) {
		t.Fatalf("windowStart(-1ns, 1s) = %d; want -1s", got)
	}
}

func TestFixedRefundAndPeek(t *testing.T) {
	runScript(t, &fixedLimiter{w: FixedWindow{Limit: 5, Window: int64(sec)}}, []step{
		{0, 0, ok(5, 5, 0)},  // peek on nothing: no state
		{0, -3, ok(5, 5, 0)}, // a refund on nothing stays nothing
		{0, 4, ok(5, 1, sec)},
		{100 * ms, -2, ok(5, 3, 900*ms)},
		{100 * ms, math.MinInt64, ok(5, 5, 0)}, // not below 0, and 0 is absent
		{100 * ms, 6, no(5, 5, -1, 0)},         // n > limit never fits
		{100 * ms, 5, ok(5, 0, 900*ms)},
	})
}

func TestFixedOverflowSizedParameters(t *testing.T) {
	// The largest window: one window from before the epoch to the end of time.
	w := FixedWindow{Limit: math.MaxInt64, Window: math.MaxInt64}
	r, s := w.Take(FixedState{}, t0, math.MaxInt64)
	if !r.Allowed || r.Remaining != 0 || s.Count != math.MaxInt64 || r.ResetAfter != math.MaxInt64-t0 {
		t.Fatalf("Take(MaxInt64) = %s", fmtResult(r))
	}
	r, _ = w.Take(s, t0, 1)
	if r.Allowed || r.RetryAfter != math.MaxInt64-t0 {
		t.Fatalf("one more = %s; want denied until the end of time", fmtResult(r))
	}
	// The end of time itself: the window's end saturates.
	r, _ = FixedWindow{Limit: 1, Window: int64(time.Hour)}.Take(FixedState{}, math.MaxInt64-1, 1)
	if !r.Allowed || r.ResetAfter < 0 {
		t.Fatalf("near MaxInt64: %s", fmtResult(r))
	}
}

func TestFixedClockGoingBackwardsKeepsTheCount(t *testing.T) {
	w := FixedWindow{Limit: 2, Window: int64(sec)}
	_, s := w.Take(FixedState{}, t0, 2)
	r, _ := w.Take(s, t0-int64(5*sec), 1)
	if r.Allowed || r.Remaining != 0 {
		t.Fatalf("Take(t0-5s) after the limit was used at t0 = %s; want denied", fmtResult(r))
	}
	// A smaller limit than the count: remaining is 0, not negative.
	if r, _ := (FixedWindow{Limit: 1, Window: int64(sec)}).Take(s, t0, 0); r.Remaining != 0 {
		t.Fatalf("after a limit shrink: remaining %d; want 0", r.Remaining)
	}
}

func BenchmarkFixedTake(b *testing.B) {
	w := FixedWindow{Limit: 1 << 40, Window: int64(time.Minute)}
	var s FixedState
	now := t0
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		now += int64(ms)
		_, s = w.Take(s, now, 1)
	}
}
