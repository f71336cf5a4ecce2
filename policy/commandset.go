package policy

// commandSet is the command-owned policies of a Snapshot: an immutable
// index (base) and a persistent trie of the changes made since (delta: a policy
// set, or a name deleted). A change adds a leaf to the delta, copying one
// path; once the delta holds a quarter as many leaves as the base has
// policies (and at least foldMin), the next change folds it into a new
// base. A change thus costs O(log n) plus O(1) amortised, and a lookup one
// walk of a trie a fraction of the table's size, mostly cached, and one
// probe of the index: at 100,000 policies, looked up at random, the
// lookup's cost is its cache misses, and the index takes one fewer than a
// map (its slot holds the hash and the policy side by side).
//
// A commandSet value is immutable; the zero commandSet is empty.
type commandSet struct {
	base  policyIndex
	delta nameTrie
	n     int // policies
}

// foldMin is the fewest leaves a delta folds at.
const foldMin = 256

// commandSetOf returns the set of ps, whose names are unique.
func commandSetOf(ps []*Policy) commandSet {
	return commandSet{base: indexOf(ps), n: len(ps)}
}

// get returns the policy named name, or nil. It does not allocate.
func (c *commandSet) get(name []byte) *Policy { return lookup(c, name) }

// getString is get for a string name.
func (c *commandSet) getString(name string) *Policy { return lookup(c, name) }

func lookup[N string | []byte](c *commandSet, name N) *Policy {
	h := hashName(name)
	if l := find(&c.delta, h, name); l != nil {
		if l.gone {
			return nil
		}
		return l.p
	}
	return findIndexed(&c.base, h, name)
}

// with returns c with p set (added or replaced).
func (c commandSet) with(p *Policy) commandSet {
	if c.getString(p.Name) == nil {
		c.n++
	}
	c.delta = c.delta.with(p, false)
	return c.folded()
}

// without returns c without the policy named name, and whether c held it.
func (c commandSet) without(name string) (commandSet, bool) {
	if c.getString(name) == nil {
		return c, false
	}
	c.n--
	c.delta = c.delta.with(&Policy{Name: name}, true)
	return c.folded(), true
}

// folded returns c with its delta folded into a new base, once the delta
// is large enough to pay for the copy.
func (c commandSet) folded() commandSet {
	if c.delta.n < max(foldMin, c.base.n/4) {
		return c
	}
	return c.compacted()
}

// compacted returns c with its delta folded into a new base, however
// small the delta: the same policies, looked up without a trie walk.
func (c commandSet) compacted() commandSet {
	if c.delta.n == 0 {
		return c
	}
	ps := make([]*Policy, 0, c.n)
	c.each(func(p *Policy) { ps = append(ps, p) })
	return commandSetOf(ps)
}

// each calls fn for every policy of c, in no particular order.
func (c *commandSet) each(fn func(p *Policy)) {
	for i := range c.base.slots {
		if p := c.base.slots[i].p; p != nil && find(&c.delta, c.base.slots[i].h, p.Name) == nil {
			fn(p)
		}
	}
	c.delta.each(func(l *trieSlot) {
		if !l.gone {
			fn(l.p)
		}
	})
}

// policyIndex is an immutable open-addressing hash table of policies by
// name (linear probing, at most half full). The zero policyIndex is empty.
type policyIndex struct {
	slots []indexSlot // a power of two of them; nil when empty
	n     int
}

type indexSlot struct {
	h uint64 // hashName of p.Name
	p *Policy
}

// indexOf returns the index of ps, whose names are unique.
func indexOf(ps []*Policy) policyIndex {
	if len(ps) == 0 {
		return policyIndex{}
	}
	size := 8
	for size < 2*len(ps) {
		size *= 2
	}
	x := policyIndex{slots: make([]indexSlot, size), n: len(ps)}
	mask := uint64(size - 1)
	for _, p := range ps {
		h := hashName(p.Name)
		i := h & mask
		for x.slots[i].p != nil {
			i = (i + 1) & mask
		}
		x.slots[i] = indexSlot{h, p}
	}
	return x
}

// findIndexed returns the policy of x named name, whose hash is h, or nil.
func findIndexed[N string | []byte](x *policyIndex, h uint64, name N) *Policy {
	if x.n == 0 {
		return nil
	}
	mask := uint64(len(x.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &x.slots[i]
		if s.p == nil {
			return nil
		}
		if s.h == h && s.p.Name == string(name) {
			return s.p
		}
	}
}
