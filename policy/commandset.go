package policy

// commandSet is the command-owned policies of a Snapshot: an immutable map
// (base) and a persistent trie of the changes made since (delta: a policy
// set, or a name deleted). A change adds a leaf to the delta, copying one
// path; once the delta holds a quarter as many leaves as the base has
// policies (and at least foldMin), the next change folds it into a new
// base. A change thus costs O(log n) plus O(1) amortised, and a lookup one
// walk of a trie a fraction of the table's size, mostly cached, and one
// map lookup.
//
// A commandSet value is immutable; the zero commandSet is empty.
type commandSet struct {
	base  map[string]*Policy
	delta nameTrie
	n     int // policies
}

// foldMin is the fewest leaves a delta folds at.
const foldMin = 256

// commandSetOf returns the set of ps, whose names are unique.
func commandSetOf(ps []*Policy) commandSet {
	base := make(map[string]*Policy, len(ps))
	for _, p := range ps {
		base[p.Name] = p
	}
	return commandSet{base: base, n: len(ps)}
}

// get returns the policy named name, or nil. It does not allocate.
func (c *commandSet) get(name []byte) *Policy {
	if l := c.delta.leaf(name); l != nil {
		if l.gone {
			return nil
		}
		return l.p
	}
	return c.base[string(name)]
}

// getString is get for a string name.
func (c *commandSet) getString(name string) *Policy {
	if l := c.delta.leafString(name); l != nil {
		if l.gone {
			return nil
		}
		return l.p
	}
	return c.base[name]
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
	if c.delta.n < max(foldMin, len(c.base)/4) {
		return c
	}
	base := make(map[string]*Policy, c.n)
	for name, p := range c.base {
		base[name] = p
	}
	c.delta.each(func(l *trieSlot) {
		if l.gone {
			delete(base, l.p.Name)
		} else {
			base[l.p.Name] = l.p
		}
	})
	return commandSet{base: base, n: c.n}
}

// each calls fn for every policy of c, in no particular order.
func (c *commandSet) each(fn func(p *Policy)) {
	for name, p := range c.base {
		if c.delta.leafString(name) == nil {
			fn(p)
		}
	}
	c.delta.each(func(l *trieSlot) {
		if !l.gone {
			fn(l.p)
		}
	})
}
