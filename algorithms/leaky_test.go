package algorithms

import (
	"math"
	"testing"
	"time"
)

// wait is an admitted leaky reply: the caller waits retry before acting.
func wait(limit, remaining int64, retry, reset time.Duration) Result {
	return Result{Allowed: true, Limit: limit, Remaining: remaining, RetryAfter: int64(retry), ResetAfter: int64(reset)}
}

const sec = time.Second

// TestLeakyQueuesFourCallsAtOneInstant: 1/s, capacity 3, four calls at
// one instant: three are queued one second apart, the fourth is denied.
func TestLeakyQueuesFourCallsAtOneInstant(t *testing.T) {
	// 1/s, capacity 3, four calls at one instant:
	// [1,3,2,0,1000] [1,3,1,1000,2000] [1,3,0,2000,3000] [0,3,0,1000,3000]
	runScript(t, &leakyLimiter{b: LeakyBucket{Interval: int64(sec), Capacity: 3}}, []step{
		{0, 1, wait(3, 2, 0, 1*sec)},
		{0, 1, wait(3, 1, 1*sec, 2*sec)},
		{0, 1, wait(3, 0, 2*sec, 3*sec)},
		{0, 1, no(3, 0, 1*sec, 3*sec)},
	})
}

func TestLeakyDrainsAtTheRate(t *testing.T) {
	runScript(t, &leakyLimiter{b: LeakyBucket{Interval: int64(100 * ms), Capacity: 2}}, []step{
		{0, 2, wait(2, 0, 0, 200*ms)},
		{50 * ms, 1, no(2, 0, 50*ms, 150*ms)},        // one unit's room comes back at 100ms
		{100*ms - 1, 1, no(2, 0, 1, 100*ms+1)},       // one nanosecond early: denied
		{100 * ms, 1, wait(2, 0, 100*ms, 200*ms)},    // exactly on time: queued behind one unit
		{150 * ms, 0, wait(2, 0, 150*ms, 150*ms)},    // peek: the wait a new unit would have
		{300 * ms, 0, wait(2, 2, 0, 0)},              // empty again
		{300*ms + 1, 2, wait(2, 0, 0, 200*ms)},       // a full burst again, nothing more
		{450 * ms, 1, wait(2, 0, 50*ms+1, 150*ms+1)}, // 1ns past a whole ms
	})
}

func TestLeakyRefundAndPeek(t *testing.T) {
	runScript(t, &leakyLimiter{b: LeakyBucket{Interval: int64(sec), Capacity: 5}}, []step{
		{0, 0, wait(5, 5, 0, 0)}, // peek on nothing: an empty queue, no state
		{0, 4, wait(5, 1, 0, 4*sec)},
		{0, -1, wait(5, 2, 0, 3*sec)},
		{0, -100, wait(5, 5, 0, 0)}, // never below empty
		{0, math.MinInt64, wait(5, 5, 0, 0)},
		{0, 6, no(5, 5, -1, 0)}, // n > capacity can never fit
		{0, 5, wait(5, 0, 0, 5*sec)},
	})
}

func TestLeakyHugeAndTinyRates(t *testing.T) {
	// A billion units a second, a billion deep.
	fast := &leakyLimiter{b: LeakyBucket{Interval: 1, Capacity: 1_000_000_000}}
	runScript(t, fast, []step{
		{0, 1_000_000_000, wait(1_000_000_000, 0, 0, sec)},
		{500 * ms, 1, wait(1_000_000_000, 499_999_999, 500*ms, 500*ms+1)},
	})
	// A century per unit and a capacity whose product saturates.
	slow := LeakyBucket{Interval: int64(100 * 365 * 24 * time.Hour), Capacity: math.MaxInt64}
	r, s := slow.Take(LeakyState{}, t0, 2)
	if !r.Allowed || r.RetryAfter != 0 || r.ResetAfter != 2*slow.Interval || s.TAT != t0+2*slow.Interval {
		t.Fatalf("slow.Take(t0, 2) = %s", fmtResult(r))
	}
	r, _ = slow.Take(s, t0, math.MaxInt64)
	if r.Allowed || r.RetryAfter <= 0 {
		t.Fatalf("slow.Take(t0, MaxInt64) = %s; want denied with a positive retry", fmtResult(r))
	}
	// Near the end of time the TAT saturates instead of wrapping.
	r, s = slow.Take(LeakyState{}, math.MaxInt64-5, 1)
	if !r.Allowed || s.TAT != math.MaxInt64 {
		t.Fatalf("near MaxInt64: %s, TAT %d", fmtResult(r), s.TAT)
	}
}

func TestLeakyClockGoingBackwards(t *testing.T) {
	b := LeakyBucket{Interval: int64(sec), Capacity: 3}
	_, s := b.Take(LeakyState{}, t0, 3)
	back := t0 - int64(time.Hour)
	r, _ := b.Take(s, back, 1)
	if r != no(3, 0, sec, 3*sec) { // full, not fuller than full
		t.Fatalf("Take(t0-1h) = %s; want denied, retry 1s, reset 3s", fmtResult(r))
	}
}

func BenchmarkLeakyTake(b *testing.B) {
	lb := LeakyBucket{Interval: int64(100 * ms), Capacity: 100}
	var s LeakyState
	now := t0
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		now += int64(ms)
		_, s = lb.Take(s, now, 1)
	}
}
