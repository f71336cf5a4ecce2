package policy

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/algorithms"
)

func tokenPolicy(name string, count int64) Policy {
	return Policy{Name: name, Limit: algorithms.Limit{Algo: algorithms.Token, Count: count, Period: int64(100 * time.Millisecond)}}
}

func fileRules(t *testing.T, yaml string) *RuleSet {
	t.Helper()
	rs, err := Parse([]File{{Name: "rules.yaml", Data: []byte(yaml)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestRegistrySetGetDeleteList(t *testing.T) {
	r := NewRegistry()
	if r.Policy([]byte("free")) != nil || r.Rules() != nil {
		t.Fatal("a new registry holds something")
	}
	for _, p := range []Policy{tokenPolicy("free", 20), tokenPolicy("pro", 200), tokenPolicy("api:x", 5)} {
		if err := r.Set(p); err != nil {
			t.Fatal(err)
		}
	}
	if p := r.Policy([]byte("pro")); p == nil || p.Limit.Count != 200 || p.FromFile() {
		t.Fatalf("pro = %+v", p)
	}
	before := r.Load()
	if err := r.Set(tokenPolicy("pro", 300)); err != nil {
		t.Fatal(err)
	}
	if before.Policy([]byte("pro")).Limit.Count != 200 || r.Policy([]byte("pro")).Limit.Count != 300 {
		t.Fatal("a snapshot changed under its reader, or the new value is missing")
	}
	var names []string
	for _, p := range r.Load().List(func(n string) bool { return !strings.Contains(n, ":") }) {
		names = append(names, p.Name)
	}
	if strings.Join(names, ",") != "free,pro" {
		t.Fatalf("List = %v", names)
	}
	if ok, err := r.Delete("free"); !ok || err != nil {
		t.Fatalf("Delete(free) = %v, %v", ok, err)
	}
	if ok, err := r.Delete("free"); ok || err != nil {
		t.Fatalf("Delete(free) again = %v, %v", ok, err)
	}
	if err := r.Set(Policy{Name: "bad name", Limit: tokenPolicy("x", 1).Limit}); !errors.Is(err, ErrInvalidName) {
		t.Fatalf("bad name: %v", err)
	}
	if err := r.Set(Policy{Name: "f", Limit: tokenPolicy("x", 1).Limit, File: "x.yaml"}); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("a file's policy through Set: %v", err)
	}
}

func TestRegistryFilePoliciesAreReadOnlyAndHideCommandOnes(t *testing.T) {
	r := NewRegistry()
	if err := r.Set(tokenPolicy("free", 1)); err != nil {
		t.Fatal(err)
	}
	rs := fileRules(t, "policies:\n  - {name: free, algorithm: fixed, limit: 7, window: 1m}\n  - {name: gold, algorithm: fixed, limit: 9, window: 1m}\n")
	r.SetRules(rs)
	if p := r.Policy([]byte("free")); p.Limit.Count != 7 || p.File != "rules.yaml" {
		t.Fatalf("free = %+v; want the file's", p)
	}
	err := r.Set(tokenPolicy("gold", 1))
	if !errors.Is(err, ErrReadOnly) || err.Error() != "policy 'gold' is read-only: it comes from the rules file rules.yaml" {
		t.Fatalf("Set on a file's name: %v", err)
	}
	if _, err := r.Delete("free"); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Delete on a file's name: %v", err)
	}
	if live, cmds, files, hidden := r.Load().Counts(); live != 2 || cmds != 1 || files != 2 || hidden != 1 {
		t.Fatalf("Counts = %d %d %d %d", live, cmds, files, hidden)
	}
	if got := r.Load().Commanded(); len(got) != 1 || got[0].Limit.Count != 1 {
		t.Fatalf("Commanded = %+v", got)
	}
	// The file drops its policies: the command's comes back.
	r.SetRules(fileRules(t, "domain: d\n"))
	if p := r.Policy([]byte("free")); p.Limit.Count != 1 || r.Policy([]byte("gold")) != nil {
		t.Fatalf("after the file dropped them: free %+v, gold %+v", p, r.Policy([]byte("gold")))
	}
	if !r.Rules().HasDomain([]byte("d")) {
		t.Fatal("the rules were not installed")
	}
}

func TestRegistrySnapshotEncodingRoundTrips(t *testing.T) {
	r := NewRegistry()
	ps := []Policy{
		{Name: "z", Limit: algorithms.Limit{Algo: algorithms.Log, Count: 100, Period: 60e9}, Shadow: true, Description: "zed"},
		tokenPolicy("a", 3),
		{Name: "m:n", Limit: algorithms.Limit{Algo: algorithms.Concurrency, Count: 4, Period: 30e9}},
	}
	for _, p := range ps {
		if err := r.Set(p); err != nil {
			t.Fatal(err)
		}
	}
	enc := EncodePolicies(nil, r.Load().Commanded())
	if again := EncodePolicies(nil, []Policy{ps[2], ps[0], ps[1]}); string(again) != string(enc) {
		t.Fatal("the encoding depends on the order")
	}
	back, err := DecodePolicies(enc)
	if err != nil {
		t.Fatal(err)
	}
	r2 := NewRegistry()
	if err := r2.ReplaceCommanded(back); err != nil {
		t.Fatal(err)
	}
	if got := EncodePolicies(nil, r2.Load().Commanded()); string(got) != string(enc) {
		t.Fatal("restored registry encodes differently")
	}
	if p := r2.Policy([]byte("z")); p == nil || *p != ps[0] {
		t.Fatalf("z = %+v", p)
	}
	dup := EncodePolicies(nil, []Policy{ps[1], ps[1]})
	for _, b := range [][]byte{nil, []byte("SLPO\x02\x00"), enc[:len(enc)-1], append(enc, 0), dup} {
		if _, err := DecodePolicies(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodePolicies(%q) = %v; want ErrCorrupt", b, err)
		}
	}
	if err := r2.ReplaceCommanded([]Policy{ps[1], ps[1]}); err == nil {
		t.Error("ReplaceCommanded took a name twice")
	}
}

// TestRegistryReadersNeverSeeAHalfWrite runs readers against writers that
// swap whole rule sets and policies: every snapshot a reader takes is
// internally consistent (its rule set and its file policy come from the
// same file version). Run under -race.
func TestRegistryReadersNeverSeeAHalfWrite(t *testing.T) {
	r := NewRegistry()
	sets := make([]*RuleSet, 4)
	for v := range sets {
		sets[v] = fileRules(t, fmt.Sprintf("domain: v%d\npolicies:\n  - {name: p, algorithm: fixed, limit: %d, window: 1s}\n", v, v+1))
	}
	r.SetRules(sets[0])
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var bad sync.Once
	var failure string
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				s := r.Load()
				v := s.Policy([]byte("p")).Limit.Count - 1
				if !s.Rules().HasDomain([]byte(fmt.Sprintf("v%d", v))) {
					bad.Do(func() { failure = fmt.Sprintf("policy of version %d with rules %v", v, s.Rules().Domains()) })
				}
			}
		}()
	}
	for i := 0; i < 2000; i++ {
		r.SetRules(sets[i%len(sets)])
		if err := r.Set(tokenPolicy(fmt.Sprintf("c%d", i%50), int64(i+1))); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if failure != "" {
		t.Fatal(failure)
	}
}

