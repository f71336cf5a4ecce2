package policy

import (
	"cmp"
	"hash/maphash"
	"math/bits"
	"slices"
)

// nameTrie is a persistent map from a policy's name to the policy: a hash
// array mapped trie of 32-way branches over the name's 64-bit hash. A
// change returns a new trie that shares every branch but those on the
// path to the changed name (at most trieLevels branches of at most 32
// slots), so that a writer copies O(log n) slots, not the table, and the
// readers of the old trie see it unchanged.
//
// A nameTrie value is immutable: with and without return new ones.
// Readers need no lock. The zero nameTrie is empty.
type nameTrie struct {
	root trieSlot // a branch, always
	n    int
}

// trieSlot is a leaf (p set) or a branch (kids set; bits says which of
// the 32 hash digits of its level are present, kids holding them in digit
// order). At depth trieLevels the hash is used up: a branch there is a
// list of leaves whose hashes collide, bits unused.
type trieSlot struct {
	bits uint32
	kids []trieSlot
	p    *Policy
}

// trieLevels is how many 5-bit digits of the hash the trie uses.
const trieLevels = 12

// trieSeed seeds the names' hashes; the trie's shape, never its contents,
// differs from process to process.
var trieSeed = maphash.MakeSeed()

// get returns the policy named name, or nil. It does not allocate.
func (t *nameTrie) get(name []byte) *Policy {
	h := maphash.Bytes(trieSeed, name)
	s := &t.root
	for depth := 0; ; depth++ {
		if s.p != nil {
			if s.p.Name == string(name) {
				return s.p
			}
			return nil
		}
		if depth == trieLevels {
			for i := range s.kids {
				if s.kids[i].p.Name == string(name) {
					return s.kids[i].p
				}
			}
			return nil
		}
		bit := uint32(1) << (h & 31)
		if s.bits&bit == 0 {
			return nil
		}
		s = &s.kids[bits.OnesCount32(s.bits&(bit-1))]
		h >>= 5
	}
}

// getString is get for a string name.
func (t *nameTrie) getString(name string) *Policy {
	h := maphash.String(trieSeed, name)
	s := &t.root
	for depth := 0; ; depth++ {
		if s.p != nil {
			if s.p.Name == name {
				return s.p
			}
			return nil
		}
		if depth == trieLevels {
			for i := range s.kids {
				if s.kids[i].p.Name == name {
					return s.kids[i].p
				}
			}
			return nil
		}
		bit := uint32(1) << (h & 31)
		if s.bits&bit == 0 {
			return nil
		}
		s = &s.kids[bits.OnesCount32(s.bits&(bit-1))]
		h >>= 5
	}
}

// with returns t with p under p.Name (added or replaced).
func (t nameTrie) with(p *Policy) nameTrie {
	root, added := insertSlot(&t.root, p, maphash.String(trieSeed, p.Name), 0)
	if added {
		t.n++
	}
	t.root = root
	return t
}

// without returns t without the policy named name, and whether it held one.
func (t nameTrie) without(name string) (nameTrie, bool) {
	root, removed := removeSlot(&t.root, name, maphash.String(trieSeed, name), 0)
	if !removed {
		return t, false
	}
	t.root = root
	t.n--
	return t, true
}

// each calls fn for every policy of t, in no particular order.
func (t *nameTrie) each(fn func(p *Policy)) { eachSlot(&t.root, fn) }

func eachSlot(s *trieSlot, fn func(p *Policy)) {
	if s.p != nil {
		fn(s.p)
		return
	}
	for i := range s.kids {
		eachSlot(&s.kids[i], fn)
	}
}

// insertSlot returns a copy of branch s, at depth, with p added or
// replaced; h is p's hash shifted to depth. It reports whether p was added.
func insertSlot(s *trieSlot, p *Policy, h uint64, depth int) (trieSlot, bool) {
	if depth == trieLevels {
		for i := range s.kids {
			if s.kids[i].p.Name == p.Name {
				kids := append([]trieSlot(nil), s.kids...)
				kids[i] = trieSlot{p: p}
				return trieSlot{kids: kids}, false
			}
		}
		kids := make([]trieSlot, len(s.kids), len(s.kids)+1)
		copy(kids, s.kids)
		return trieSlot{kids: append(kids, trieSlot{p: p})}, true
	}
	bit := uint32(1) << (h & 31)
	i := bits.OnesCount32(s.bits & (bit - 1))
	if s.bits&bit == 0 {
		kids := make([]trieSlot, len(s.kids)+1)
		copy(kids, s.kids[:i])
		kids[i] = trieSlot{p: p}
		copy(kids[i+1:], s.kids[i:])
		return trieSlot{bits: s.bits | bit, kids: kids}, true
	}
	kids := append([]trieSlot(nil), s.kids...)
	added := false
	switch old := &s.kids[i]; {
	case old.p != nil && old.p.Name == p.Name:
		kids[i] = trieSlot{p: p}
	case old.p != nil:
		kids[i] = pairSlot(old.p, p, maphash.String(trieSeed, old.p.Name)>>(5*(depth+1)), h>>5, depth+1)
		added = true
	default:
		kids[i], added = insertSlot(old, p, h>>5, depth+1)
	}
	return trieSlot{bits: s.bits, kids: kids}, added
}

