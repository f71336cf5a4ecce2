package commands

import (
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/sluice-rl/sluice/policy"
)

// Decisions by policy (the metrics endpoint, INFO policies): RL.CHECK's
// decisions counted per policy and outcome, with shadow policies'
// would-be denials, without a shared atomic per decision.
//
// A connection counts its batch's policy decisions in a few plain slots
// of its RL.CHECK state (one per policy of the batch) and adds them, at
// the end of the batch, to its lane's stripe: a map by policy name under
// the stripe's mutex, taken once per batch. Names are bounded: the first
// maxPolicyNames policies seen get series of their own, later ones count
// under otherPolicies, so that a client that defines policy after policy
// cannot grow the metrics without bound.

const (
	polSlots       = 16
	polAtBits      = 5 // checkState.polAt has 1<<polAtBits places, at least twice polSlots
	maxPolicyNames = 256
	otherPolicies  = "_other"
)

// polSlot counts one policy's decisions within a batch (owner only).
type polSlot struct {
	p                          *policy.Policy
	allowed, denied, wouldDeny int64
}

// PolicyStat is one policy's decisions since the start: admitted and
// denied as replied (a shadow policy admits), and a shadow policy's
// would-be denials.
type PolicyStat struct {
	Name                             string
	Allowed, Denied, ShadowWouldDeny int64
}

// polStripe is one lane's counts by policy name, guarded by mu.
type polStripe struct {
	mu    sync.Mutex
	m     map[string]*PolicyStat
	other *PolicyStat // m[otherPolicies], once made
}

// policyStats are a Handler's decisions by policy.
type policyStats struct {
	stripes [statStripes]polStripe
	mu      sync.Mutex          // guards names until full
	names   map[string]struct{} // the names given series of their own
	// seen has two bits set for each of names (nameBits): a name with
	// either bit clear has no series of its own, found without a lookup
	// in names.
	seen [nameFilterWords]uint64
	// full is set once names holds maxPolicyNames, after which names
	// and seen never change and are read without mu.
	full atomic.Bool
}

// nameFilterWords is the words of policyStats.seen: 4,096 bits, so that
// a name without a series passes for one of maxPolicyNames about 1.4% of
// the time.
const nameFilterWords = 64

// nameSeed hashes names for policyStats.seen.
var nameSeed = maphash.MakeSeed()

// nameBits returns the two bits of policyStats.seen that stand for name.
func nameBits(name string) (a, b uint) {
	h := maphash.String(nameSeed, name)
	const n = nameFilterWords * 64
	return uint(h % n), uint((h >> 32) % n)
}

// named reports whether name has a series of its own. Requires full.
func (ps *policyStats) named(name string) bool {
	a, b := nameBits(name)
	if ps.seen[a/64]&(1<<(a%64)) == 0 || ps.seen[b/64]&(1<<(b%64)) == 0 {
		return false
	}
	_, ok := ps.names[name]
	return ok
}

// label returns the name name is counted under: itself while fewer than
// maxPolicyNames have been, else otherPolicies. A stripe asks once per
// name given a series of its own, and at each flush of a name counted
// under otherPolicies, without a lock then: a stripe's map keeps no entry
// per such name, so that a table of many policies does not grow it.
func (ps *policyStats) label(name string) string {
	if ps.full.Load() {
		if ps.named(name) {
			return name
		}
		return otherPolicies
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if _, ok := ps.names[name]; ok {
		return name
	}
	if len(ps.names) >= maxPolicyNames {
		return otherPolicies
	}
	if ps.names == nil {
		ps.names = map[string]struct{}{}
	}
	ps.names[name] = struct{}{}
	a, b := nameBits(name)
	ps.seen[a/64] |= 1 << (a % 64)
	ps.seen[b/64] |= 1 << (b % 64)
	if len(ps.names) == maxPolicyNames {
		ps.full.Store(true)
	}
	return name
}

// countPolicy counts a policy decision as replied, and whether a shadow
// policy would have denied it.
func (s *session) countPolicy(p *policy.Policy, allowed, wouldDeny bool) {
	c := s.checks()
	h := polHome(p)
	for c.polAt[h] != 0 && c.pols[c.polAt[h]-1].p != p {
		h = (h + 1) % uint(len(c.polAt))
	}
	if c.polAt[h] == 0 { // the batch's first of p
		if c.npol == polSlots {
			s.flushPolicies()
			h = polHome(p)
		}
		c.pols[c.npol] = polSlot{p: p}
		c.npol++
		c.polAt[h] = uint8(c.npol)
	}
	sl := &c.pols[c.polAt[h]-1]
	switch {
	case allowed:
		sl.allowed++
	default:
		sl.denied++
	}
	if wouldDeny {
		sl.wouldDeny++
	}
}

// polHome is p's first place in checkState.polAt: a multiplicative hash
// of its address.
func polHome(p *policy.Policy) uint {
	return uint((uint64(uintptr(unsafe.Pointer(p))) * 0x9e3779b97f4a7c15) >> (64 - polAtBits))
}

// flushPolicies adds the batch's policy counts to the session's stripe
// and empties the slots (owner only).
func (s *session) flushPolicies() {
	c := s.queue.chk
	if c == nil || c.npol == 0 {
		return
	}
	lane := s.conn.Lane()
	if lane < 0 {
		lane = int(s.conn.ID())
	}
	ps := &s.h.polStats
	st := &ps.stripes[lane%statStripes]
	st.mu.Lock()
	for i := 0; i < c.npol; i++ {
		sl := &c.pols[i]
		e := st.entry(ps, sl.p.Name)
		e.Allowed += sl.allowed
		e.Denied += sl.denied
		e.ShadowWouldDeny += sl.wouldDeny
		c.pols[i] = polSlot{}
	}
	st.mu.Unlock()
	c.npol = 0
	clear(c.polAt[:])
}

// entry returns the stripe's entry that counts name. Once every series
// is given, a name without one costs one lookup, in names. Requires st.mu.
func (st *polStripe) entry(ps *policyStats, name string) *PolicyStat {
	if ps.full.Load() {
		if !ps.named(name) {
			if st.other == nil {
				st.other = st.add(ps, otherPolicies)
			}
			return st.other
		}
	}
	if e := st.m[name]; e != nil {
		return e
	}
	return st.add(ps, name)
}

// add makes the stripe's entry of name (which counts under its label).
// Requires st.mu.
func (st *polStripe) add(ps *policyStats, name string) *PolicyStat {
	if st.m == nil {
		st.m = map[string]*PolicyStat{}
	}
	l := ps.label(name)
	e := st.m[l]
	if e == nil {
		e = &PolicyStat{Name: l}
		st.m[l] = e
	}
	return e
}

// PolicyStats returns the decisions by policy since the start, by name.
// Any goroutine.
func (h *Handler) PolicyStats() []PolicyStat {
	sum := map[string]*PolicyStat{}
	for i := range h.polStats.stripes {
		st := &h.polStats.stripes[i]
		st.mu.Lock()
		for name, e := range st.m {
			t := sum[name]
			if t == nil {
				t = &PolicyStat{Name: name}
				sum[name] = t
			}
			t.Allowed += e.Allowed
			t.Denied += e.Denied
			t.ShadowWouldDeny += e.ShadowWouldDeny
		}
		st.mu.Unlock()
	}
	out := make([]PolicyStat, 0, len(sum))
	for _, t := range sum {
		out = append(out, *t)
	}
	slices.SortFunc(out, func(a, b PolicyStat) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}
