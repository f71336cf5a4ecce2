package policy

import (
	"bytes"

	"github.com/sluice-rl/sluice/algorithms"
)

// Matching, as envoyproxy/ratelimit's GetLimit and ShouldRateLimit do it
// (src/config/config_impl.go, src/service/ratelimit.go), for RL.MATCH and
// the RLS v3 gRPC front end alike. Per request descriptor, the domain's
// tree is walked one entry at a time; at each level an entry (k, v) takes
//
//  1. the rule with key k and value v exactly (a wildcard rule's value, as
//     written, matches exactly too), else
//  2. the first rule with key k whose value is a wildcard pattern matching
//     v ('*' matches any run of bytes, anywhere in the pattern), in file
//     order, else
//  3. the rule with key k and no value.
//
// A descriptor matches the rule the walk reaches with its last entry; the
// rule must sit at that depth (a descriptor longer or shorter than the
// rules has no limit), and must have a rate_limit (a matched rule without
// one is whitelisted: no limit). A descriptor with its own limit (the RLS
// request's per-descriptor override) is not walked: that limit applies, as
// a fixed window, if the domain is known.

// Entry is one key/value pair of a request descriptor.
type Entry struct {
	Key, Value []byte
}

// Descriptor is one request descriptor: its entries, and optionally its own
// limit and hits (the RLS v3 request's per-descriptor limit and
// hits_addend).
type Descriptor struct {
	Entries []Entry
	// Limit, when its Unit is not UnitUnknown, is the descriptor's own
	// limit, applied instead of the rules.
	Limit EnvoyLimit
	// Hits, when HitsSet, is the descriptor's cost instead of the
	// request's; 0 checks without counting.
	Hits    int64
	HitsSet bool
}

// Flags describe how an item was resolved.
type Flags uint16

const (
	// FlagNoRule: no limit applies (no rule matched, the domain is
	// unknown, the rule is whitelisted, or another descriptor's rule
	// replaced it). The status is OK, without a current limit.
	FlagNoRule        Flags = 1 << iota
	FlagUnknownDomain       // the request's domain has no rules (with FlagNoRule)
	FlagWhitelisted         // the descriptor matched a rule without rate_limit (with FlagNoRule)
	FlagReplaced            // the rule was named in another matched rule's replaces (with FlagNoRule)
	FlagUnlimited           // rate_limit {unlimited: true}: OK, never counted
	FlagDeny                // requests_per_unit 0: every hit is over the limit, nothing is counted
	FlagShadow              // shadow_mode: decided and counted, but reported OK
	FlagDetailed            // detailed_metric
	FlagQuota               // quota_mode: over the limit fails the request only if every quota descriptor is over
	FlagOverride            // the descriptor's own limit applies
)

// Item is the plan for one descriptor.
type Item struct {
	// Limit is what decides (when Decides): the rule's exact limit, a
	// fixed window for an override.
	Limit algorithms.Limit
	// Key is the state key (keys.go), valid until the Plan is reused;
	// nil when nothing is decided.
	Key []byte
	// Hits is the cost: the descriptor's own, else the request's.
	Hits  int64
	Flags Flags
	// Envoy is the limit as the reply reports it (current_limit), and Name
	// the rule's rate_limit name; zero without a rule limit.
	Envoy EnvoyLimit
	Name  string
	rule  *rule // the matched rule with a limit; nil for overrides and no rule
}

// Decides reports whether the item needs a decision on its state: false
// when no rule applies, for unlimited rules, and for requests_per_unit 0.
func (it *Item) Decides() bool { return it.Flags&(FlagNoRule|FlagUnlimited|FlagDeny) == 0 }

// Request returns the decision the item asks for (Group 0).
func (it *Item) Request() algorithms.Request {
	return algorithms.Request{Key: it.Key, Limit: it.Limit, N: it.Hits}
}

// Plan holds one request's items and the buffer their keys live in. A Plan
// is reused from request to request, so that planning does not allocate in
// steady state; it is not safe for concurrent use.
type Plan struct {
	Items []Item
	keys  []byte
	path  []*rule // scratch: the rules the current descriptor's entries matched
}

