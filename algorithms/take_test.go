package algorithms

import (
	"math"
	"testing"
	"time"
)

// takeStep is one line of a take script: at t0+at, take [lo, hi] (lo = 0:
// an ordinary Take of hi, e.g. a refund); want this result.
type takeStep struct {
	at     time.Duration
	lo, hi int64
	want   Result
}

func granted(r Result, g int64) Result { r.Granted = g; return r }

// takeScript plays steps against a token bucket (w nil) or a fixed window,
// keeping the state the way a keyspace keeps it.
func takeScript(t *testing.T, b *TokenBucket, w *FixedWindow, steps []takeStep) {
	t.Helper()
	var ts TokenState
	var fs FixedState
	for i, st := range steps {
		now := t0 + int64(st.at)
		var r Result
		switch {
		case b != nil && st.lo > 0:
			var n TokenState
			if r, n = b.TakeUpTo(ts, now, st.lo, st.hi); r.Allowed {
				ts = n
			}
		case b != nil:
			var n TokenState
			if r, n = b.Take(ts, now, st.hi); r.Allowed && st.hi != 0 {
				ts = n
			}
		case st.lo > 0:
			var n FixedState
			if r, n = w.TakeUpTo(fs, now, st.lo, st.hi); r.Allowed {
				fs = n
			}
		default:
			var n FixedState
			if r, n = w.Take(fs, now, st.hi); r.Allowed && st.hi != 0 {
				fs = n
			}
		}
		if r != st.want {
			t.Fatalf("step %d: take(t0+%v, [%d, %d]) = %s granted %d; want %s granted %d", i, st.at, st.lo, st.hi,
				fmtResult(r), r.Granted, fmtResult(st.want), st.want.Granted)
		}
	}
}

func TestTakeTokenGrantsWhatIsThereUpToMax(t *testing.T) {
	b := TokenBucket{Interval: int64(ms), Capacity: 100} // 1000/s, burst 100
	takeScript(t, &b, nil, []takeStep{
		{0, 1, 30, granted(ok(100, 70, 30*ms), 30)},
		{0, 1, 500, granted(ok(100, 0, 100*ms), 70)},    // all that is left, not max
		{0, 1, 10, no(100, 0, 1*ms, 100*ms)},            // nothing left: denied as Take(1)
		{5 * ms, 10, 50, no(100, 5, 5*ms, 95*ms)},       // 5 < min 10: denied as Take(10), nothing taken
		{5 * ms, 5, 50, granted(ok(100, 0, 100*ms), 5)}, // exactly min
		{10 * ms, 0, 0, ok(100, 5, 95*ms)},              // a peek sees the refill
	})
}

func TestTakeTokenRefundGivesBackWhatWasUnspent(t *testing.T) {
	b := TokenBucket{Interval: int64(ms), Capacity: 100}
	takeScript(t, &b, nil, []takeStep{
		{0, 1, 60, granted(ok(100, 40, 60*ms), 60)},
		{0, 1, 60, granted(ok(100, 0, 100*ms), 40)},
		{20 * ms, 0, -25, ok(100, 45, 55*ms)}, // 20 refilled, 25 unspent returned
		{20 * ms, 1, 1000, granted(ok(100, 0, 100*ms), 45)},
		{20 * ms, 0, -1000, ok(100, 100, 0)}, // a refund never fills beyond capacity
	})
}

func TestTakeTokenMinAboveCapacityNeverFits(t *testing.T) {
	b := TokenBucket{Interval: int64(time.Second), Capacity: 5}
	takeScript(t, &b, nil, []takeStep{
		{0, 6, 10, no(5, 5, -1, 0)},
		{0, 5, 3, granted(ok(5, 0, 5*time.Second), 5)}, // max below min counts as min
		{time.Hour, 1, math.MaxInt64, granted(ok(5, 0, 5*time.Second), 5)},
	})
}

func TestTakeFixedGrantsTheWindowsRestUntilItEnds(t *testing.T) {
	w := FixedWindow{Limit: 100, Window: int64(time.Second)}
	takeScript(t, nil, &w, []takeStep{
		{0, 1, 40, granted(ok(100, 60, time.Second), 40)},
		{250 * ms, 1, 100, granted(ok(100, 0, 750*ms), 60)},
		{500 * ms, 1, 100, no(100, 0, 500*ms, 500*ms)}, // denied until the window ends
		{500 * ms, 0, -10, ok(100, 10, 500*ms)},        // a refund within the window
		{999 * ms, 20, 100, no(100, 10, 1*ms, 1*ms)},   // 10 < min 20
		{time.Second, 20, 100, granted(ok(100, 0, time.Second), 100)},
	})
}

func TestLeasable(t *testing.T) {
	for a := None; a <= Override; a++ {
		if got, want := Leasable(a), a == Token || a == Fixed; got != want {
			t.Errorf("Leasable(%v) = %v; want %v", a, got, want)
		}
	}
}
