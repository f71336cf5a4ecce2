package store

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/algorithms"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC).UnixNano()

func token(key string, interval time.Duration, capacity, n int64) algorithms.Request {
	return algorithms.Request{
		Key:   []byte(key),
		Limit: algorithms.Limit{Algo: algorithms.Token, Count: capacity, Period: int64(interval)},
		N:     n,
	}
}

func decide(st *Store, now int64, req algorithms.Request) algorithms.Outcome {
	out := make([]algorithms.Outcome, 1)
	st.Decide(now, []algorithms.Request{req}, out)
	return out[0]
}

func TestRacingGoroutinesAdmitExactlyCapacity(t *testing.T) {
	const capacity, workers, tries = 1000, 32, 100
	st := New(8)
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reqs := []algorithms.Request{token("hot", time.Hour, capacity, 1)}
			out := make([]algorithms.Outcome, 1)
			for i := 0; i < tries; i++ {
				st.Decide(t0, reqs, out) // one frozen instant: no refill at all
				if out[0].Err != nil {
					t.Error(out[0].Err)
					return
				}
				if out[0].Result.Allowed {
					admitted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if got := admitted.Load(); got != capacity {
		t.Fatalf("%d goroutines × %d tries admitted %d; want exactly %d", workers, tries, got, capacity)
	}
}

func TestFullBucketIsAbsent(t *testing.T) {
	st := New(4)
	t1 := t0 + int64(100*time.Millisecond)
	o := decide(st, t0, token("k", 100*time.Millisecond, 5, 1))
	if !o.Result.Allowed {
		t.Fatalf("first take denied: %+v", o)
	}
	if n, _ := st.Exists(t0, [][]byte{[]byte("k")}); n != 1 {
		t.Fatalf("Exists(t0) = %d; want 1", n)
	}
	if n, _ := st.DBSize(t1 - 1); n != 1 {
		t.Fatalf("DBSize(t1-1ns) = %d; want 1", n)
	}
	if n, _ := st.DBSize(t1); n != 0 {
		t.Fatalf("DBSize(t1) = %d; want 0: the bucket is full again", n)
	}
	if n, _ := st.Exists(t1, [][]byte{[]byte("k")}); n != 0 {
		t.Fatalf("Exists(t1) = %d; want 0", n)
	}
}

func TestPeekCreatesNothing(t *testing.T) {
	st := New(4)
	o := decide(st, t0, token("k", time.Second, 5, 0))
	if !o.Result.Allowed || o.Result.Remaining != 5 {
		t.Fatalf("peek = %+v", o)
	}
	if n, _ := st.DBSize(t0); n != 0 {
		t.Fatalf("DBSize after a peek = %d; want 0", n)
	}
	decide(st, t0, token("k", time.Second, 5, -1))
	if n, _ := st.DBSize(t0); n != 0 {
		t.Fatalf("DBSize after a refund on an absent key = %d; want 0", n)
	}
}

func TestWrongTypeLeavesStateAlone(t *testing.T) {
	st := New(1)
	decide(st, t0, token("k", time.Second, 5, 2))
	bad := token("k", time.Second, 5, 1)
	bad.Limit.Algo = algorithms.Algo(200)
	if o := decide(st, t0, bad); o.Err != ErrWrongType {
		t.Fatalf("other algorithm on a token key: err = %v; want WRONGTYPE", o.Err)
	}
	if o := decide(st, t0, token("k", time.Second, 5, 0)); o.Result.Remaining != 3 {
		t.Fatalf("remaining after WRONGTYPE = %d; want 3", o.Result.Remaining)
	}
}

func TestSweepRemovesUntouchedEntries(t *testing.T) {
	st := New(4)
	for i := 0; i < 10_000; i++ {
		decide(st, t0, token(fmt.Sprintf("k%d", i), time.Millisecond, 1, 1))
	}
	decide(st, t0, token("long", time.Hour, 1, 1))
	later := t0 + int64(time.Second)
	var removed int
	for i := 0; i < 1000 && st.Stats().Keys > 1; i++ {
		removed += st.sweepRounds(later, 16, nil).Removed
	}
	if removed != 10_000 || st.Stats().Keys != 1 {
		t.Fatalf("sweep removed %d, %d entries left; want 10000 removed, 1 left", removed, st.Stats().Keys)
	}
	if n, _ := st.DBSize(later); n != 1 {
		t.Fatalf("DBSize = %d; want 1", n)
	}
}

func TestScanReturnsEveryStableKey(t *testing.T) {
	st := New(8)
	want := map[string]bool{}
	for i := 0; i < 500; i++ {
		k := fmt.Sprintf("user:%d", i)
		want[k] = true
		decide(st, t0, token(k, time.Hour, 10, 1))
	}
	seen := map[string]bool{}
	var cursor uint64
	for calls := 0; ; calls++ {
		if calls > 10_000 {
			t.Fatal("scan does not terminate")
		}
		// Churn during the scan: other keys come and go.
		decide(st, t0, token(fmt.Sprintf("tmp:%d", calls), time.Hour, 10, 1))
		st.Delete(t0, [][]byte{[]byte(fmt.Sprintf("tmp:%d", calls-1))})
		cursor, _ = st.Scan(t0, cursor, 7, func(key []byte, _ algorithms.Algo) bool { seen[string(key)] = true; return true })
		if cursor == 0 {
			break
		}
	}
	for k := range want {
		if !seen[k] {
			t.Fatalf("scan missed %q", k)
		}
	}
}

// TestScanOffersKeysWithoutTheLockAndResumesWhereStopped: fn can decide on
// the key it is offered (a deadlock if Scan held the shard's lock); when fn
// stops the scan, the next call offers the same key first; keys of 100 KB
// go out a few at a time; every key is seen.
func TestScanOffersKeysWithoutTheLockAndResumesWhereStopped(t *testing.T) {
	st := New(4)
	want := map[string]bool{}
	for i := 0; i < 300; i++ {
		k := fmt.Sprintf("user:%d", i)
		if i%50 == 0 {
			k += strings.Repeat("x", 100<<10)
		}
		want[k] = true
		decide(st, t0, token(k, time.Hour, 10, 1))
	}
	seen := map[string]bool{}
	var cursor uint64
	stopped, offers := "", 0
	for calls := 0; ; calls++ {
		if calls > 10_000 {
			t.Fatal("scan does not terminate")
		}
		first := true
		cursor, _ = st.Scan(t0, cursor, 40, func(key []byte, _ algorithms.Algo) bool {
			if first && stopped != "" && string(key) != stopped {
				t.Fatalf("scan resumed at %.20q; want %.20q, where fn stopped it", key, stopped)
			}
			first = false
			if offers++; offers%7 == 0 {
				stopped = string(key)
				return false
			}
			stopped = ""
			decide(st, t0, token(string(key), time.Hour, 10, 1)) // takes the key's shard lock
			seen[string(key)] = true
			return true
		})
		if cursor == 0 {
			break
		}
	}
	if len(seen) != len(want) {
		t.Fatalf("scan saw %d keys; want %d", len(seen), len(want))
	}
}

func TestSweepRacesWithWriters(t *testing.T) {
	st := New(4)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var now atomic.Int64
	now.Store(t0)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				st.sweepRounds(now.Load(), 4, nil)
			}
		}
	}()
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				at := now.Add(int64(time.Microsecond))
				decide(st, at, token(fmt.Sprintf("k%d", i%64), 10*time.Microsecond, 3, 1))
			}
		}(w)
	}
	time.Sleep(10 * time.Millisecond)
	close(stop)
	wg.Wait()
}

