package store

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/algorithms"
)

func group(g int32, reqs ...algorithms.Request) []algorithms.Request {
	for i := range reqs {
		reqs[i].Group = g
	}
	return reqs
}

func decideAll(st *Store, now int64, reqs []algorithms.Request) []algorithms.Outcome {
	out := make([]algorithms.Outcome, len(reqs))
	st.Decide(now, reqs, out)
	return out
}

func remaining(t *testing.T, st *Store, now int64, r algorithms.Request) int64 {
	t.Helper()
	r.N, r.Group = 0, 0
	o := decide(st, now, r)
	if o.Err != nil {
		t.Fatal(o.Err)
	}
	return o.Result.Remaining
}

func TestGroupAdmittedConsumesEverywhere(t *testing.T) {
	st := New(8)
	reqs := group(1,
		req(algorithms.Token, "user:1/s", 10, 100*time.Millisecond, 2),
		req(algorithms.Fixed, "user:1/day", 1000, 24*time.Hour, 2),
		req(algorithms.Log, "api/s", 5000, time.Second, 2),
	)
	out := decideAll(st, t0, reqs)
	for i, o := range out {
		if o.Err != nil || !o.Result.Allowed {
			t.Fatalf("limit %d: %+v; want admitted", i, o)
		}
	}
	for i, want := range []int64{8, 998, 4998} {
		if got := remaining(t, st, t0, reqs[i]); got != want {
			t.Fatalf("limit %d: remaining %d; want %d", i, got, want)
		}
	}
}

func TestGroupDeniedConsumesNothing(t *testing.T) {
	st := New(8)
	day := req(algorithms.Fixed, "user:1/day", 3, 24*time.Hour, 3)
	decide(st, t0, day) // the daily quota is used up
	reqs := group(7,
		req(algorithms.Token, "user:1/s", 10, 100*time.Millisecond, 1),
		req(algorithms.Fixed, "user:1/day", 3, 24*time.Hour, 1),
		req(algorithms.Log, "api/s", 5000, time.Second, 1),
	)
	out := decideAll(st, t0, reqs)
	if out[1].Result.Allowed || out[1].Result.RetryAfter <= 0 {
		t.Fatalf("the daily limit: %+v; want denied with a retry", out[1])
	}
	// The others would have admitted: they say so, and show the state as it
	// is, nothing taken.
	if !out[0].Result.Allowed || out[0].Result.Remaining != 10 || !out[2].Result.Allowed || out[2].Result.Remaining != 5000 {
		t.Fatalf("the other limits: %+v, %+v; want allowed with nothing taken", out[0], out[2])
	}
	if n, _ := st.DBSize(t0); n != 1 {
		t.Fatalf("DBSize = %d; want 1: a denied group creates no key", n)
	}
}

func TestGroupSameKeyTwiceIsChargedTwice(t *testing.T) {
	st := New(4)
	tok := req(algorithms.Token, "k", 3, time.Second, 1)
	// 1 + 1 fits in 3.
	out := decideAll(st, t0, group(1, tok, tok))
	if !out[0].Result.Allowed || out[0].Result.Remaining != 2 || out[1].Result.Remaining != 1 {
		t.Fatalf("k twice: %+v", out)
	}
	// 1 + 1 does not fit in the 1 left: the second denies, nothing is taken.
	out = decideAll(st, t0, group(2, tok, tok))
	if out[1].Result.Allowed || !out[0].Result.Allowed || out[0].Result.Remaining != 1 {
		t.Fatalf("k twice with 1 left: %+v; want the second denied, the first showing 1 left", out)
	}
	if got := remaining(t, st, t0, tok); got != 1 {
		t.Fatalf("remaining after the denied group = %d; want 1", got)
	}
	// The same for a log, whose state is evaluated on a copy: the stored
	// ring must come out untouched.
	lg := req(algorithms.Log, "log", 3, time.Second, 2)
	decide(st, t0, req(algorithms.Log, "log", 3, time.Second, 1))
	out = decideAll(st, t0+1, group(3, lg, lg))
	if !out[0].Result.Allowed || out[1].Result.Allowed {
		t.Fatalf("log twice: %+v; want the first fitting, the second not", out)
	}
	info, _ := st.Info(t0+1, []byte("log"))
	if info.Fields[0].Value != 1 || len(info.Fields[2].List) != 1 || info.Fields[2].List[0] != t0 {
		t.Fatalf("log after the denied group: %+v; want its one entry at t0", info.Fields)
	}
	out = decideAll(st, t0+1, group(4, req(algorithms.Log, "log", 3, time.Second, 1), req(algorithms.Log, "log", 3, time.Second, 1)))
	if !out[1].Result.Allowed || out[1].Result.Remaining != 0 {
		t.Fatalf("log twice, fitting: %+v", out)
	}
}

func TestGroupWrongTypeChangesNothing(t *testing.T) {
	st := New(4)
	decide(st, t0, req(algorithms.Fixed, "f", 5, time.Minute, 1))
	out := decideAll(st, t0, group(1,
		req(algorithms.Token, "t", 5, time.Second, 1),
		req(algorithms.Token, "f", 5, time.Second, 1),
	))
	if out[1].Err != ErrWrongType {
		t.Fatalf("token on a fixed key in a group: %+v; want WRONGTYPE", out[1])
	}
	if n, _ := st.Exists(t0, [][]byte{[]byte("t")}); n != 0 {
		t.Fatal("the group's other limit was carried out")
	}
}

