package policy

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// A Set copies the path to one name, not the table: the bytes it
// allocates do not grow with the number of policies.
func TestRegistrySetCopiesAPathNotTheTable(t *testing.T) {
	const n = 50000
	r := NewRegistry()
	ps := make([]Policy, n)
	for i := range ps {
		ps[i] = tokenPolicy(fmt.Sprintf("key:%06d", i), 10)
	}
	if err := r.ReplaceCommanded(ps); err != nil {
		t.Fatal(err)
	}
	const sets = 200
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 0; i < sets; i++ {
		if err := r.Set(tokenPolicy(fmt.Sprintf("new:%06d", i), 10)); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	perSet := (after.TotalAlloc - before.TotalAlloc) / sets
	// A path of a few 32-way branches is a few KB; a copy of the table
	// is megabytes.
	if perSet > 32<<10 {
		t.Fatalf("Set at %d policies allocates %d bytes; want at most %d (a path of the trie)", n, perSet, 32<<10)
	}
	if _, got, _, _ := r.Load().Counts(); got != n+sets {
		t.Fatalf("%d policies; want %d", got, n+sets)
	}
}

// RL.CHECK's lookup allocates nothing, in the index and in the trie of
// changes since.
func TestRegistryLookupInIndexAndTrieDoesNotAllocate(t *testing.T) {
	r := NewRegistry()
	ps := make([]Policy, 1000)
	for i := range ps {
		ps[i] = tokenPolicy(fmt.Sprintf("key:%06d", i), 10)
	}
	if err := r.ReplaceCommanded(ps); err != nil {
		t.Fatal(err)
	}
	if err := r.Set(tokenPolicy("new", 1)); err != nil {
		t.Fatal(err)
	}
	names := [][]byte{[]byte("key:000500"), []byte("new"), []byte("absent-name-longer-than-32-bytes-xxxxxxxx")}
	allocs := testing.AllocsPerRun(100, func() {
		for _, n := range names {
			r.Policy(n)
		}
	})
	if allocs != 0 {
		t.Fatalf("a lookup allocates %.1f times; want 0", allocs)
	}
}

// hold keeps every field, whatever the name's length.
func TestHoldKeepsThePolicy(t *testing.T) {
	for _, n := range []int{1, 16, 17, 32, 33, 64, 65, MaxNameLen} {
		p := tokenPolicy(strings.Repeat("n", n), 7)
		p.Shadow, p.Description = true, "d"
		q := hold(p)
		if *q != p {
			t.Fatalf("hold of a %d-byte name = %+v; want %+v", n, *q, p)
		}
	}
}