func BenchmarkStoreDecide(b *testing.B) {
	st := New(16)
	keys := make([][]byte, 1024)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("user:%08d", i))
	}
	reqs := []algorithms.Request{token("", 100*time.Millisecond, 100, 1)}
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

// benchScale decides batches of 16 random keys out of nkeys live ones: the
// pipeline's shape, where the cost is the memory the lookups touch.
func benchScale(b *testing.B, nkeys, shards int) { benchScaleStep(b, nkeys, shards, 0, 1000) }

// benchScaleStep is benchScale on a store told of deciders (SetDeciders;
// 0: left at its default), with the clock moving step ns a batch.
func benchScaleStep(b *testing.B, nkeys, shards, deciders int, step int64) {
	st := New(shards)
	if deciders > 0 {
		st.SetDeciders(deciders)
	}
	keys := make([][]byte, nkeys)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("user:%08d", i))
	}
	reqs := make([]algorithms.Request, 16)
	for i := range reqs {
		reqs[i] = token("", 100*time.Millisecond, 100, 1)
	}
	out := make([]algorithms.Outcome, len(reqs))
	now := t0
	for i := 0; i < nkeys; i++ {
		reqs[0].Key = keys[i]
		st.Decide(now, reqs[:1], out[:1])
	}
	x := xorshift(88172645463325252)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += len(reqs) {
		for j := range reqs {
			reqs[j].Key = keys[x.next()%uint64(nkeys)]
		}
		now += step
		st.Decide(now, reqs, out)
	}
}

