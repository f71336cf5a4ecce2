package policy

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
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
	if displaced(&snap.commands.base) == 0 {
		t.Fatal("no policy of the index is displaced from its home slot: the probe past it is not exercised")
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

// Once changes stop, the registry folds the trie of changes into the
// index: the same policies (the same values, the same pointers), which a
// lookup then finds without walking a trie; changes made while a fold is
// built are kept, and folded in turn.
func TestRegistryFoldsChangesOnceTheyStop(t *testing.T) {
	r := registryOf(t, 2000)
	for i := 0; i < 300; i++ {
		if err := r.Set(tokenPolicy(fmt.Sprintf("new:%06d", i), 30)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Delete("key:000007"); err != nil {
		t.Fatal(err)
	}
	before := r.Load()
	if before.commands.delta.n == 0 {
		t.Fatal("the changes were folded at once; want them in the trie")
	}
	names := [][]byte{[]byte("key:000001"), []byte("new:000299"), []byte("key:000007"), []byte("nope")}
	want := make([]*Policy, len(names))
	before.Policies(names, want)

	after := waitFolded(t, r)
	for k, name := range names {
		if got := after.Policy(name); got != want[k] {
			t.Errorf("after the fold %s = %+v; want %+v", name, got, want[k])
		}
	}
	if live, _, _, _ := after.Counts(); live != 2000+300-1 {
		t.Errorf("after the fold %d policies; want %d", live, 2000+300-1)
	}
	if fmt.Sprint(after.Commanded()) != fmt.Sprint(before.Commanded()) {
		t.Error("the fold changed the command-owned policies")
	}

	// A change after the fold is seen at once, and folded later.
	if err := r.Set(tokenPolicy("key:000001", 99)); err != nil {
		t.Fatal(err)
	}
	if p := r.Policy([]byte("key:000001")); p == nil || p.Limit.Count != 99 {
		t.Fatalf("key:000001 after its change = %+v", p)
	}
	if p := waitFolded(t, r).Policy([]byte("key:000001")); p == nil || p.Limit.Count != 99 {
		t.Fatalf("key:000001 after the second fold = %+v", p)
	}
}

// waitFolded returns r's snapshot once its trie of changes is folded, or
// fails after 10 s.
func waitFolded(t *testing.T, r *Registry) *Snapshot {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if s := r.Load(); s.commands.delta.n == 0 {
			return s
		}
	}
	t.Fatalf("the trie of changes still holds %d leaves after 10 s without changes", r.Load().commands.delta.n)
	return nil
}

// Changes that come from the log or a leader (Apply) and from the
// append-only log's parts (LoadSidecarParts) are folded as commands' are.
func TestRegistryFoldsChangesAppliedFromTheLog(t *testing.T) {
	r := registryOf(t, 2000)
	for i := 0; i < 300; i++ {
		if _, err := r.Apply(SetChange(tokenPolicy(fmt.Sprintf("new:%06d", i), 30))); err != nil {
			t.Fatal(err)
		}
	}
	if r.Load().commands.delta.n == 0 {
		t.Fatal("the changes were folded at once; want them in the trie")
	}
	if p := waitFolded(t, r).Policy([]byte("new:000299")); p == nil || p.Limit.Count != 30 {
		t.Fatalf("new:000299 after the fold = %+v", p)
	}

	var parts [][]byte
	for i := 0; i < 300; i++ {
		parts = append(parts, EncodePolicies([]byte{partSet}, []Policy{tokenPolicy(fmt.Sprintf("part:%06d", i), 40)}))
	}
	if err := r.LoadSidecarParts(nil, parts); err != nil {
		t.Fatal(err)
	}
	if r.Load().commands.delta.n == 0 {
		t.Fatal("the parts were folded at once; want them in the trie")
	}
	if p := waitFolded(t, r).Policy([]byte("part:000299")); p == nil || p.Limit.Count != 40 {
		t.Fatalf("part:000299 after the fold = %+v", p)
	}
}

// Writers and readers while folds are built and installed: every change
// is kept, and no snapshot loses a policy (run under -race).
func TestRegistryFoldsDoNotLoseConcurrentChanges(t *testing.T) {
	r := registryOf(t, 500)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		name := []byte("key:000123")
		for {
			select {
			case <-stop:
				return
			default:
			}
			if r.Policy(name) == nil {
				t.Error("a reader missed key:000123")
				return
			}
		}
	}()
	deadline := time.Now().Add(3 * foldIdle)
	n := 0
	for ; time.Now().Before(deadline); n++ {
		if err := r.Set(tokenPolicy(fmt.Sprintf("new:%06d", n), 1)); err != nil {
			t.Fatal(err)
		}
		if n%50 == 0 {
			time.Sleep(foldIdle / 4) // pauses shorter than foldIdle
		}
	}
	close(stop)
	<-done
	time.Sleep(2 * foldIdle) // a fold now runs
	s := r.Load()
	if live, _, _, _ := s.Counts(); live != 500+n {
		t.Fatalf("%d policies; want %d", live, 500+n)
	}
	for i := 0; i < n; i++ {
		if s.Policy(fmt.Appendf(nil, "new:%06d", i)) == nil {
			t.Fatalf("new:%06d is missing", i)
		}
	}
}

// displaced counts the policies of x that do not sit in their home slot
// (linear probing moved them on).
func displaced(x *policyIndex) int {
	n, mask := 0, uint64(len(x.slots)-1)
	for i, sl := range x.slots {
		if sl.p != nil && sl.h&mask != uint64(i) {
			n++
		}
	}
	return n
}