// RequestHits returns the request-level hits of an RLS v3 request: its
// hits_addend, or 1 when that is 0 (unset), as envoyproxy/ratelimit reads
// it. Only a descriptor's own hits_addend can be 0 (check only).
func RequestHits(hitsAddend uint32) int64 {
	if hitsAddend == 0 {
		return 1
	}
	return int64(hitsAddend)
}

// Plan resolves each of ds under domain into p.Items, one per descriptor
// in order, hits being the cost of descriptors without their own. It
// returns ErrEmptyDomain, ErrNoDescriptors or ErrNegativeHits for a request
// envoyproxy/ratelimit would refuse or that has no meaning, and an error
// for an override with requests_per_unit above one per nanosecond; an
// unknown domain is not an error (every item has FlagUnknownDomain).
//
// Plan reads only rs, which is immutable, and p, which it owns for the
// call: any number of Plans may run on one RuleSet at once. It does not
// allocate once p's slices have grown to the request's size. The entries'
// bytes are read during the call only; the keys are copied into p.
func (rs *RuleSet) Plan(p *Plan, domain []byte, hits int64, ds []Descriptor) error {
	p.Items, p.keys = p.Items[:0], p.keys[:0]
	if len(domain) == 0 {
		return ErrEmptyDomain
	}
	if len(ds) == 0 {
		return ErrNoDescriptors
	}
	if hits < 0 {
		return ErrNegativeHits
	}
	var d *domainRules
	if rs != nil {
		d = rs.domains[string(domain)]
	}
	for i := range ds {
		it := Item{Hits: hits}
		if ds[i].HitsSet {
			if ds[i].Hits < 0 {
				return ErrNegativeHits
			}
			it.Hits = ds[i].Hits
		}
		if d == nil {
			it.Flags = FlagNoRule | FlagUnknownDomain
		} else if err := p.resolve(&it, d, domain, &ds[i]); err != nil {
			p.Items = p.Items[:0]
			return err
		}
		p.Items = append(p.Items, it)
	}
	if d != nil {
		applyReplaces(p.Items)
	}
	return nil
}

// resolve fills it for one descriptor of a known domain.
func (p *Plan) resolve(it *Item, d *domainRules, domain []byte, ds *Descriptor) error {
	if ds.Limit.Unit != UnitUnknown {
		it.Flags, it.Envoy = FlagOverride, ds.Limit
		if ds.Limit.RequestsPerUnit == 0 {
			it.Flags |= FlagDeny
			return nil
		}
		l, err := ds.Limit.Limit(algorithms.Fixed, 0)
		if err != nil {
			return err
		}
		it.Limit = l
		start := len(p.keys)
		k := ruleKey{slotBy: d.slotBy}
		p.keys = k.head(p.keys, domain, l.Algo)
		for _, e := range ds.Entries {
			p.keys = appendRuleEntry(&k, p.keys, e.Key, e.Value)
		}
		it.Key = p.keys[start:len(p.keys):len(p.keys)]
		return nil
	}
	var r *rule
	var whitelisted bool
	r, whitelisted, p.path = d.match(ds.Entries, p.path[:0])
	if r == nil {
		it.Flags = FlagNoRule
		if whitelisted {
			it.Flags |= FlagWhitelisted
		}
		return nil
	}
	l := r.limit
	it.rule, it.Envoy, it.Name = r, l.envoy, l.name
	if r.shadow {
		it.Flags |= FlagShadow
	}
	if r.detailed {
		it.Flags |= FlagDetailed
	}
	if r.quota {
		it.Flags |= FlagQuota
	}
	switch {
	case l.unlimited:
		it.Flags |= FlagUnlimited
		return nil
	case l.deny():
		it.Flags |= FlagDeny
		return nil
	}
	it.Limit = l.exact
	start := len(p.keys)
	k := ruleKey{slotBy: d.slotBy}
	p.keys = k.head(p.keys, domain, l.exact.Algo)
	// The walk matched every entry, level by level: path[i] matched entry i.
	for i, e := range ds.Entries {
		if m := p.path[i]; m.share {
			p.keys = appendRuleEntry(&k, p.keys, e.Key, m.value)
		} else {
			p.keys = appendRuleEntry(&k, p.keys, e.Key, e.Value)
		}
	}
	it.Key = p.keys[start:len(p.keys):len(p.keys)]
	return nil
}

