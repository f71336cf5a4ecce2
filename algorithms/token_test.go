package algorithms

import (
	"fmt"
	"math"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC).UnixNano()

// usedState is the state a peek must hand back: the same point in time.
func usedState(s TokenState, now int64, b TokenBucket) TokenState {
	return TokenState{TAT: now + usedTime(s.TAT, now, mulSat(b.Capacity, b.Interval))}
}

func fmtResult(r Result) string {
	verdict := "denied"
	if r.Allowed {
		verdict = "admitted"
	}
	return fmt.Sprintf("%s (remaining %d/%d, retry %v, reset %v)", verdict, r.Remaining, r.Limit,
		time.Duration(r.RetryAfter), time.Duration(r.ResetAfter))
}

func ok(limit, remaining int64, reset time.Duration) Result {
	return Result{Allowed: true, Limit: limit, Remaining: remaining, ResetAfter: int64(reset)}
}

func no(limit, remaining int64, retry, reset time.Duration) Result {
	return Result{Limit: limit, Remaining: remaining, RetryAfter: int64(retry), ResetAfter: int64(reset)}
}

const ms = time.Millisecond

func TestTokenFullThenDrainThenExactRetry(t *testing.T) {
	b := TokenBucket{Interval: int64(100 * ms), Capacity: 3} // 10/s, burst 3
	runScript(t, &tokenLimiter{b: b}, []step{
		{0, 1, ok(3, 2, 100*ms)},
		{0, 1, ok(3, 1, 200*ms)},
		{0, 1, ok(3, 0, 300*ms)},
		{0, 1, no(3, 0, 100*ms, 300*ms)},
		{99 * ms, 1, no(3, 0, 1*ms, 201*ms)},
		{100 * ms, 1, ok(3, 0, 300*ms)}, // exactly at retry_after: admitted, never early
		{100*ms + 1, 1, no(3, 0, 100*ms-1, 300*ms-1)},
	})
}

func TestTokenPartialRefill(t *testing.T) {
	b := TokenBucket{Interval: int64(100 * ms), Capacity: 10}
	runScript(t, &tokenLimiter{b: b}, []step{
		{0, 10, ok(10, 0, 1000*ms)},
		{250 * ms, 0, ok(10, 2, 750*ms)},        // 2.5 tokens back: floor
		{250 * ms, 3, no(10, 2, 50*ms, 750*ms)}, // the third arrives at 300ms
		{300 * ms, 3, ok(10, 0, 1000*ms)},
		{1300 * ms, 0, ok(10, 10, 0)},           // full again
		{5 * time.Second, 1, ok(10, 9, 100*ms)}, // idle time does not bank beyond capacity
	})
}

func TestTokenCostAboveCapacityNeverFits(t *testing.T) {
	b := TokenBucket{Interval: int64(time.Second), Capacity: 5}
	runScript(t, &tokenLimiter{b: b}, []step{
		{0, 6, no(5, 5, -1, 0)},
		{0, 5, ok(5, 0, 5*time.Second)},
		{time.Hour, 6, no(5, 5, -1, 0)},
	})
}

func TestTokenRefund(t *testing.T) {
	b := TokenBucket{Interval: int64(time.Second), Capacity: 5}
	runScript(t, &tokenLimiter{b: b}, []step{
		{0, 4, ok(5, 1, 4*time.Second)},
		{0, -2, ok(5, 3, 2*time.Second)},
		{0, -100, ok(5, 5, 0)}, // never above the initial state
		{0, math.MinInt64, ok(5, 5, 0)},
		{0, 5, ok(5, 0, 5*time.Second)},
	})
}

func TestTokenPeekWritesNothing(t *testing.T) {
	b := TokenBucket{Interval: int64(time.Second), Capacity: 2}
	var s TokenState
	r, next := b.Take(s, t0, 0)
	if r != ok(2, 2, 0) || next.TAT > t0 {
		t.Fatalf("Take(t0, n=0) on an absent key = %s, TAT %d; want admitted 2/2 and no state", fmtResult(r), next.TAT)
	}
}