// pairSlot returns the branch, at depth, that holds the two leaves a and
// b, whose hashes shifted to depth are ha and hb.
func pairSlot(a, b *Policy, ha, hb uint64, depth int) trieSlot {
	if depth == trieLevels {
		return trieSlot{kids: []trieSlot{{p: a}, {p: b}}}
	}
	da, db := uint32(ha&31), uint32(hb&31)
	if da == db {
		return trieSlot{bits: 1 << da, kids: []trieSlot{pairSlot(a, b, ha>>5, hb>>5, depth+1)}}
	}
	if da > db {
		a, b, da, db = b, a, db, da
	}
	return trieSlot{bits: 1<<da | 1<<db, kids: []trieSlot{{p: a}, {p: b}}}
}

// removeSlot returns a copy of branch s, at depth, without the policy
// named name (h its hash shifted to depth), and whether s held it. A
// branch left with one leaf becomes that leaf in its parent, so that
// lookups stay short after deletions.
func removeSlot(s *trieSlot, name string, h uint64, depth int) (trieSlot, bool) {
	if depth == trieLevels {
		for i := range s.kids {
			if s.kids[i].p.Name == name {
				kids := make([]trieSlot, 0, len(s.kids)-1)
				kids = append(append(kids, s.kids[:i]...), s.kids[i+1:]...)
				return trieSlot{kids: kids}, true
			}
		}
		return *s, false
	}
	bit := uint32(1) << (h & 31)
	if s.bits&bit == 0 {
		return *s, false
	}
	i := bits.OnesCount32(s.bits & (bit - 1))
	old := &s.kids[i]
	var repl trieSlot
	switch {
	case old.p != nil && old.p.Name == name:
		// the leaf goes: repl stays empty
	case old.p != nil:
		return *s, false
	default:
		var removed bool
		if repl, removed = removeSlot(old, name, h>>5, depth+1); !removed {
			return *s, false
		}
		if repl.p == nil && len(repl.kids) == 1 && repl.kids[0].p != nil {
			repl = repl.kids[0]
		}
	}
	if repl.p == nil && len(repl.kids) == 0 {
		kids := make([]trieSlot, 0, len(s.kids)-1)
		kids = append(append(kids, s.kids[:i]...), s.kids[i+1:]...)
		return trieSlot{bits: s.bits &^ bit, kids: kids}, true
	}
	kids := append([]trieSlot(nil), s.kids...)
	kids[i] = repl
	return trieSlot{bits: s.bits, kids: kids}, true
}

// buildTrie returns the trie of ps, whose names are unique, built at once:
// branches allocated in the order a walk meets them, and no garbage.
func buildTrie(ps []*Policy) nameTrie {
	type entry struct {
		key uint64 // the hash's digits, the first level's most significant
		h   uint64
		p   *Policy
	}
	es := make([]entry, len(ps))
	for i, p := range ps {
		h := maphash.String(trieSeed, p.Name)
		var key uint64
		for d := 0; d < trieLevels; d++ {
			key = key<<5 | h>>(5*d)&31
		}
		es[i] = entry{key, h, p}
	}
	slices.SortFunc(es, func(a, b entry) int { return cmp.Compare(a.key, b.key) })
	var build func(es []entry, depth int) trieSlot
	build = func(es []entry, depth int) trieSlot {
		if depth == trieLevels {
			kids := make([]trieSlot, len(es))
			for i := range es {
				kids[i].p = es[i].p
			}
			return trieSlot{kids: kids}
		}
		var s trieSlot
		n := 0
		for i := 0; i < len(es); n++ {
			d := es[i].h >> (5 * depth) & 31
			s.bits |= 1 << d
			for i++; i < len(es) && es[i].h>>(5*depth)&31 == d; i++ {
			}
		}
		s.kids = make([]trieSlot, n)
		k := 0
		for i := 0; i < len(es); k++ {
			d := es[i].h >> (5 * depth) & 31
			j := i + 1
			for ; j < len(es) && es[j].h>>(5*depth)&31 == d; j++ {
			}
			if j == i+1 {
				s.kids[k] = trieSlot{p: es[i].p}
			} else {
				s.kids[k] = build(es[i:j], depth+1)
			}
			i = j
		}
		return s
	}
	return nameTrie{root: build(es, 0), n: len(ps)}
}
