package store

import (
	"testing"
	"time"

	"github.com/sluice-rl/sluice/algorithms"
)

func take(req algorithms.Request, lo int64) algorithms.Request { req.Min = lo; return req }

func TestTakeDebitsTheGrantAndRefundsGiveItBack(t *testing.T) {
	st := New(4)
	hot := token("hot", time.Millisecond, 100, 60) // 1000/s, capacity 100, take up to 60
	if o := decide(st, t0, take(hot, 1)); o.Err != nil || !o.Result.Allowed || o.Result.Granted != 60 {
		t.Fatalf("take [1, 60] of a full bucket = %+v; want 60 granted", o)
	}
	if o := decide(st, t0, take(hot, 1)); o.Err != nil || o.Result.Granted != 40 || o.Result.Remaining != 0 {
		t.Fatalf("second take [1, 60] = %+v; want the 40 left granted", o)
	}
	if o := decide(st, t0, token("hot", time.Millisecond, 100, 1)); o.Result.Allowed {
		t.Fatalf("RL.TOKEN after the bucket was taken = %+v; want denied", o)
	}
	if o := decide(st, t0, token("hot", time.Millisecond, 100, -30)); o.Result.Remaining != 30 {
		t.Fatalf("refund of 30 unspent = %+v; want 30 remaining", o)
	}
	if o := decide(st, t0, take(hot, 31)); o.Result.Allowed || o.Result.Granted != 0 || o.Result.Remaining != 30 {
		t.Fatalf("take [31, 60] with 30 there = %+v; want denied, nothing taken", o)
	}
}

func TestTakeFixedWindowAndRefusalOfTheOthers(t *testing.T) {
	st := New(4)
	fixed := algorithms.Request{Key: []byte("f"), Limit: algorithms.Limit{Algo: algorithms.Fixed, Count: 10, Period: int64(time.Second)}, N: 7, Min: 1}
	if o := decide(st, t0, fixed); !o.Result.Allowed || o.Result.Granted != 7 {
		t.Fatalf("fixed take [1, 7] = %+v; want 7 granted", o)
	}
	if o := decide(st, t0, fixed); !o.Result.Allowed || o.Result.Granted != 3 {
		t.Fatalf("fixed take [1, 7] again = %+v; want the 3 left granted", o)
	}
	for _, algo := range []algorithms.Algo{algorithms.Leaky, algorithms.Sliding, algorithms.Log, algorithms.Throttle} {
		req := algorithms.Request{Key: []byte("x" + algo.String()), Limit: algorithms.Limit{Algo: algo, Count: 10, Period: int64(time.Second)}, N: 5, Min: 1}
		if o := decide(st, t0, req); o.Err == nil || o.Err.Error() != algorithms.ErrNotLeasable {
			t.Errorf("take on %v = %+v; want %q", algo, o, algorithms.ErrNotLeasable)
		}
		if n, _ := st.Exists(t0, [][]byte{req.Key}); n != 0 {
			t.Errorf("a refused take on %v created its key", algo)
		}
	}
}