func TestTokenHugeAndTinyRatesDoNotOverflow(t *testing.T) {
	// 1 ns per token, a billion tokens.
	fast := TokenBucket{Interval: 1, Capacity: 1_000_000_000}
	runScript(t, &tokenLimiter{b: fast}, []step{
		{0, 1_000_000_000, ok(1_000_000_000, 0, time.Second)},
		{500 * ms, 0, ok(1_000_000_000, 500_000_000, 500*ms)},
	})
	// One token a century with a capacity that saturates capacity×interval.
	slow := TokenBucket{Interval: int64(100 * 365 * 24 * time.Hour), Capacity: math.MaxInt64}
	r, s := slow.Take(TokenState{}, t0, 1)
	if !r.Allowed || r.Remaining <= 0 || r.ResetAfter != slow.Interval || s.TAT != t0+slow.Interval {
		t.Fatalf("slow.Take(t0, 1) = %s; want admitted with a century to reset", fmtResult(r))
	}
	r, _ = slow.Take(s, t0, math.MaxInt64)
	if r.Allowed || r.RetryAfter <= 0 {
		t.Fatalf("slow.Take(t0, MaxInt64) = %s; want denied with a positive retry", fmtResult(r))
	}
	// A state far in the future (another node's clock) with now near the end of time.
	r, _ = slow.Take(TokenState{TAT: math.MaxInt64}, math.MaxInt64-5, 1)
	if r.Allowed == false && r.RetryAfter < 0 {
		t.Fatalf("near MaxInt64: %s", fmtResult(r))
	}
}

func TestTokenClockGoingBackwards(t *testing.T) {
	b := TokenBucket{Interval: int64(time.Second), Capacity: 3}
	_, s := b.Take(TokenState{}, t0, 3) // empty at t0, full at t0+3s
	// The clock jumps back an hour: the bucket is empty, not deeper than empty.
	back := t0 - int64(time.Hour)
	r, s2 := b.Take(s, back, 1)
	if r != no(3, 0, time.Second, 3*time.Second) {
		t.Fatalf("Take(t0-1h, n=1) = %s; want denied, retry 1s, reset 3s", fmtResult(r))
	}
	if s2.TAT != back+int64(3*time.Second) {
		t.Fatalf("state after a backward jump: TAT = t0%+d; want back+3s", s2.TAT-t0)
	}
	// Capacity shrinks from 3 to 1: same clamp.
	small := TokenBucket{Interval: int64(time.Second), Capacity: 1}
	if r, _ := small.Take(s, t0, 0); r != ok(1, 0, time.Second) {
		t.Fatalf("after a capacity shrink: %s; want 0/1 remaining, reset 1s", fmtResult(r))
	}
}

func TestTokenFirstCallMatchesReadme(t *testing.T) {
	// redis-cli RL.TOKEN user:42 10/s 20 → 1 20 19 0 100
	b := TokenBucket{Interval: int64(100 * ms), Capacity: 20}
	r, _ := b.Take(TokenState{}, t0, 1)
	if r != ok(20, 19, 100*ms) {
		t.Fatalf("Take(t0, 1) = %s; want admitted 19/20, reset 100ms", fmtResult(r))
	}
}

// TestTokenNeverAdmitsMoreThanPromised replays random (Δt, n) sequences and
// checks that in every interval the admitted units stay within
// capacity + elapsed/interval.
func TestTokenNeverAdmitsMoreThanPromised(t *testing.T) {
	rng := newRand(1)
	for trial := 0; trial < 200; trial++ {
		b := TokenBucket{Interval: 1 + rng.int63n(int64(50*ms)), Capacity: 1 + rng.int63n(20)}
		type admit struct{ at, n int64 }
		var log []admit
		var s TokenState
		now := t0
		for i := 0; i < 300; i++ {
			now += rng.int63n(b.Interval * 2)
			n := rng.int63n(b.Capacity + 2)
			r, next := b.Take(s, now, n)
			if r.Allowed && n > 0 {
				log = append(log, admit{now, n})
			}
			s = next
		}
		for i := range log {
			var sum int64
			for j := i; j < len(log); j++ {
				sum += log[j].n
				elapsed := log[j].at - log[i].at
				if max := b.Capacity + elapsed/b.Interval; sum > max {
					t.Fatalf("trial %d: admitted %d units in %v; promised at most %d", trial, sum, time.Duration(elapsed), max)
				}
			}
		}
	}
}

// rand is a tiny deterministic generator so scripts replay exactly.
type rand struct{ x uint64 }

func newRand(seed uint64) *rand { return &rand{x: seed*0x9E3779B97F4A7C15 + 1} }

func (r *rand) int63n(n int64) int64 {
	r.x ^= r.x << 13
	r.x ^= r.x >> 7
	r.x ^= r.x << 17
	return int64(r.x>>1) % n
}

func BenchmarkTokenTake(b *testing.B) {
	tb := TokenBucket{Interval: int64(100 * ms), Capacity: 100}
	var s TokenState
	now := t0
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		now += int64(ms)
		_, s = tb.Take(s, now, 1)
	}
}