func TestGroupsNextToEachOtherAndToSingleRequests(t *testing.T) {
	st := New(4)
	a := req(algorithms.Token, "a", 3, time.Second, 1)
	b := req(algorithms.Token, "b", 1, time.Second, 1)
	reqs := []algorithms.Request{a}
	reqs = append(reqs, group(5, a, b)...)
	reqs = append(reqs, group(6, a, b)...) // b is empty now: denied, a untouched
	reqs = append(reqs, a)
	out := decideAll(st, t0, reqs)
	allowed := make([]bool, len(out))
	for i := range out {
		allowed[i] = out[i].Result.Allowed
	}
	if fmt.Sprint(allowed) != "[true true true true false true]" {
		t.Fatalf("allowed = %v; want the single, group 5, group 6 denied by b, then the last single", allowed)
	}
	if got := remaining(t, st, t0, a); got != 0 {
		t.Fatalf("a remaining = %d; want 0: group 6 took nothing from it", got)
	}
}

func TestLargeGroupUsesTheMap(t *testing.T) {
	st := New(16)
	var reqs []algorithms.Request
	for i := 0; i < 40; i++ {
		reqs = append(reqs, req(algorithms.Fixed, fmt.Sprint("k", i%30), 2, time.Minute, 1))
	}
	out := decideAll(st, t0, group(9, reqs...))
	for i := range out {
		if !out[i].Result.Allowed {
			t.Fatalf("limit %d: %+v", i, out[i])
		}
	}
	if got := remaining(t, st, t0, reqs[0]); got != 0 { // k0 is named twice
		t.Fatalf("k0 remaining = %d; want 0", got)
	}
	out = decideAll(st, t0, group(10, append(reqs[:1:1], reqs[5])...))
	if out[0].Result.Allowed {
		t.Fatalf("k0 again: %+v; want denied", out[0])
	}
}

// TestGroupsRaceWithoutDeadlockOrPartialConsumption runs 16 goroutines
// deciding groups over random subsets, in random orders, of keys spread over
// few shards, at one frozen instant (no refill). Afterwards each key must
// have lost exactly one unit per admitted group that named it; during the
// run, two keys always taken together must always be seen equal.
func TestGroupsRaceWithoutDeadlockOrPartialConsumption(t *testing.T) {
	const workers, rounds, keys, capacity = 16, 400, 12, 1 << 20
	st := New(4)
	mk := func(i int) algorithms.Request {
		return req(algorithms.Token, fmt.Sprint("key:", i), capacity, time.Hour, 1)
	}
	pairA := req(algorithms.Fixed, "pair:a", capacity, time.Hour, 1)
	pairB := req(algorithms.Log, "pair:b", 10000, time.Hour, 1)
	var mu sync.Mutex
	taken := make([]int64, keys)
	var pairs int64
	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			out := make([]algorithms.Outcome, keys+2)
			for r := 0; r < rounds; r++ {
				perm := rng.Perm(keys)[:1+rng.IntN(5)]
				reqs := make([]algorithms.Request, 0, len(perm)+2)
				for _, k := range perm {
					reqs = append(reqs, mk(k))
				}
				withPair := rng.IntN(2) == 0
				if withPair {
					reqs = append(reqs, pairB, pairA)
				}
				if rng.IntN(8) == 0 { // sometimes a group that must be denied
					reqs = append(reqs, req(algorithms.Token, "empty", 1, time.Hour, 2))
				}
				rng.Shuffle(len(reqs), func(i, j int) { reqs[i], reqs[j] = reqs[j], reqs[i] })
				st.Decide(t0, group(int32(r+1), reqs...), out)
				ok := true
				for i := range reqs {
					if out[i].Err != nil {
						t.Error(out[i].Err)
						return
					}
					ok = ok && out[i].Result.Allowed
				}
				// Peek at both halves of the pair in one group: they must agree.
				peek := group(int32(-r-1), pairA, pairB)
				peek[0].N, peek[1].N = 0, 0
				st.Decide(t0, peek, out)
				if a, b := capacity-out[0].Result.Remaining, 10000-out[1].Result.Remaining; a != b {
					t.Errorf("pair seen apart: a took %d, b took %d", a, b)
					return
				}
				if ok {
					mu.Lock()
					for _, k := range perm {
						taken[k]++
					}
					if withPair {
						pairs++
					}
					mu.Unlock()
				}
			}
		}(w)
	}
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("deadlock: the racing groups did not finish in 30s")
	}
	for k := 0; k < keys; k++ {
		if got := capacity - remaining(t, st, t0, mk(k)); got != taken[k] {
			t.Fatalf("key %d: %d taken; %d admitted groups named it", k, got, taken[k])
		}
	}
	if got := capacity - remaining(t, st, t0, pairA); got != pairs {
		t.Fatalf("pair: %d taken; %d admitted groups named it", got, pairs)
	}
}

func BenchmarkGroupOfThree(b *testing.B) {
	st := New(16)
	reqs := group(1,
		req(algorithms.Token, "user:1/s", 1<<40, time.Millisecond, 1),
		req(algorithms.Fixed, "user:1/day", 1<<40, 24*time.Hour, 1),
		req(algorithms.Sliding, "api/s", 1<<40, time.Second, 1),
	)
	out := make([]algorithms.Outcome, len(reqs))
	now := t0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		now += 1000
		st.Decide(now, reqs, out)
	}
}
