package policy

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// Policies answers each name as Policy does, in every place a policy can
// be: the folded index, the trie of changes since (set again, deleted),
// a rules file's policies over the commands', and nowhere; for batches
// shorter and longer than the lookups it overlaps.
func TestPoliciesAnswersAsPolicyDoesForEachName(t *testing.T) {
	r := NewRegistry()
	base := make([]Policy, 3000)
	for i := range base {
		base[i] = tokenPolicy(fmt.Sprintf("key:%06d", i), 10)
	}
	if err := r.ReplaceCommanded(base); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 600; i++ { // under a quarter of the base: the changes stay in the trie
		var err error
		switch i % 3 {
		case 0:
			err = r.Set(tokenPolicy(fmt.Sprintf("key:%06d", i*5), 20)) // changed
		case 1:
			_, err = r.Delete(fmt.Sprintf("key:%06d", i*5)) // gone
		default:
			err = r.Set(tokenPolicy(fmt.Sprintf("new:%06d", i), 30)) // added
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	r.SetRules(fileRules(t, "policies:\n  - {name: key:000002, algorithm: fixed, limit: 7, window: 1m}\n"+
		"  - {name: only-file, algorithm: fixed, limit: 9, window: 1m}\n"))
	snap := r.Load()
	if snap.commands.delta.n == 0 || snap.commands.base.n == 0 {
		t.Fatalf("the set is not split between index (%d) and trie (%d)", snap.commands.base.n, snap.commands.delta.n)
	}

	var pool [][]byte
	for i := 0; i < 3100; i++ {
		pool = append(pool, fmt.Appendf(nil, "key:%06d", i), fmt.Appendf(nil, "new:%06d", i))
	}
	pool = append(pool, []byte("only-file"), []byte(""), []byte("nope"))
	rng := rand.New(rand.NewPCG(1, 2))
	found := 0
	for _, size := range []int{0, 1, 2, 15, 16, 17, 40, 100} {
		for round := 0; round < 50; round++ {
			names := make([][]byte, size)
			for k := range names {
				names[k] = pool[rng.IntN(len(pool))]
			}
			out := make([]*Policy, size)
			for k := range out {
				out[k] = &Policy{Name: "stale"} // every answer is written, nil included
			}
			snap.Policies(names, out)
			for k, name := range names {
				if want := snap.Policy(name); out[k] != want {
					t.Fatalf("Policies(%d names)[%d] (%q) = %+v; want %+v", size, k, name, out[k], want)
				}
				if out[k] != nil {
					found++
				}
			}
		}
	}
	if found == 0 {
		t.Fatal("no name was found")
	}
}

func TestPoliciesDoesNotAllocate(t *testing.T) {
	r := registryOf(t, 1000)
	names := make([][]byte, 16)
	for k := range names {
		names[k] = fmt.Appendf(nil, "key:%06d", k*61)
	}
	out := make([]*Policy, len(names))
	snap := r.Load()
	if n := testing.AllocsPerRun(100, func() { snap.Policies(names, out) }); n != 0 {
		t.Fatalf("Policies allocates %v times a call", n)
	}
}
