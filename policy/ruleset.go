package policy

import (
	"crypto/sha256"
	"fmt"
	"sort"
	"strings"

	"github.com/sluice-rl/sluice/algorithms"
)

// RuleSet is one loaded set of rules files: the domains of descriptor rules
// (envoyproxy/ratelimit's format) and the policies the files define. It is
// immutable once built, so any number of goroutines read it without a lock;
// a reload builds a new RuleSet and swaps the pointer (Registry.SetRules).
// The nil *RuleSet is the empty set: it knows no domain and no policy.
type RuleSet struct {
	files    []string // the files read, in load order
	domains  map[string]*domainRules
	order    []*domainRules // by name
	policies []*Policy      // by name
	pfiles   []int          // policies[i] comes from files[pfiles[i]]
	rules    int            // descriptors with a rate_limit
	hash     [32]byte
}

// domainRules is one domain's descriptor tree.
type domainRules struct {
	name string
	file int // index into RuleSet.files
	// slotBy is the descriptor key whose value a key of the domain is
	// slotted by (the rules file's slot_by); "" without one.
	slotBy string
	root   level
}

// level is one descriptors list of the tree.
type level struct {
	list  []*rule              // in file order
	byKey map[string]*keyGroup // the rules of each key
}

// keyGroup is the rules of one level that share a key, in the three ways a
// request entry can match them (match.go).
type keyGroup struct {
	exact   map[string]*rule // by the rule's value as written, wildcards included
	wild    []*rule          // values with a '*', in file order
	keyOnly *rule            // the rule without a value
}

// rule is one descriptor of a rules file.
type rule struct {
	key, value string
	parts      []string // value split at '*' when it holds one
	limit      *ruleLimit
	shadow     bool
	detailed   bool
	valueToMet bool
	share      bool
	quota      bool
	children   level
	fullKey    string // envoyproxy/ratelimit's stats key of the rule: "domain.key_value.subkey"
}

// ruleLimit is a descriptor's rate_limit block and sluice extension.
type ruleLimit struct {
	envoy     EnvoyLimit
	name      string
	replaces  []string
	unlimited bool
	algo      algorithms.Algo // the extension's algorithm; Fixed without one
	burst     int64           // the extension's burst; 0 without one
	exact     algorithms.Limit
}

// deny reports whether the limit refuses every hit (requests_per_unit 0).
func (l *ruleLimit) deny() bool { return !l.unlimited && l.envoy.RequestsPerUnit == 0 }

// Files returns the files the set was loaded from, in load order.
func (rs *RuleSet) Files() []string {
	if rs == nil {
		return nil
	}
	return rs.files
}

// Domains returns the domains' names, sorted.
func (rs *RuleSet) Domains() []string {
	if rs == nil {
		return nil
	}
	out := make([]string, len(rs.order))
	for i, d := range rs.order {
		out[i] = d.name
	}
	return out
}

// HasDomain reports whether the set has rules for domain.
func (rs *RuleSet) HasDomain(domain []byte) bool {
	return rs != nil && rs.domains[string(domain)] != nil
}

// Policies returns the policies the files define, sorted by name. The
// pointers are shared: the caller must not change them.
func (rs *RuleSet) Policies() []*Policy {
	if rs == nil {
		return nil
	}
	return rs.policies
}

// Rules returns the number of descriptors with a rate_limit.
func (rs *RuleSet) Rules() int {
	if rs == nil {
		return 0
	}
	return rs.rules
}

// Hash returns the SHA-256 of the set's content encoding: the domains,
// rules and policies, without file names, positions, comments or layout.
// Two nodes that loaded equivalent files at different paths agree on it.
func (rs *RuleSet) Hash() [32]byte {
	if rs == nil {
		return emptyHash
	}
	return rs.hash
}

var emptyHash = sha256.Sum256(appendContent(nil, &RuleSet{}))

// Spec types: what a file says, checked for syntax but not yet for
// structure. The YAML reader and Decode both produce them, and build turns
// them into a RuleSet, so a decoded set passes the same checks as a loaded
// one.

// pos is a position in a file; zero when unknown (decoded sets).
type pos struct{ line, col int }