// How a level matched an entry.
const (
	viaExact = iota + 1
	viaWildcard
	viaKeyOnly
)

// step returns the rule of lv that entry e takes, and how; nil if none.
func (lv *level) step(e Entry) (*rule, int) {
	g := lv.byKey[string(e.Key)]
	if g == nil {
		return nil, 0
	}
	if r := g.exact[string(e.Value)]; r != nil {
		return r, viaExact
	}
	for _, w := range g.wild {
		if wildcardMatch(w.parts, e.Value) {
			return w, viaWildcard
		}
	}
	if g.keyOnly != nil {
		return g.keyOnly, viaKeyOnly
	}
	return nil, 0
}

// match walks entries down the tree. It returns the rule with a limit that
// the descriptor matches, or nil and whether it matched a rule without one;
// and path with the rule each entry matched appended.
func (d *domainRules) match(entries []Entry, path []*rule) (r *rule, whitelisted bool, _ []*rule) {
	lv := &d.root
	for i, e := range entries {
		m, _ := lv.step(e)
		if m == nil {
			return nil, false, path
		}
		path = append(path, m)
		if i == len(entries)-1 {
			if m.limit == nil {
				return nil, true, path
			}
			return m, false, path
		}
		lv = &m.children
	}
	return nil, false, path
}

// wildcardMatch reports whether value matches a pattern split at its '*'
// (parts has at least two elements): it starts with the first part, ends
// with the last, and holds the middle ones in order in between, without
// overlap. It does not allocate.
func wildcardMatch(parts []string, value []byte) bool {
	first, last := parts[0], parts[len(parts)-1]
	if len(value) < len(first)+len(last) || string(value[:len(first)]) != first ||
		string(value[len(value)-len(last):]) != last {
		return false
	}
	rest := value[len(first) : len(value)-len(last)]
	for _, mid := range parts[1 : len(parts)-1] {
		i := indexString(rest, mid)
		if i < 0 {
			return false
		}
		rest = rest[i+len(mid):]
	}
	return true
}

// indexString is bytes.Index(b, []byte(s)) without the conversion.
func indexString(b []byte, s string) int {
	if len(s) == 0 {
		return 0
	}
	for i := 0; i+len(s) <= len(b); i++ {
		j := bytes.IndexByte(b[i:], s[0])
		if j < 0 {
			return -1
		}
		i += j
		if i+len(s) <= len(b) && string(b[i:i+len(s)]) == s {
			return i
		}
	}
	return -1
}

// applyReplaces drops the items whose rule's name another matched rule
// replaces, as ShouldRateLimit does: every matched rule limit (unlimited
// ones and replaced ones included) contributes its replaces, and an
// unlimited item is never dropped.
func applyReplaces(items []Item) {
	for i := range items {
		it := &items[i]
		if it.rule == nil || it.Name == "" || it.Flags&FlagUnlimited != 0 {
			continue
		}
		for j := range items {
			if items[j].rule != nil && replaces(items[j].rule.limit, it.Name) {
				it.Flags |= FlagReplaced // marked first: a replaced rule still replaces others
				break
			}
		}
	}
	for i := range items {
		if it := &items[i]; it.Flags&FlagReplaced != 0 {
			*it = Item{Hits: it.Hits, Flags: FlagNoRule | FlagReplaced}
		}
	}
}

func replaces(l *ruleLimit, name string) bool {
	for _, n := range l.replaces {
		if n == name {
			return true
		}
	}
	return false
}
