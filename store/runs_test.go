package store

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/algorithms"
)

// randomBatch makes a pipeline of up to 20 requests over few keys, so that
// a batch often names a key twice: every algorithm, peeks and refunds,
// wrong types (a key's algorithm is drawn per request), leases, and RL.ALL
// groups of two to four requests.
func randomBatch(rng *rand.Rand, group *int32) []algorithms.Request {
	algos := []algorithms.Algo{algorithms.Token, algorithms.Leaky, algorithms.Fixed, algorithms.Sliding,
		algorithms.Log, algorithms.Throttle}
	one := func() algorithms.Request {
		k := fmt.Sprintf("k%d", rng.IntN(40))
		if rng.IntN(12) == 0 {
			return lease("lease:"+k, 3, time.Duration(1+rng.IntN(20))*time.Millisecond,
				fmt.Sprint("id", rng.IntN(5)), []int64{algorithms.LeaseAcquire, algorithms.LeaseRelease}[rng.IntN(2)])
		}
		a := algos[rng.IntN(len(algos))]
		if rng.IntN(4) != 0 { // mostly one algorithm per key, so that most requests are not WRONGTYPE
			a = algos[len(k)%len(algos)]
		}
		return req(a, k, int64(1+rng.IntN(6)), time.Duration(1+rng.IntN(10))*time.Millisecond, int64(rng.IntN(4)-1))
	}
	var reqs []algorithms.Request
	for n := 1 + rng.IntN(20); len(reqs) < n; {
		if rng.IntN(8) != 0 {
			reqs = append(reqs, one())
			continue
		}
		*group++
		for m := 2 + rng.IntN(3); m > 0; m-- {
			r := one()
			if r.N < 1 {
				r.N = 1 // RL.ALL takes units
			}
			r.Group = *group
			reqs = append(reqs, r)
		}
	}
	return reqs
}

// A pipeline's decisions do not depend on how the store takes its locks:
// all of a run's shards at once (one decider), each shard on its own (the
// default), or one request at a time. Outcomes agree, and so does the final
// state: each store's snapshot is byte for byte that of a store of as many
// shards fed one request at a time (snapshots follow the shard order).
func TestRunsDecideAsOneByOne(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		type pair struct {
			name      string
			st, alone *Store
		}
		pairs := []pair{{"4 shards, one decider", New(4), New(4)}, {"16 shards, per shard", New(16), New(16)},
			{"1 shard, one decider", New(1), New(1)}}
		pairs[0].st.SetDeciders(1)
		pairs[2].st.SetDeciders(1)
		now := t0
		var group int32
		for step := 0; step < 3000; step++ {
			now += rng.Int64N(int64(time.Millisecond))
			reqs := randomBatch(rng, &group)
			for _, p := range pairs {
				want := make([]algorithms.Outcome, len(reqs))
				for i := 0; i < len(reqs); {
					j := i + 1
					for g := reqs[i].Group; g != 0 && j < len(reqs) && reqs[j].Group == g; j++ {
					}
					p.alone.Decide(now, reqs[i:j], want[i:j])
					i = j
				}
				got := make([]algorithms.Outcome, len(reqs))
				p.st.Decide(now, reqs, got)
				for i := range reqs {
					if got[i] != want[i] {
						t.Fatalf("seed %d step %d, %s, request %d (%s %q n=%d group %d): %+v; one by one %+v",
							seed, step, p.name, i, reqs[i].Limit.Algo, reqs[i].Key, reqs[i].N, reqs[i].Group, got[i], want[i])
					}
				}
			}
		}
		for _, p := range pairs {
			var got, want bytes.Buffer
			if err := p.st.snapshotAt(&got, now); err != nil {
				t.Fatal(err)
			}
			if err := p.alone.snapshotAt(&want, now); err != nil {
				t.Fatal(err)
			}
			if got.Len() < 100 || !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Fatalf("seed %d, %s: snapshot of %d bytes; one by one's has %d and differs (or both are empty)",
					seed, p.name, got.Len(), want.Len())
			}
		}
	}
}

// With one decider declared, other lockers still come and go: a second
// decider (nothing stops a caller from breaking the promise), RL.ALL groups,
// the sweep, scans and snapshots. Nothing deadlocks, and a hot key named in
// every pipeline admits exactly its capacity.
func TestTogetherRunsBesideOtherLockers(t *testing.T) {
	const capacity = 2000
	st := New(4)
	st.SetDeciders(1)
	stop := otherLockers(t, st)
	var admitted atomic.Int64
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		writers(4, func(w int, rng *rand.Rand) {
			for i := 0; i < 1000; i++ {
				reqs := make([]algorithms.Request, 0, 18)
				reqs = append(reqs, token("hot", time.Hour, capacity, 1)) // frozen instant: no refill
				for len(reqs) < 15 {
					reqs = append(reqs, token(fmt.Sprintf("w%d:%d", w, rng.IntN(5000)), time.Millisecond, 5, 1))
				}
				if i%5 == 0 { // an RL.ALL over keys of several shards
					for _, k := range []string{"a", "b", "c"} {
						r := token("all:"+k, time.Hour, 1<<40, 1)
						r.Group = int32(i + 1)
						reqs = append(reqs, r)
					}
				}
				out := make([]algorithms.Outcome, len(reqs))
				st.Decide(t0, reqs, out)
				for k := range out {
					if out[k].Err != nil {
						t.Error(out[k].Err)
						return
					}
				}
				if out[0].Result.Allowed {
					admitted.Add(1)
				}
			}
		})
	}()
	select {
	case <-finished:
	case <-time.After(60 * time.Second):
		t.Fatal("deciders still running after 60 s: a lock cycle?")
	}
	stop()
	if got := admitted.Load(); got != capacity {
		t.Fatalf("4 deciders × 1000 pipelines admitted %d on the hot key; want exactly %d", got, capacity)
	}
}

// BenchmarkBatch100kKeys4ShardsTogether is BenchmarkBatch100kKeys4Shards
// with one decider declared: each pipeline holds all its shards at once and
// prefetches across them.
func BenchmarkBatch100kKeys4ShardsTogether(b *testing.B) { benchScaleStep(b, 100_000, 4, 1, 1000) }
func BenchmarkBatch1MKeys4ShardsTogether(b *testing.B)   { benchScaleStep(b, 1_000_000, 4, 1, 1000) }