func TestRegistryLookupDoesNotAllocate(t *testing.T) {
	r := NewRegistry()
	for i := 0; i < 100; i++ {
		if err := r.Set(tokenPolicy(fmt.Sprintf("tier%d", i), 10)); err != nil {
			t.Fatal(err)
		}
	}
	name := []byte("tier42")
	if n := testing.AllocsPerRun(1000, func() {
		if r.Policy(name) == nil {
			t.Fatal("missing")
		}
	}); n != 0 {
		t.Fatalf("Policy allocates %v times per lookup", n)
	}
}

func BenchmarkRegistryLookup(b *testing.B) {
	r := NewRegistry()
	for i := 0; i < 100; i++ {
		if err := r.Set(tokenPolicy(fmt.Sprintf("tier%d", i), 10)); err != nil {
			b.Fatal(err)
		}
	}
	name := []byte("tier42")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r.Policy(name) == nil {
			b.Fatal("missing")
		}
	}
}

func BenchmarkRegistryLookupParallel(b *testing.B) {
	r := NewRegistry()
	for i := 0; i < 100; i++ {
		if err := r.Set(tokenPolicy(fmt.Sprintf("tier%d", i), 10)); err != nil {
			b.Fatal(err)
		}
	}
	name := []byte("tier42")
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if r.Policy(name) == nil {
				b.Fatal("missing")
			}
		}
	})
}
