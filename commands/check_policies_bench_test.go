package commands

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
)

// RL.CHECK at the number of policies a gateway with a policy per API key
// holds, beside RL.TOKEN on as many keys: pipelines of 16 decisions, over
// 16,384 subjects, each subject under a policy of its own spread over the
// table, so that lookups and the per-policy counts meet cold policies.

const spreadPairs = 16384

func BenchmarkCheckPolicies(b *testing.B) {
	b.Run("token", func(b *testing.B) {
		benchSpread(b, 0, func(j int) []string { return []string{"RL.TOKEN", key(j), "1000/s", "100000"} })
	})
	// RL.TOKEN on the keys RL.CHECK derives at 100,000 policies
	// (pol:key%3A000123:token:user:…): the store's part of the difference.
	b.Run("token-derived-keys", func(b *testing.B) {
		benchSpread(b, 0, func(j int) []string {
			name := fmt.Sprintf("key:%06d", (j*7919)%100000)
			return []string{"RL.TOKEN", string(policy.AppendCheckKey(nil, name, algorithms.Token, []byte(key(j)))), "1000/s", "100000"}
		})
	})
	for _, n := range []int{1, 10000, 100000} {
		b.Run(fmt.Sprintf("policies=%d", n), func(b *testing.B) {
			benchSpread(b, n, func(j int) []string {
				return []string{"RL.CHECK", fmt.Sprintf("key:%06d", (j*7919)%n), key(j)}
			})
		})
	}
}

// benchSpread defines n token policies key:000000 … and runs b.N
// commands mk(j), benchBatch per batch, j going round spreadPairs.
func benchSpread(b *testing.B, n int, mk func(j int) []string) {
	h, c := loopbackOn(b, DefaultConfig(), store.New(16))
	ps := make([]policy.Policy, n)
	for i := range ps {
		ps[i] = policy.Policy{Name: fmt.Sprintf("key:%06d", i),
			Limit: algorithms.Limit{Algo: algorithms.Token, Count: 100000, Period: int64(time.Millisecond)}}
	}
	if err := h.cfg.Policies.ReplaceCommanded(ps); err != nil {
		b.Fatal(err)
	}
	batches := make([][]byte, spreadPairs/benchBatch)
	for i := range batches {
		var batch strings.Builder
		for k := 0; k < benchBatch; k++ {
			batch.WriteString(frame(mk(i*benchBatch + k)...))
		}
		batches[i] = []byte(batch.String())
	}
	for _, in := range batches { // warm up: keys, buffers, counts
		feed(b, c, in)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += benchBatch {
		feed(b, c, batches[(i/benchBatch)%len(batches)])
	}
}
