package policy

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
)

// The trie against a map, through random sets and deletions, with every
// earlier version kept: a change never shows in a version taken before it.
func TestNameTrieAgreesWithAMapAndKeepsOldVersions(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	type version struct {
		trie nameTrie
		want map[string]*Policy
	}
	var tr nameTrie
	want := map[string]*Policy{}
	var versions []version
	for step := 0; step < 20000; step++ {
		name := fmt.Sprintf("k%d", rng.IntN(3000))
		if rng.IntN(3) == 0 {
			var ok bool
			tr, ok = tr.without(name)
			if _, had := want[name]; ok != had {
				t.Fatalf("step %d: without(%s) = %v; want %v", step, name, ok, had)
			}
			delete(want, name)
		} else {
			p := &Policy{Name: name, Description: fmt.Sprint(step)}
			tr = tr.with(p)
			want[name] = p
		}
		if step%997 == 0 {
			versions = append(versions, version{tr, maps(want)})
		}
	}
	versions = append(versions, version{tr, want})
	var all []*Policy
	for _, p := range want {
		all = append(all, p)
	}
	versions = append(versions, version{buildTrie(all), want}, version{buildTrie(nil), map[string]*Policy{}})
	for i, v := range versions {
		if v.trie.n != len(v.want) {
			t.Fatalf("version %d: n = %d; want %d", i, v.trie.n, len(v.want))
		}
		for k := 0; k < 3000; k++ {
			name := fmt.Sprintf("k%d", k)
			if got, w := v.trie.get([]byte(name)), v.want[name]; got != w {
				t.Fatalf("version %d: get(%s) = %v; want %v", i, name, got, w)
			}
			if got, w := v.trie.getString(name), v.want[name]; got != w {
				t.Fatalf("version %d: getString(%s) = %v; want %v", i, name, got, w)
			}
		}
		var names []string
		v.trie.each(func(p *Policy) { names = append(names, p.Name) })
		if len(names) != len(v.want) {
			t.Fatalf("version %d: each gave %d policies; want %d", i, len(names), len(v.want))
		}
		sort.Strings(names)
		for j := 1; j < len(names); j++ {
			if names[j] == names[j-1] {
				t.Fatalf("version %d: each gave %s twice", i, names[j])
			}
		}
	}
}

func maps(m map[string]*Policy) map[string]*Policy {
	out := make(map[string]*Policy, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// The collision lists at the last level, with hashes made to collide.
func TestNameTrieCollisionList(t *testing.T) {
	a, b, c := &Policy{Name: "a"}, &Policy{Name: "b"}, &Policy{Name: "c"}
	s := pairSlot(a, b, 7, 7, trieLevels-1)
	if len(s.kids) != 1 || len(s.kids[0].kids) != 2 {
		t.Fatalf("pairSlot of equal hashes = %+v; want a branch of a collision list of 2", s)
	}
	l := s.kids[0]
	l2, added := insertSlot(&l, c, 0, trieLevels)
	if !added || len(l2.kids) != 3 || len(l.kids) != 2 {
		t.Fatalf("insert into a collision list: added %v, %d kids (old %d); want true, 3 (2)", added, len(l2.kids), len(l.kids))
	}
	a2 := &Policy{Name: "a", Description: "2"}
	l3, added := insertSlot(&l2, a2, 0, trieLevels)
	if added || len(l3.kids) != 3 || l3.kids[0].p != a2 || l2.kids[0].p != a {
		t.Fatalf("replace in a collision list: added %v, kids %+v", added, l3.kids)
	}
	l4, removed := removeSlot(&l3, "b", 0, trieLevels)
	if !removed || len(l4.kids) != 2 || len(l3.kids) != 3 {
		t.Fatalf("remove from a collision list: removed %v, %d kids", removed, len(l4.kids))
	}
	if _, removed := removeSlot(&l4, "zz", 0, trieLevels); removed {
		t.Fatal("removed a name the list does not hold")
	}
}
