package store

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/algorithms"
)

// req builds a request for any algorithm: count and period as in
// algorithms.Limit.
func req(algo algorithms.Algo, key string, count int64, period time.Duration, n int64) algorithms.Request {
	return algorithms.Request{
		Key:   []byte(key),
		Limit: algorithms.Limit{Algo: algo, Count: count, Period: int64(period)},
		N:     n,
	}
}

func lease(key string, limit int64, d time.Duration, id string, op int64) algorithms.Request {
	r := req(algorithms.Concurrency, key, limit, d, op)
	r.ID = []byte(id)
	return r
}

// oneOfEach is a request of every algorithm, each on its own key.
func oneOfEach(n int64) []algorithms.Request {
	return []algorithms.Request{
		req(algorithms.Token, "token", 5, time.Second, n),
		req(algorithms.Leaky, "leaky", 5, time.Second, n),
		req(algorithms.Fixed, "fixed", 5, time.Minute, n),
		req(algorithms.Sliding, "sliding", 5, time.Minute, n),
		req(algorithms.Log, "log", 5, time.Minute, n),
		lease("lease", 5, time.Minute, "job-1", n),
		req(algorithms.Throttle, "throttle", 5, time.Second, n),
	}
}

func TestEveryAlgorithmPeekAndRefundCreateNothing(t *testing.T) {
	st := New(4)
	for _, n := range []int64{0, -1} {
		for _, r := range oneOfEach(n) {
			if o := decide(st, t0, r); o.Err != nil || !o.Result.Allowed && n == 0 {
				t.Fatalf("%v n=%d on an absent key: %+v", r.Limit.Algo, n, o)
			}
		}
		if k, _ := st.DBSize(t0); k != 0 {
			t.Fatalf("DBSize after n=%d on every algorithm = %d; want 0", n, k)
		}
	}
}

func TestEveryAlgorithmExpiresExactlyAtItsReset(t *testing.T) {
	st := New(4)
	for _, r := range oneOfEach(2) {
		o := decide(st, t0, r)
		if o.Err != nil || !o.Result.Allowed || o.Result.ResetAfter <= 0 {
			t.Fatalf("%v: %+v", r.Limit.Algo, o)
		}
		key := [][]byte{r.Key}
		if ttl, _ := st.TTL(t0, r.Key); ttl != o.Result.ResetAfter {
			t.Fatalf("%v: TTL %v; want reset_after %v", r.Limit.Algo, time.Duration(ttl), time.Duration(o.Result.ResetAfter))
		}
		if typ, _ := st.Type(t0, r.Key); typ != r.Limit.Algo {
			t.Fatalf("TYPE %s = %v; want %v", r.Key, typ, r.Limit.Algo)
		}
		end := t0 + o.Result.ResetAfter
		if n, _ := st.Exists(end-1, key); n != 1 {
			t.Fatalf("%v: gone 1ns before its reset", r.Limit.Algo)
		}
		if n, _ := st.Exists(end, key); n != 0 {
			t.Fatalf("%v: still there at its reset", r.Limit.Algo)
		}
	}
}

func TestWrongTypeAcrossEveryPairOfAlgorithms(t *testing.T) {
	st := New(2)
	held := oneOfEach(1)
	for _, r := range held {
		decide(st, t0, r)
	}
	for _, h := range held {
		for _, other := range oneOfEach(1) {
			if other.Limit.Algo == h.Limit.Algo {
				continue
			}
			other.Key = h.Key
			if o := decide(st, t0, other); o.Err != ErrWrongType {
				t.Fatalf("%v on a %v key: %+v; want WRONGTYPE", other.Limit.Algo, h.Limit.Algo, o)
			}
		}
	}
	// Nothing was consumed by the refused requests.
	for _, r := range oneOfEach(0) {
		if o := decide(st, t0, r); o.Result.Remaining != 4 {
			t.Fatalf("%v after WRONGTYPE attempts: remaining %d; want 4", r.Limit.Algo, o.Result.Remaining)
		}
	}
}

// TestLogInPlaceMatchesThePureAlgorithm drives a log through the store,
// where the ring is rewritten in place inside the shard, and through the
// algorithm alone, and wants the same answers.
func TestLogInPlaceMatchesThePureAlgorithm(t *testing.T) {
	st := New(1)
	l := algorithms.SlidingLog{Limit: 50, Window: int64(time.Second)}
	var s algorithms.LogState
	now := t0
	for i := 0; i < 5000; i++ {
		now += int64(i%7) * int64(3*time.Millisecond)
		n := int64(i%5) - 1
		r := req(algorithms.Log, "log", l.Limit, time.Duration(l.Window), n)
		o := decide(st, now, r)
		want, next := l.Take(s, now, n)
		if want.Allowed && n != 0 {
			s = next
		}
		if o.Err != nil || o.Result != want {
			t.Fatalf("step %d: store %+v; algorithm %+v", i, o, want)
		}
	}
	info, _ := st.Info(now, []byte("log"))
	if len(info.Fields) == 3 && !slices.Equal(info.Fields[2].List, s.Entries(nil)) {
		t.Fatalf("stored entries %v; want %v", info.Fields[2].List, s.Entries(nil))
	}
}