type fileSpec struct {
	name        string
	domain      string
	domainPos   pos
	slotBy      string
	slotByPos   pos
	descriptors []*descSpec
	policies    []*policySpec
}

type descSpec struct {
	at            pos
	key, value    string
	limit         *limitSpec
	shadow        bool
	detailed      bool
	valueToMetric bool
	share         bool
	quota         bool
	children      []*descSpec
}

type limitSpec struct {
	at        pos
	unitText  string // as written; "" when absent
	unitAt    pos
	rpu       uint32
	unlimited bool
	name      string
	replaces  []string
	replAt    []pos
	ext       *extSpec
}

// extSpec is the sluice extension of a rate_limit: the algorithm that
// carries it out and a token or leaky bucket's burst.
type extSpec struct {
	at    pos
	algo  algorithms.Algo
	burst int64
}

type policySpec struct {
	at pos
	p  Policy
}

// Options tune loading.
type Options struct {
	// LogMaxLimit bounds the count of a sliding log (RL.LOG's
	// log-max-limit) and of a concurrency limit; 0: no bound.
	LogMaxLimit int64
	// MaxBytes bounds the bytes that Load reads from the rules files, all
	// of them together (rules-max-bytes); 0: DefaultMaxBytes. Parse reads
	// no file and ignores it.
	MaxBytes int64
}

// DefaultMaxBytes is Options.MaxBytes's default: a few MiB, where a
// Kubernetes ConfigMap holds at most 1 MiB. A file set past it is refused
// before it is parsed, which bounds the parser's memory too.
const DefaultMaxBytes = 4 << 20

// maxBytes returns o.MaxBytes, or its default.
func (o Options) maxBytes() int64 {
	if o.MaxBytes > 0 {
		return o.MaxBytes
	}
	return DefaultMaxBytes
}

// builder collects the faults of a build.
type builder struct {
	opts   Options
	faults []*ConfigError
	rs     *RuleSet
}

func (b *builder) fault(file string, at pos, format string, args ...any) {
	b.faults = append(b.faults, &ConfigError{File: file, Line: at.line, Column: at.col, Msg: fmt.Sprintf(format, args...)})
}

// build checks the specs' structure and makes the RuleSet. Faults are
// collected across all files; any fault refuses the whole set.
func build(specs []*fileSpec, opts Options) (*RuleSet, error) {
	b := &builder{opts: opts, rs: &RuleSet{domains: map[string]*domainRules{}}}
	policyAt := map[string]string{}
	type filed struct {
		p    *Policy
		file int
	}
	var pols []filed
	for fi, f := range specs {
		b.rs.files = append(b.rs.files, f.name)
		if f.domain == "" && len(f.policies) == 0 {
			b.fault(f.name, f.domainPos, msgEmptyDomain)
		}
		if f.slotBy != "" && f.domain == "" {
			b.fault(f.name, f.slotByPos, "slot_by needs a domain in the same file")
		}
		if f.domain != "" {
			if _, dup := b.rs.domains[f.domain]; dup {
				b.fault(f.name, f.domainPos, msgDuplicateDomain, f.domain)
			} else {
				d := &domainRules{name: f.domain, file: fi, slotBy: f.slotBy}
				b.level(f.name, &d.root, f.domain+".", f.descriptors)
				b.rs.domains[f.domain] = d
				b.rs.order = append(b.rs.order, d)
			}
		}
		for _, ps := range f.policies {
			p := ps.p
			p.File = f.name
			if err := p.Validate(); err != nil {
				b.fault(f.name, ps.at, "policy '%s': %v", quoteName(p.Name), err)
				continue
			}
			if err := b.logBound(p.Limit); err != nil {
				b.fault(f.name, ps.at, "policy '%s': %v", p.Name, err)
				continue
			}
			if where, dup := policyAt[p.Name]; dup {
				b.fault(f.name, ps.at, "policy '%s' is defined twice (first in %s)", p.Name, where)
				continue
			}
			policyAt[p.Name] = f.name
			pols = append(pols, filed{&p, fi})
		}
	}
	if len(b.faults) > 0 {
		return nil, &LoadError{Faults: b.faults}
	}
	sort.Slice(b.rs.order, func(i, j int) bool { return b.rs.order[i].name < b.rs.order[j].name })
	sort.Slice(pols, func(i, j int) bool { return pols[i].p.Name < pols[j].p.Name })
	for _, fp := range pols {
		b.rs.policies = append(b.rs.policies, fp.p)
		b.rs.pfiles = append(b.rs.pfiles, fp.file)
	}
	b.rs.hash = sha256.Sum256(appendContent(nil, b.rs))
	return b.rs, nil
}

