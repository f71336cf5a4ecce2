//go:build unix

package store

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/internal/testutil"
)

// BenchmarkShardContention measures what the shard locks cost as deciders
// are added: GOMAXPROCS goroutines (go test -cpu 1,2,4,8) decide pipelines
// of 16 token buckets at once, as that many event loops would, on a store
// set up as the server sets it up for them (2 × GOMAXPROCS shards, at least
// 4; SetDeciders). ns/op is wall time per decision over all goroutines, so
// perfect scaling halves it with each doubling of cores the machine really
// has; wait-ns/op is the time goroutines spent blocked on a mutex per
// decision (runtime/metrics /sync/mutex/wait/total:seconds: the shards'
// locks, and the runtime's own, which a mutex profile tells apart), the
// contention itself; cpu-ns/op is the process's CPU time (user and system)
// per decision, which other work on the machine does not inflate as it does
// wall time, and which grows with contention (spinning, futex calls). Keys: 100,000 drawn uniformly (every pipeline touches
// most shards), 16 hot keys, and one key (every decision on one lock).
func BenchmarkShardContention(b *testing.B) {
	for _, nkeys := range []int{100_000, 16, 1} {
		b.Run(fmt.Sprintf("keys=%d", nkeys), func(b *testing.B) { benchContention(b, nkeys) })
	}
}

func benchContention(b *testing.B, nkeys int) {
	procs := runtime.GOMAXPROCS(0)
	st := New(max(4, 2*procs))
	st.SetDeciders(procs)
	keys := make([][]byte, nkeys)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("user:%08d", i))
	}
	// A bucket that always admits (a million per second, far above the
	// rate decided here), so that every decision writes its entry.
	one := []algorithms.Request{token("", time.Microsecond, 1_000_000, 1)}
	for i := range keys {
		one[0].Key = keys[i]
		st.Decide(t0, one, make([]algorithms.Outcome, 1))
	}
	var seed atomic.Int64
	waited, cpu := mutexWait(), testutil.ProcessCPU()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		reqs := make([]algorithms.Request, 16)
		for i := range reqs {
			reqs[i] = token("", time.Microsecond, 1_000_000, 1)
		}
		out := make([]algorithms.Outcome, len(reqs))
		x := xorshift(88172645463325252 + uint64(seed.Add(1))*0x9E3779B97F4A7C15)
		now := t0 // each goroutine's own clock, as each event loop reads its own
		for {
			for j := range reqs {
				if !pb.Next() {
					if j > 0 {
						st.Decide(now+1000, reqs[:j], out[:j])
					}
					return
				}
				reqs[j].Key = keys[x.next()%uint64(nkeys)]
			}
			now += 1000
			st.Decide(now, reqs, out)
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(mutexWait()-waited)/float64(b.N), "wait-ns/op")
	b.ReportMetric(float64(testutil.ProcessCPU()-cpu)/float64(b.N), "cpu-ns/op")
}

// mutexWait is the process's cumulative time blocked on mutexes, in
// nanoseconds.
func mutexWait() int64 {
	s := []metrics.Sample{{Name: "/sync/mutex/wait/total:seconds"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64 {
		return 0
	}
	return int64(s[0].Value.Float64() * 1e9)
}