func TestLeaseIDsAreHashed(t *testing.T) {
	st := New(2)
	if o := decide(st, t0, lease("jobs", 2, time.Minute, "request-1", algorithms.LeaseAcquire)); !o.Result.Allowed {
		t.Fatalf("first acquire: %+v", o)
	}
	if o := decide(st, t0, lease("jobs", 2, time.Minute, "request-1", algorithms.LeaseAcquire)); o.Result.Remaining != 1 {
		t.Fatalf("the same id again: %+v; want a renewal, one slot still free", o)
	}
	long := string(make([]byte, 4096)) // ids of any length
	decide(st, t0, lease("jobs", 2, time.Minute, long, algorithms.LeaseAcquire))
	if o := decide(st, t0, lease("jobs", 2, time.Minute, "request-3", algorithms.LeaseAcquire)); o.Result.Allowed {
		t.Fatalf("third holder: %+v; want denied", o)
	}
	if o := decide(st, t0, lease("jobs", 2, time.Minute, long, algorithms.LeaseRelease)); !o.Result.Allowed {
		t.Fatalf("release of the long id: %+v; want released", o)
	}
	if o := decide(st, t0, lease("jobs", 2, time.Minute, long, algorithms.LeaseRelease)); o.Result.Allowed {
		t.Fatalf("second release: %+v; want nothing released", o)
	}
}

func TestInfoNamesEachStatesFields(t *testing.T) {
	st := New(2)
	want := map[algorithms.Algo]string{
		algorithms.Token:       "[tat_ns]",
		algorithms.Leaky:       "[tat_ns]",
		algorithms.Throttle:    "[tat_ns]",
		algorithms.Fixed:       "[window_start_ns count]",
		algorithms.Sliding:     "[window_start_ns current previous]",
		algorithms.Log:         "[count capacity entries_ns]",
		algorithms.Concurrency: "[leases]",
	}
	for _, r := range oneOfEach(1) {
		decide(st, t0, r)
		info, err := st.Info(t0, r.Key)
		var names []string
		for _, f := range info.Fields {
			names = append(names, f.Name)
		}
		if err != nil || info.Algo != r.Limit.Algo || fmt.Sprint(names) != want[r.Limit.Algo] {
			t.Fatalf("Info(%s) = %+v, %v; want fields %s", r.Key, info, err, want[r.Limit.Algo])
		}
	}
	if info, _ := st.Info(t0, []byte("absent")); info.Algo != algorithms.None {
		t.Fatalf("Info(absent) = %+v", info)
	}
	info, _ := st.Info(t0, []byte("log"))
	if got := info.Fields[2].List; !slices.Equal(got, []int64{t0}) {
		t.Fatalf("log entries = %v; want [t0]", got)
	}
}

func benchAlgo(b *testing.B, r algorithms.Request) {
	st := New(16)
	keys := make([][]byte, 1024)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("user:%08d", i))
	}
	reqs := []algorithms.Request{r}
	out := make([]algorithms.Outcome, 1)
	now := t0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		now += 1000
		reqs[0].Key = keys[i&1023]
		st.Decide(now, reqs, out)
	}
}

func BenchmarkStoreLeaky(b *testing.B) {
	benchAlgo(b, req(algorithms.Leaky, "", 100, 100*time.Millisecond, 1))
}
func BenchmarkStoreFixed(b *testing.B) {
	benchAlgo(b, req(algorithms.Fixed, "", 1<<40, time.Minute, 1))
}
func BenchmarkStoreSliding(b *testing.B) {
	benchAlgo(b, req(algorithms.Sliding, "", 1<<40, time.Minute, 1))
}
func BenchmarkStoreLog(b *testing.B) { benchAlgo(b, req(algorithms.Log, "", 100, time.Second, 1)) }
func BenchmarkStoreThrottle(b *testing.B) {
	benchAlgo(b, req(algorithms.Throttle, "", 100, 100*time.Millisecond, 1))
}
func BenchmarkStoreAcquireRelease(b *testing.B) {
	st := New(16)
	reqs := []algorithms.Request{
		lease("jobs", 100, time.Minute, "worker-7", algorithms.LeaseAcquire),
		lease("jobs", 100, time.Minute, "worker-7", algorithms.LeaseRelease),
	}
	out := make([]algorithms.Outcome, 2)
	for w := 0; w < 8; w++ { // other holders keep the key alive
		decide(st, t0, lease("jobs", 100, time.Hour, fmt.Sprint("other-", w), algorithms.LeaseAcquire))
	}
	now := t0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		now += 1000
		st.Decide(now, reqs, out)
	}
}
