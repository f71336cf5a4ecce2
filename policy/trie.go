package policy

import (
	"hash/maphash"
	"math/bits"
)

// nameTrie is a persistent map from a name to a leaf (a policy, or the
// mark that a policy is gone): a hash array mapped trie of 32-way branches
// over the name's 64-bit hash. A change returns a new trie that shares
// every branch but those on the path to the changed name (at most
// trieLevels branches of at most 32 slots), so that a writer copies
// O(log n) slots and the readers of the old trie see it unchanged.
//
// A nameTrie value is immutable: with returns a new one. Readers need no
// lock. The zero nameTrie is empty.
type nameTrie struct {
	root trieSlot // a branch, always
	n    int      // leaves
}

// trieSlot is a leaf (p set) or a branch (kids set; bits says which of the
// 32 hash digits of its level are present, kids holding them in digit
// order). At depth trieLevels the hash is used up: a branch there is a
// list of leaves whose hashes collide, bits unused. A leaf's bits hold the
// high half of its name's hash, so that a lookup of another name stops
// there without reading the policy; gone marks a deleted name.
type trieSlot struct {
	bits uint32
	gone bool
	kids []trieSlot
	p    *Policy
}

// trieLevels is how many 5-bit digits of the hash the trie uses.
const trieLevels = 12

// trieSeed seeds the names' hashes; the trie's shape, never its contents,
// differs from process to process.
var trieSeed = maphash.MakeSeed()

// hashName returns name's hash, which the trie and the index use.
func hashName[N string | []byte](name N) uint64 {
	if b, ok := any(name).([]byte); ok {
		return maphash.Bytes(trieSeed, b)
	}
	return maphash.String(trieSeed, string(name))
}

// find returns the leaf of name, whose hash is h, or nil. It does not
// allocate.
func find[N string | []byte](t *nameTrie, h uint64, name N) *trieSlot {
	if t.n == 0 {
		return nil
	}
	high := uint32(h >> 32)
	s := &t.root
	for depth := 0; ; depth++ {
		next, leaf := step(s, h, high, depth, name)
		if next == nil {
			return leaf
		}
		s, h = next, h>>5
	}
}

// step takes a lookup of name one level down from s, the slot it reached
// at depth: h is name's hash shifted to depth, high its hash's high half.
// It returns the slot to visit next, or, if the lookup ends at s, nil and
// the leaf of name (nil: t holds none). A lookup reads one slot a level,
// so that lookups that take their steps in turn overlap their loads
// (findAll).
func step[N string | []byte](s *trieSlot, h uint64, high uint32, depth int, name N) (next, leaf *trieSlot) {
	if s.p != nil {
		if s.bits == high && s.p.Name == string(name) {
			return nil, s
		}
		return nil, nil
	}
	if depth == trieLevels {
		for i := range s.kids {
			if s.kids[i].p.Name == string(name) {
				return nil, &s.kids[i]
			}
		}
		return nil, nil
	}
	bit := uint32(1) << (h & 31)
	if s.bits&bit == 0 {
		return nil, nil
	}
	return &s.kids[bits.OnesCount32(s.bits&(bit-1))], nil
}

// findAll sets leaves[k] to find(t, hs[k], names[k]) for every k whose
// todo bit is set (at most 64 names), taking the lookups' steps in turn:
// level by level, so that their cache misses overlap.
func findAll(t *nameTrie, hs []uint64, names [][]byte, todo uint64, leaves []*trieSlot) {
	var at [batchMax]*trieSlot
	for k := range names {
		leaves[k] = nil
		at[k] = &t.root
	}
	if t.n == 0 {
		return
	}
	for depth := 0; todo != 0; depth++ {
		for rest := todo; rest != 0; rest &= rest - 1 {
			k := bits.TrailingZeros64(rest)
			h := hs[k] >> (5 * depth)
			next, leaf := step(at[k], h, uint32(hs[k]>>32), depth, names[k])
			if next == nil {
				leaves[k] = leaf
				todo &^= 1 << k
				continue
			}
			at[k] = next
		}
	}
}

// with returns t with the leaf of p.Name set to p, or to gone.
func (t nameTrie) with(p *Policy, gone bool) nameTrie {
	h := maphash.String(trieSeed, p.Name)
	root, added := insertSlot(&t.root, trieSlot{bits: uint32(h >> 32), gone: gone, p: p}, h, 0)
	if added {
		t.n++
	}
	t.root = root
	return t
}

// each calls fn for every leaf of t, in no particular order.
func (t *nameTrie) each(fn func(l *trieSlot)) { eachSlot(&t.root, fn) }

func eachSlot(s *trieSlot, fn func(l *trieSlot)) {
	if s.p != nil {
		fn(s)
		return
	}
	for i := range s.kids {
		eachSlot(&s.kids[i], fn)
	}
}

// insertSlot returns a copy of branch s, at depth, with leaf l added or
// replaced; h is l's hash shifted to depth. It reports whether l was added.
func insertSlot(s *trieSlot, l trieSlot, h uint64, depth int) (trieSlot, bool) {
	if depth == trieLevels {
		for i := range s.kids {
			if s.kids[i].p.Name == l.p.Name {
				kids := append([]trieSlot(nil), s.kids...)
				kids[i] = l
				return trieSlot{kids: kids}, false
			}
		}
		kids := make([]trieSlot, len(s.kids), len(s.kids)+1)
		copy(kids, s.kids)
		return trieSlot{kids: append(kids, l)}, true
	}
	bit := uint32(1) << (h & 31)
	i := bits.OnesCount32(s.bits & (bit - 1))
	if s.bits&bit == 0 {
		kids := make([]trieSlot, len(s.kids)+1)
		copy(kids, s.kids[:i])
		kids[i] = l
		copy(kids[i+1:], s.kids[i:])
		return trieSlot{bits: s.bits | bit, kids: kids}, true
	}
	kids := append([]trieSlot(nil), s.kids...)
	added := false
	switch old := &s.kids[i]; {
	case old.p != nil && old.p.Name == l.p.Name:
		kids[i] = l
	case old.p != nil:
		kids[i] = pairSlot(*old, l, maphash.String(trieSeed, old.p.Name)>>(5*(depth+1)), h>>5, depth+1)
		added = true
	default:
		kids[i], added = insertSlot(old, l, h>>5, depth+1)
	}
	return trieSlot{bits: s.bits, kids: kids}, added
}

// pairSlot returns the branch, at depth, that holds the two leaves a and
// b, whose hashes shifted to depth are ha and hb.
func pairSlot(a, b trieSlot, ha, hb uint64, depth int) trieSlot {
	if depth == trieLevels {
		return trieSlot{kids: []trieSlot{a, b}}
	}
	da, db := uint32(ha&31), uint32(hb&31)
	if da == db {
		return trieSlot{bits: 1 << da, kids: []trieSlot{pairSlot(a, b, ha>>5, hb>>5, depth+1)}}
	}
	if da > db {
		a, b, da, db = b, a, db, da
	}
	return trieSlot{bits: 1<<da | 1<<db, kids: []trieSlot{a, b}}
}