// logBound checks a sliding log's or a concurrency limit's count against
// Options.LogMaxLimit.
func (b *builder) logBound(l algorithms.Limit) error {
	if b.opts.LogMaxLimit > 0 && (l.Algo == algorithms.Log || l.Algo == algorithms.Concurrency) && l.Count > b.opts.LogMaxLimit {
		return errLimit("the limit is above log-max-limit (%d)", b.opts.LogMaxLimit)
	}
	return nil
}

// level builds one descriptors list into lv; parent is the stats key of the
// level's owner followed by a dot ("domain.", "domain.key_value.").
func (b *builder) level(file string, lv *level, parent string, specs []*descSpec) {
	lv.byKey = map[string]*keyGroup{}
	for _, s := range specs {
		if s.key == "" {
			b.fault(file, s.at, msgEmptyKey)
			continue
		}
		final := s.key
		if s.value != "" {
			final += "_" + s.value
		}
		g := lv.byKey[s.key]
		if g == nil {
			g = &keyGroup{exact: map[string]*rule{}}
			lv.byKey[s.key] = g
		}
		if s.value == "" && g.keyOnly != nil || s.value != "" && g.exact[s.value] != nil {
			b.fault(file, s.at, msgDuplicateKey, parent+final)
			continue
		}
		r := &rule{
			key: s.key, value: s.value, shadow: s.shadow, detailed: s.detailed,
			valueToMet: s.valueToMetric, share: s.share, quota: s.quota, fullKey: parent + final,
		}
		if s.limit != nil {
			r.limit = b.limit(file, s.limit)
			b.rs.rules++
		}
		wild := strings.Contains(s.value, "*")
		if s.share && !wild {
			b.fault(file, s.at, msgShareNoWildcard, final)
		}
		if wild {
			r.parts = strings.Split(s.value, "*")
			g.wild = append(g.wild, r)
		}
		if s.value == "" {
			g.keyOnly = r
		} else {
			g.exact[s.value] = r
		}
		lv.list = append(lv.list, r)
		b.level(file, &r.children, parent+final+".", s.children)
	}
}

// limit checks a rate_limit block the way envoyproxy/ratelimit does, then
// the sluice extension, and computes the exact limit.
func (b *builder) limit(file string, s *limitSpec) *ruleLimit {
	l := &ruleLimit{name: s.name, replaces: s.replaces, unlimited: s.unlimited, algo: algorithms.Fixed}
	unit, valid := ParseUnit([]byte(s.unitText))
	if s.unlimited {
		if valid {
			b.fault(file, s.unitAt, msgUnitWhenUnlimit)
		}
	} else if !valid {
		at := s.unitAt
		if s.unitText == "" {
			at = s.at
		}
		b.fault(file, at, msgInvalidUnit, s.unitText)
	}
	for i, r := range s.replaces {
		at := s.at
		if i < len(s.replAt) {
			at = s.replAt[i]
		}
		if r == "" {
			b.fault(file, at, msgEmptyReplaces)
		} else if r == s.name {
			b.fault(file, at, msgReplacesSelf)
		}
	}
	if !s.unlimited {
		l.envoy = EnvoyLimit{RequestsPerUnit: s.rpu, Unit: unit}
	}
	if s.ext != nil {
		if s.unlimited {
			b.fault(file, s.ext.at, "sluice: an unlimited rate_limit takes no algorithm")
			return l
		}
		l.algo, l.burst = s.ext.algo, s.ext.burst
	}
	if s.unlimited || !valid || s.rpu == 0 {
		return l
	}
	exact, err := l.envoy.Limit(l.algo, l.burst)
	if err == nil {
		err = b.logBound(exact)
	}
	if err != nil {
		at := s.at
		if s.ext != nil {
			at = s.ext.at
		}
		b.fault(file, at, "%v", err)
		return l
	}
	l.exact = exact
	return l
}
