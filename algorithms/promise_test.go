package algorithms

import (
	"testing"
	"time"
)

// Properties over random sequences of (Δt, n): what each algorithm promises
// about the units it admits, and that its retry and reset instants are
// exact.

type admission struct{ at, n int64 }

// admitRandomly plays a random sequence against l and returns the admitted
// takes (n > 0). Along the way it checks, on a copy of the state, that a
// denied request's RetryAfter is exact, and that ResetAfter is exactly when
// the state becomes absent.
func admitRandomly(t *testing.T, rng *rand, mk func() limiter, replay func(l limiter, log []admission), unit, maxN int64) []admission {
	t.Helper()
	l := mk()
	var log []admission
	now := t0
	for i := 0; i < 300; i++ {
		now += randomGap(rng, unit)
		n := rng.int63n(maxN + 2) // 0 … maxN+1
		r := l.take(now, n)
		if r.Allowed && n > 0 {
			log = append(log, admission{now, n})
		}
		if i%10 != 0 {
			continue
		}
		// Exactness, checked on replicas rebuilt from the admissions (the
		// limiters keep unexported state by value, so replay is the copy).
		expiresWithReset(t, l, r, now, "reset")
		if !r.Allowed && r.RetryAfter > 0 {
			at := func(d int64) Result {
				c := mk()
				replay(c, log)
				return c.take(now+d, n)
			}
			if got := at(r.RetryAfter); !got.Allowed {
				t.Fatalf("denied at now with retry %v; at now+retry still denied: %s", time.Duration(r.RetryAfter), fmtResult(got))
			}
			if got := at(r.RetryAfter - 1); got.Allowed {
				t.Fatalf("denied at now with retry %v; already admitted 1ns earlier", time.Duration(r.RetryAfter))
			}
		}
	}
	return log
}

func replayTakes(l limiter, log []admission) {
	for _, a := range log {
		l.take(a.at, a.n)
	}
}

// withinRate checks that in every interval between two admissions at most
// burst + elapsed/interval units were admitted.
func withinRate(t *testing.T, name string, log []admission, burst, interval int64) {
	t.Helper()
	for i := range log {
		var sum int64
		for j := i; j < len(log); j++ {
			sum += log[j].n
			elapsed := log[j].at - log[i].at
			if max := burst + elapsed/interval; sum > max {
				t.Fatalf("%s: admitted %d units in %v; promised at most %d", name, sum, time.Duration(elapsed), max)
			}
		}
	}
}

func TestPromiseTokenAndLeaky(t *testing.T) {
	rng := newRand(3)
	for trial := 0; trial < 100; trial++ {
		T := 1 + rng.int63n(int64(20*ms))
		cap := 1 + rng.int63n(10)
		mkToken := func() limiter { return &tokenLimiter{b: TokenBucket{Interval: T, Capacity: cap}} }
		withinRate(t, "token", admitRandomly(t, rng, mkToken, replayTakes, T, cap), cap, T)
		mkLeaky := func() limiter { return &leakyLimiter{b: LeakyBucket{Interval: T, Capacity: cap}} }
		withinRate(t, "leaky", admitRandomly(t, rng, mkLeaky, replayTakes, T, cap), cap, T)
	}
}

func TestPromiseFixedPerAlignedWindow(t *testing.T) {
	rng := newRand(4)
	for trial := 0; trial < 100; trial++ {
		W := 1 + rng.int63n(int64(sec))
		limit := 1 + rng.int63n(10)
		mk := func() limiter { return &fixedLimiter{w: FixedWindow{Limit: limit, Window: W}} }
		perWindow := map[int64]int64{}
		for _, a := range admitRandomly(t, rng, mk, replayTakes, W/3+1, limit) {
			if perWindow[floorDiv(a.at, W)] += a.n; perWindow[floorDiv(a.at, W)] > limit {
				t.Fatalf("fixed: more than %d units in the window starting %d", limit, floorDiv(a.at, W)*W)
			}
		}
	}
}

func TestPromiseSlidingPerAlignedWindow(t *testing.T) {
	rng := newRand(5)
	for trial := 0; trial < 100; trial++ {
		W := 1 + rng.int63n(int64(sec))
		limit := 1 + rng.int63n(10)
		mk := func() limiter { return &slidingLimiter{w: SlidingWindow{Limit: limit, Window: W}} }
		log := admitRandomly(t, rng, mk, replayTakes, W/3+1, limit)
		perWindow := map[int64]int64{}
		for i, a := range log {
			if perWindow[floorDiv(a.at, W)] += a.n; perWindow[floorDiv(a.at, W)] > limit {
				t.Fatalf("sliding: more than %d units in one aligned window", limit)
			}
			// Any span of one window touches at most two aligned windows.
			var sum int64
			for j := i; j < len(log) && log[j].at < a.at+W; j++ {
				sum += log[j].n
			}
			if sum > 2*limit {
				t.Fatalf("sliding: %d units within one window length; at most 2×%d possible", sum, limit)
			}
		}
	}
}

func TestPromiseLogPerAnyWindow(t *testing.T) {
	rng := newRand(6)
	for trial := 0; trial < 100; trial++ {
		W := 1 + rng.int63n(int64(sec))
		limit := 1 + rng.int63n(10)
		mk := func() limiter { return &logLimiter{l: SlidingLog{Limit: limit, Window: W}} }
		log := admitRandomly(t, rng, mk, replayTakes, W/3+1, limit)
		for j := range log {
			var sum int64
			for i := j; i >= 0 && log[i].at > log[j].at-W; i-- {
				sum += log[i].n
			}
			if sum > limit {
				t.Fatalf("log: %d units in the window ending at admission %d; limit %d", sum, j, limit)
			}
		}
	}
}

func TestPromiseLeasesNeverExceedTheLimit(t *testing.T) {
	rng := newRand(8)
	for trial := 0; trial < 100; trial++ {
		limit := 1 + rng.int63n(4)
		ls := &leases{l: LeaseLimit{Limit: limit, Lease: 1 + rng.int63n(int64(sec))}}
		ends := map[uint64]int64{} // what each admitted acquire promised
		at := time.Duration(0)
		for i := 0; i < 300; i++ {
			at += time.Duration(randomGap(rng, ls.l.Lease/3+1))
			now := t0 + int64(at)
			id := uint64(rng.int63n(10))
			op := int64(LeaseAcquire)
			if rng.int63n(4) == 0 {
				op = LeaseRelease
			}
			if r := ls.do(at, id, op); r.Allowed {
				if op == LeaseAcquire {
					ends[id] = now + ls.l.Lease
				} else {
					delete(ends, id)
				}
			}
			var live int64
			for _, end := range ends {
				if end > now {
					live++
				}
			}
			if live > limit {
				t.Fatalf("trial %d: %d holders with a live lease; limit %d", trial, live, limit)
			}
		}
	}
}