// BenchmarkBatch100kKeysReturning is BenchmarkBatch100kKeys4Shards with
// every key coming back after its bucket refilled (a second a batch): each
// decision finds its key's entry expired and writes the key again, as for
// keys sparser than their limit's refill time.
func BenchmarkBatch100kKeysReturning(b *testing.B) { benchScaleStep(b, 100_000, 4, 0, 1e9) }

func BenchmarkBatch1kKeys4Shards(b *testing.B)    { benchScale(b, 1_000, 4) }
func BenchmarkBatch100kKeys4Shards(b *testing.B)  { benchScale(b, 100_000, 4) }
func BenchmarkBatch100kKeys32Shards(b *testing.B) { benchScale(b, 100_000, 32) }
func BenchmarkBatch1MKeys4Shards(b *testing.B)    { benchScale(b, 1_000_000, 4) }

// BenchmarkParallelBatch100kKeys: pipelines of 16 decisions over 100k keys
// from GOMAXPROCS goroutines at once, as the event loops run them; with
// -cpu 1,2 the ns/op (per decision, over all goroutines) shows how the
// store scales with cores.
func BenchmarkParallelBatch100kKeys(b *testing.B) {
	const nkeys = 100_000
	st := New(max(4, 2*runtime.GOMAXPROCS(0)))
	keys := make([][]byte, nkeys)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("user:%08d", i))
	}
	one := []algorithms.Request{token("", 100*time.Millisecond, 100, 1)}
	for i := range keys {
		one[0].Key = keys[i]
		st.Decide(t0, one, make([]algorithms.Outcome, 1))
	}
	var seed atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		reqs := make([]algorithms.Request, 16)
		for i := range reqs {
			reqs[i] = token("", 100*time.Millisecond, 100, 1)
		}
		out := make([]algorithms.Outcome, len(reqs))
		x := xorshift(88172645463325252 + seed.Add(1)*0x9E3779B97F4A7C15)
		now := t0
		for {
			for j := range reqs {
				if !pb.Next() {
					if j > 0 {
						st.Decide(now, reqs[:j], out[:j])
					}
					return
				}
				reqs[j].Key = keys[x.next()%nkeys]
			}
			now += 1000
			st.Decide(now, reqs, out)
		}
	})
}

// TestBatchDecidesLikeOneByOne: a pipeline's decisions, grouped by shard and
// prefetched, give exactly the outcomes of the same requests one at a time.
func TestBatchDecidesLikeOneByOne(t *testing.T) {
	batched, single := New(4), New(4)
	rng := uint64(7)
	for round := 0; round < 200; round++ {
		reqs := make([]algorithms.Request, 1+round%20)
		for i := range reqs {
			rng ^= rng << 13
			rng ^= rng >> 7
			rng ^= rng << 17
			reqs[i] = token(fmt.Sprintf("k%d", rng%7), 10*time.Millisecond, 3, int64(rng%3))
		}
		now := t0 + int64(round)*int64(time.Millisecond)
		got := make([]algorithms.Outcome, len(reqs))
		batched.Decide(now, reqs, got)
		for i := range reqs {
			want := decide(single, now, reqs[i])
			if got[i] != want {
				t.Fatalf("round %d, request %d (%s n=%d): batched %+v; one by one %+v", round, i, reqs[i].Key, reqs[i].N, got[i], want)
			}
		}
	}
}

// xorshift is the benchmarks' cheap source of random keys (Marsaglia's
// xorshift64).
type xorshift uint64

func (x *xorshift) next() uint64 {
	v := uint64(*x)
	v ^= v << 13
	v ^= v >> 7
	v ^= v << 17
	*x = xorshift(v)
	return v
}
