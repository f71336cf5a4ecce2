package policy

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
)

// The command-owned set against a map, through random sets and deletions
// (with folds of the trie into the map on the way), with earlier versions
// kept: a change never shows in a version taken before it.
func TestCommandSetAgreesWithAMapAndKeepsOldVersions(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	type version struct {
		set  commandSet
		want map[string]*Policy
	}
	var cs commandSet
	want := map[string]*Policy{}
	var versions []version
	folds := 0
	for step := 0; step < 20000; step++ {
		name := fmt.Sprintf("k%d", rng.IntN(3000))
		before := cs.base.n
		if rng.IntN(3) == 0 {
			var ok bool
			cs, ok = cs.without(name)
			if _, had := want[name]; ok != had {
				t.Fatalf("step %d: without(%s) = %v; want %v", step, name, ok, had)
			}
			delete(want, name)
		} else {
			p := &Policy{Name: name, Description: fmt.Sprint(step)}
			cs = cs.with(p)
			want[name] = p
		}
		if cs.delta.n == 0 && cs.base.n != before {
			folds++
		}
		if step%997 == 0 {
			versions = append(versions, version{cs, clonePolicies(want)})
		}
	}
	if folds == 0 {
		t.Fatal("the delta never folded into the base")
	}
	all := make([]*Policy, 0, len(want))
	for _, p := range want {
		all = append(all, p)
	}
	versions = append(versions, version{cs, want}, version{commandSetOf(all), want}, version{commandSet{}, nil})
	for i, v := range versions {
		if v.set.n != len(v.want) {
			t.Fatalf("version %d: n = %d; want %d", i, v.set.n, len(v.want))
		}
		for k := 0; k < 3000; k++ {
			name := fmt.Sprintf("k%d", k)
			if got, w := v.set.get([]byte(name)), v.want[name]; got != w {
				t.Fatalf("version %d: get(%s) = %v; want %v", i, name, got, w)
			}
			if got, w := v.set.getString(name), v.want[name]; got != w {
				t.Fatalf("version %d: getString(%s) = %v; want %v", i, name, got, w)
			}
		}
		var names []string
		v.set.each(func(p *Policy) {
			if v.want[p.Name] != p {
				t.Fatalf("version %d: each gave %s = %v; want %v", i, p.Name, p, v.want[p.Name])
			}
			names = append(names, p.Name)
		})
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

func clonePolicies(m map[string]*Policy) map[string]*Policy {
	out := make(map[string]*Policy, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// The collision lists at the last level, with hashes made to collide.
func TestNameTrieCollisionList(t *testing.T) {
	leaf := func(name string) trieSlot { return trieSlot{p: &Policy{Name: name}} }
	s := pairSlot(leaf("a"), leaf("b"), 7, 7, trieLevels-1)
	if len(s.kids) != 1 || len(s.kids[0].kids) != 2 {
		t.Fatalf("pairSlot of equal hashes = %+v; want a branch of a collision list of 2", s)
	}
	l := s.kids[0]
	l2, added := insertSlot(&l, leaf("c"), 0, trieLevels)
	if !added || len(l2.kids) != 3 || len(l.kids) != 2 {
		t.Fatalf("insert into a collision list: added %v, %d kids (old %d); want true, 3 (2)", added, len(l2.kids), len(l.kids))
	}
	a2 := trieSlot{p: &Policy{Name: "a", Description: "2"}}
	l3, added := insertSlot(&l2, a2, 0, trieLevels)
	if added || len(l3.kids) != 3 || l3.kids[0].p != a2.p || l2.kids[0].p == a2.p {
		t.Fatalf("replace in a collision list: added %v, kids %+v", added, l3.kids)
	}
}
