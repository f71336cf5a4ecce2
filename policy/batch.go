package policy

import (
	"math/bits"

	"github.com/sluice-rl/sluice/algorithms"
)

// Looking up a batch of policies together. At 100,000 policies looked up
// at random, one lookup is a chain of cache misses: the trie's slots, the
// index slot, then the policy itself, each load waiting for the one
// before. A pipeline's RL.CHECKs look up their policies together so that
// the chains overlap: each stage of every lookup is loaded before any
// lookup's next stage.

// batchMax is how many lookups Policies overlaps at a time.
const batchMax = 16

// Policies sets out[k] to the policy named names[k] in s, or nil, as
// Policy does for each name (out must be as long as names). The lookups'
// loads overlap, batchMax at a time. It does not allocate.
func (s *Snapshot) Policies(names [][]byte, out []*Policy) {
	out = out[:len(names)]
	for len(names) > batchMax {
		s.policies(names[:batchMax], out[:batchMax])
		names, out = names[batchMax:], out[batchMax:]
	}
	s.policies(names, out)
}

// policies is Policies for at most batchMax names.
func (s *Snapshot) policies(names [][]byte, out []*Policy) {
	var todo uint64 // the lookups the command-owned policies answer
	for k, name := range names {
		out[k] = nil
		if s.files != nil {
			out[k] = s.files[string(name)]
		}
		if out[k] == nil {
			todo |= 1 << k
		}
	}
	if todo != 0 {
		s.commands.getAll(names, todo, out)
	}
}

// getAll sets out[k] to get(names[k]) for every k whose todo bit is set
// (at most batchMax names): the delta's walks level by level, then the
// index slots of every name the delta does not hold, then their policies,
// then the lookups themselves, which find their loads in cache.
func (c *commandSet) getAll(names [][]byte, todo uint64, out []*Policy) {
	var hs [batchMax]uint64
	for rest := todo; rest != 0; rest &= rest - 1 {
		k := bits.TrailingZeros64(rest)
		hs[k] = hashName(names[k])
	}
	if c.delta.n != 0 {
		var leaves [batchMax]*trieSlot
		findAll(&c.delta, hs[:len(names)], names, todo, leaves[:len(names)])
		for rest := todo; rest != 0; rest &= rest - 1 {
			k := bits.TrailingZeros64(rest)
			if l := leaves[k]; l != nil {
				if !l.gone {
					out[k] = l.p
				}
				todo &^= 1 << k
			}
		}
	}
	x := &c.base
	if x.n == 0 || todo == 0 {
		return
	}
	// Each stage first loads, for every lookup, what it needs into a
	// local array, in a loop that branches on nothing it loads, so that
	// all of the stage's cache misses are in flight together; a branch on
	// a value still in flight, mispredicted, would discard the loads
	// issued after it.
	mask := uint64(len(x.slots) - 1)
	var home [batchMax]indexSlot
	for rest := todo; rest != 0; rest &= rest - 1 {
		k := bits.TrailingZeros64(rest)
		home[k] = x.slots[hs[k]&mask]
	}
	// The candidates: the home slot's policy if its hash is the name's,
	// else the first of the probe's slots with that hash (a displaced
	// name's, mostly on the home slot's cache line).
	var ps [batchMax]*Policy
	for rest := todo; rest != 0; rest &= rest - 1 {
		k := bits.TrailingZeros64(rest)
		switch {
		case home[k].h == hs[k]:
			ps[k] = home[k].p
		case home[k].p != nil:
			ps[k] = probeHash(x, hs[k], mask)
		}
	}
	// The candidates' policies, loaded together: the name's length, and
	// the limit, which brings in the policy's next cache line if it
	// straddles one.
	var nameLen [batchMax]int
	var algo [batchMax]algorithms.Algo
	for rest := todo; rest != 0; rest &= rest - 1 {
		k := bits.TrailingZeros64(rest)
		if p := ps[k]; p != nil {
			nameLen[k], algo[k] = len(p.Name), p.Limit.Algo
		}
	}
	// The lookups whose candidate has their name end here; every held
	// policy has an algorithm, so the test only ever passes the others on
	// to findIndexed.
	for rest := todo; rest != 0; rest &= rest - 1 {
		k := bits.TrailingZeros64(rest)
		if p := ps[k]; p != nil && nameLen[k] == len(names[k]) && algo[k] != algorithms.None && p.Name == string(names[k]) {
			out[k] = p
			todo &^= 1 << k
		}
	}
	for rest := todo; rest != 0; rest &= rest - 1 { // collisions, and names not held
		k := bits.TrailingZeros64(rest)
		out[k] = findIndexed(x, hs[k], names[k])
	}
}

// probeHash returns the policy of the first slot on h's probe sequence in
// x whose hash is h, or nil if an empty slot comes first: the candidate
// findIndexed would compare first, found without reading any policy
// (mask is len(x.slots)-1; x is not empty).
func probeHash(x *policyIndex, h, mask uint64) *Policy {
	for i := h & mask; ; i = (i + 1) & mask {
		sl := &x.slots[i]
		if sl.p == nil || sl.h == h {
			return sl.p
		}
	}
}
