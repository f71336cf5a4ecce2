package algorithms

import (
	"math"
	"testing"
	"time"
)

// TestThrottleRedisCellSequence is redis-cell's own unit test
// (it_rate_limits): max_burst 4, 1 per second, a fixed clock, durations
// before rounding to seconds.
func TestThrottleRedisCellSequence(t *testing.T) {
	l := &throttleLimiter{c: CellThrottle{Interval: int64(sec), Limit: 5}}
	runScript(t, l, []step{
		{0, 6, no(5, 5, -1, 0)}, // you can never make a request larger than the maximum
		{0, 1, ok(5, 4, 1*sec)},
		{0, 1, ok(5, 3, 2*sec)},
		{0, 1, ok(5, 2, 3*sec)},
		{0, 1, ok(5, 1, 4*sec)},
		{0, 1, ok(5, 0, 5*sec)},
		{0, 1, no(5, 0, 1*sec, 5*sec)},
		{3000 * ms, 1, ok(5, 2, 3000*ms)},
		{3100 * ms, 1, ok(5, 1, 3900*ms)},
		{4000 * ms, 1, ok(5, 1, 4000*ms)},
		{8000 * ms, 1, ok(5, 4, 1000*ms)},
		{9500 * ms, 1, ok(5, 4, 1000*ms)},
		{9500 * ms, 0, ok(5, 4, 1*sec)},        // zero volume just peeks
		{9500 * ms, 2, ok(5, 2, 3*sec)},        // high volume uses up more of the limit
		{9500 * ms, 5, no(5, 2, 3*sec, 3*sec)}, // large requests cannot exceed limits
	})
}

// TestThrottleReadmeExample: CL.THROTTLE user123 15 30 60 → [0, 16, 15, -1, 2]
// (30 per 60 s: one every 2 s; max_burst 15: a limit of 16).
func TestThrottleReadmeExample(t *testing.T) {
	c := CellThrottle{Interval: int64(60*sec) / 30, Limit: 15 + 1}
	r, _ := c.Take(TokenState{}, t0, 1)
	if r != ok(16, 15, 2*sec) {
		t.Fatalf("first call = %s; want admitted 15/16, reset 2s", fmtResult(r))
	}
}

// TestThrottleMatchesRedisCellArithmetic replays random sequences against a
// transcription of redis-cell's rate_limit (tat, new_tat, allow_at, diff),
// in integer nanoseconds.
func TestThrottleMatchesRedisCellArithmetic(t *testing.T) {
	rng := newRand(7)
	for trial := 0; trial < 300; trial++ {
		interval := 1 + rng.int63n(int64(2*sec))
		burst := rng.int63n(10)
		c := CellThrottle{Interval: interval, Limit: burst + 1}
		var s TokenState
		tat := int64(-1) // redis-cell's stored value, -1 when missing
		now := t0
		for i := 0; i < 200; i++ {
			now += rng.int63n(2 * interval)
			q := rng.int63n(burst + 3)
			r, next := c.Take(s, now, q)
			want := cellRateLimit(&tat, now, interval, burst, q)
			if r != want {
				t.Fatalf("trial %d step %d (T=%v burst %d q %d): got %s; redis-cell %s",
					trial, i, time.Duration(interval), burst, q, fmtResult(r), fmtResult(want))
			}
			if r.Allowed && q != 0 {
				s = next
			}
		}
	}
}

// cellRateLimit is redis-cell's RateLimiter::rate_limit for one key whose
// stored TAT is *stored (-1: missing); it updates *stored as redis-cell's
// store does when the request is allowed (with quantity 0 it writes the same
// TAT back, which changes nothing).
func cellRateLimit(stored *int64, now, interval, maxBurst, quantity int64) Result {
	dvt := interval * (maxBurst + 1)
	increment := interval * quantity
	tat := *stored
	if tat == -1 || tat < now { // a key past its TTL is missing in Redis
		tat = now
	}
	newTat := tat + increment
	if now > tat {
		newTat = now + increment
	}
	allowAt := newTat - dvt
	diff := now - allowAt
	r := Result{Limit: maxBurst + 1, RetryAfter: -1}
	var ttl int64
	if diff < 0 {
		if increment <= dvt {
			r.RetryAfter = -diff
		}
		ttl = tat - now
	} else {
		r.Allowed, r.RetryAfter = true, 0
		ttl = newTat - now
		*stored = newTat
	}
	if next := dvt - ttl; next > -interval {
		r.Remaining = next / interval // redis-cell: microseconds as floats; see CellThrottle
	}
	r.ResetAfter = ttl
	return r
}

func TestThrottleDoesNotOverflow(t *testing.T) {
	c := CellThrottle{Interval: math.MaxInt64 / 2, Limit: math.MaxInt64}
	r, s := c.Take(TokenState{}, t0, math.MaxInt64)
	if !r.Allowed || s.TAT != math.MaxInt64 {
		t.Fatalf("huge quantity = %s, TAT %d", fmtResult(r), s.TAT)
	}
	if r, _ := c.Take(s, t0, 1); r.Allowed || r.RetryAfter <= 0 {
		t.Fatalf("one more = %s; want denied with a positive retry", fmtResult(r))
	}
}

func BenchmarkThrottleTake(b *testing.B) {
	c := CellThrottle{Interval: int64(100 * ms), Limit: 100}
	var s TokenState
	now := t0
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		now += int64(ms)
		_, s = c.Take(s, now, 1)
	}
}
