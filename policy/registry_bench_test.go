package policy

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// RL.POLICY SET and RL.CHECK's lookup at the number of policies a gateway
// with a policy per API key holds: both must cost the same at 1k and 100k.

// registryOf returns a registry of n command-owned token policies named
// key:000000 ….
func registryOf(b testing.TB, n int) *Registry {
	b.Helper()
	r := NewRegistry()
	ps := make([]Policy, n)
	for i := range ps {
		ps[i] = tokenPolicy(fmt.Sprintf("key:%06d", i), 10)
	}
	if err := r.ReplaceCommanded(ps); err != nil {
		b.Fatal(err)
	}
	return r
}

var registrySizes = []int{1, 1000, 10000, 100000}

func BenchmarkPolicySet(b *testing.B) {
	for _, n := range registrySizes[1:] {
		b.Run(fmt.Sprintf("existing=%d", n), func(b *testing.B) {
			r := registryOf(b, n)
			names := make([]string, 4096)
			for i := range names {
				names[i] = fmt.Sprintf("new:%06d", i)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if err := r.Set(tokenPolicy(names[i%len(names)], 10)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkPolicyLookup(b *testing.B) {
	for _, n := range registrySizes {
		b.Run(fmt.Sprintf("policies=%d", n), func(b *testing.B) {
			r := registryOf(b, n)
			names := make([][]byte, min(n, 4096))
			for i := range names {
				names[i] = fmt.Appendf(nil, "key:%06d", (i*7919)%n)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if r.Policy(names[i%len(names)]) == nil {
					b.Fatal("a policy is missing")
				}
			}
		})
	}
}

// BenchmarkPolicyLookupBatch is BenchmarkPolicyLookup sixteen names at a
// time through Snapshot.Policies, as a pipeline's RL.CHECKs look theirs
// up; ns/op is per name.
func BenchmarkPolicyLookupBatch(b *testing.B) {
	for _, n := range registrySizes {
		b.Run(fmt.Sprintf("policies=%d", n), func(b *testing.B) {
			r := registryOf(b, n)
			names := make([][]byte, 4096)
			for i := range names {
				names[i] = fmt.Appendf(nil, "key:%06d", (i*7919)%n)
			}
			lookUpInBatches(b, r, names)
		})
	}
}

// BenchmarkPolicyLookupBatchSpread is BenchmarkPolicyLookupBatch over
// every policy of the table in a random order, as bench's
// sluice-check-100k asks for them: the table does not fit in a core's
// cache, and each batch's lookups meet cold index slots and policies.
func BenchmarkPolicyLookupBatchSpread(b *testing.B) {
	const n = 100000
	r := registryOf(b, n)
	names := make([][]byte, n-n%batchMax)
	for i, j := range rand.New(rand.NewPCG(1, 2)).Perm(n)[:len(names)] {
		names[i] = fmt.Appendf(nil, "key:%06d", j)
	}
	lookUpInBatches(b, r, names)
}

// lookUpInBatches looks names up batchMax at a time, b.N names in all;
// len(names) is a multiple of batchMax.
func lookUpInBatches(b *testing.B, r *Registry, names [][]byte) {
	out := make([]*Policy, batchMax)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += batchMax {
		at := i % len(names)
		r.Load().Policies(names[at:at+batchMax], out)
		if out[0] == nil {
			b.Fatal("a policy is missing")
		}
	}
}
