package policy

import (
	"encoding/binary"
	"sort"

	"github.com/sluice-rl/sluice/algorithms"
)

// Binary encodings, for snapshots and the Raft log. They are deterministic:
// the same policies or rules always encode to the same bytes, on every
// node. Integers are unsigned varints (encoding/binary), strings a varint
// length and the bytes, and each encoding starts with a magic and a
// version byte; Decode refuses other versions.
//
//	policies: "SLPO" 1 n {policy}                        sorted by name
//	policy:   name algo:byte count period shadow:byte description
//	rule set: "SLRS" 1 nfiles {file name} content
//	content:  ndomains {name fileIndex level} npolicies {fileIndex policy} [slotted]
//	slotted:  nslotted {domainIndex slotBy}                only when a domain has slot_by
//	level:    nrules {rule}                              in file order
//	rule:     key value flags:byte [limit] level
//	limit:    unlimited:byte rpu unit:byte name nreplaces {name} algo:byte burst
//
// The rule set's Hash is the SHA-256 of its content, which holds no file
// names, so nodes that read the same rules from different paths agree.

const (
	magicPolicies = "SLPO"
	magicRules    = "SLRS"
	codecVersion  = 1
)

// Rule flags in the encoding.
const (
	flagHasLimit = 1 << iota
	flagShadow
	flagDetailed
	flagValueToMetric
	flagShare
	flagQuota
	flagAll = flagHasLimit | flagShadow | flagDetailed | flagValueToMetric | flagShare | flagQuota
)

// maxDecodeDepth bounds the nesting a decoded rule tree may have.
const maxDecodeDepth = 1000

func appendUvarint(dst []byte, v uint64) []byte { return binary.AppendUvarint(dst, v) }

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// appendPolicy writes a policy without its file.
func appendPolicy(dst []byte, p *Policy) []byte {
	dst = appendString(dst, p.Name)
	dst = append(dst, byte(p.Limit.Algo))
	dst = appendUvarint(dst, uint64(p.Limit.Count))
	dst = appendUvarint(dst, uint64(p.Limit.Period))
	dst = append(dst, boolByte(p.Shadow))
	return appendString(dst, p.Description)
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// EncodePolicies appends the encoding of ps (sorted by name, files left
// out) to dst: the command-owned policies of a snapshot, or one policy of a
// log entry.
func EncodePolicies(dst []byte, ps []Policy) []byte {
	sorted := make([]*Policy, len(ps))
	for i := range ps {
		sorted[i] = &ps[i]
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	dst = append(dst, magicPolicies...)
	dst = append(dst, codecVersion)
	dst = appendUvarint(dst, uint64(len(sorted)))
	for _, p := range sorted {
		dst = appendPolicy(dst, p)
	}
	return dst
}

// DecodePolicies reads EncodePolicies's bytes. Every policy is validated
// and names must be unique; anything else is ErrCorrupt.
func DecodePolicies(b []byte) ([]Policy, error) {
	d := decoder{b: b}
	if !d.magic(magicPolicies) {
		return nil, errCorrupt("not a policies encoding, or another version")
	}
	n := d.count(3)
	out := make([]Policy, 0, n)
	seen := map[string]bool{}
	for i := 0; i < n && d.err == nil; i++ {
		p := d.policy()
		if d.err != nil {
			break
		}
		if err := p.Validate(); err != nil {
			return nil, errCorrupt("%v", err)
		}
		if seen[p.Name] {
			return nil, errCorrupt("policy '%s' appears twice", p.Name)
		}
		seen[p.Name] = true
		out = append(out, p)
	}
	if err := d.end(); err != nil {
		return nil, err
	}
	return out, nil
}

// Encode appends the set's encoding to dst.
func (rs *RuleSet) Encode(dst []byte) []byte {
	if rs == nil {
		rs = &RuleSet{}
	}
	dst = append(dst, magicRules...)
	dst = append(dst, codecVersion)
	dst = appendUvarint(dst, uint64(len(rs.files)))
	for _, f := range rs.files {
		dst = appendString(dst, f)
	}
	return appendContent(dst, rs)
}

// appendContent writes everything that decides, without file names.
func appendContent(dst []byte, rs *RuleSet) []byte {
	dst = appendUvarint(dst, uint64(len(rs.order)))
	for _, d := range rs.order {
		dst = appendString(dst, d.name)
		dst = appendUvarint(dst, uint64(d.file))
		dst = appendLevel(dst, &d.root)
	}
	dst = appendUvarint(dst, uint64(len(rs.policies)))
	for i, p := range rs.policies {
		dst = appendUvarint(dst, uint64(rs.pfiles[i]))
		dst = appendPolicy(dst, p)
	}
	// slot_by is written only when a domain has one, so that the content,
	// and with it the hash, of a set without it is what it always was.
	slotted := 0
	for _, d := range rs.order {
		if d.slotBy != "" {
			slotted++
		}
	}
	if slotted > 0 {
		dst = appendUvarint(dst, uint64(slotted))
		for i, d := range rs.order {
			if d.slotBy != "" {
				dst = appendUvarint(dst, uint64(i))
				dst = appendString(dst, d.slotBy)
			}
		}
	}
	return dst
}

func appendLevel(dst []byte, lv *level) []byte {
	dst = appendUvarint(dst, uint64(len(lv.list)))
	for _, r := range lv.list {
		dst = appendString(dst, r.key)
		dst = appendString(dst, r.value)
		f := byte(0)
		if r.limit != nil {
			f |= flagHasLimit
		}
		if r.shadow {
			f |= flagShadow
		}
		if r.detailed {
			f |= flagDetailed
		}
		if r.valueToMet {
			f |= flagValueToMetric
		}
		if r.share {
			f |= flagShare
		}
		if r.quota {
			f |= flagQuota
		}
		dst = append(dst, f)
		if l := r.limit; l != nil {
			dst = append(dst, boolByte(l.unlimited))
			dst = appendUvarint(dst, uint64(l.envoy.RequestsPerUnit))
			dst = append(dst, byte(l.envoy.Unit))
			dst = appendString(dst, l.name)
			dst = appendUvarint(dst, uint64(len(l.replaces)))
			for _, n := range l.replaces {
				dst = appendString(dst, n)
			}
			dst = append(dst, byte(l.algo))
			dst = appendUvarint(dst, uint64(l.burst))
		}
		dst = appendLevel(dst, &r.children)
	}
	return dst
}

// DecodeRuleSet reads Encode's bytes and rebuilds the set through the same
// checks as Load, so a decoded set is as valid as a loaded one; opts are
// Load's. Malformed input is ErrCorrupt; input that decodes but fails a
// check is the check's *LoadError.
func DecodeRuleSet(b []byte, opts Options) (*RuleSet, error) {
	d := decoder{b: b}
	if !d.magic(magicRules) {
		return nil, errCorrupt("not a rule set encoding, or another version")
	}
	nf := d.count(1)
	specs := make([]*fileSpec, 0, nf)
	for i := 0; i < nf && d.err == nil; i++ {
		specs = append(specs, &fileSpec{name: d.str()})
	}
	nd := d.count(3)
	domainFile := make([]uint64, 0, nd) // the file of each domain, in encoding order
	for i := 0; i < nd && d.err == nil; i++ {
		name := d.str()
		fi := d.uvarint()
		descs := d.level(0)
		if d.err == nil && (fi >= uint64(len(specs)) || specs[fi].domain != "" || name == "") {
			d.fail("domain '%s' names no file, an empty name, or a file that has a domain already", name)
		}
		if d.err == nil {
			specs[fi].domain, specs[fi].descriptors = name, descs
			domainFile = append(domainFile, fi)
		}
	}
	np := d.count(3)
	for i := 0; i < np && d.err == nil; i++ {
		fi := d.uvarint()
		p := d.policy()
		if d.err == nil && fi >= uint64(len(specs)) {
			d.fail("policy '%s' names no file", p.Name)
		}
		if d.err == nil {
			specs[fi].policies = append(specs[fi].policies, &policySpec{p: p})
		}
	}
	if d.err == nil && len(d.b) > 0 {
		ns := d.count(2)
		for i := 0; i < ns && d.err == nil; i++ {
			di, by := d.uvarint(), d.str()
			switch {
			case d.err != nil:
			case di >= uint64(len(domainFile)) || by == "" || specs[domainFile[di]].slotBy != "":
				d.fail("slot_by of domain %d: no such domain, an empty key, or written twice", di)
			default:
				specs[domainFile[di]].slotBy = by
			}
		}
	}
	if err := d.end(); err != nil {
		return nil, err
	}
	return build(specs, opts)
}

// decoder reads an encoding; the first fault sticks in err.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = errCorrupt(format, args...)
	}
	d.b = nil
}

func (d *decoder) magic(m string) bool {
	if len(d.b) < len(m)+1 || string(d.b[:len(m)]) != m || d.b[len(m)] != codecVersion {
		return false
	}
	d.b = d.b[len(m)+1:]
	return true
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("truncated or overlong integer")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a number of items that each take at least min bytes, so that
// a corrupt count cannot make the decoder allocate beyond its input.
func (d *decoder) count(min int) int {
	v := d.uvarint()
	if v > uint64(len(d.b)/min) {
		d.fail("count %d exceeds the input", v)
		return 0
	}
	return int(v)
}

func (d *decoder) byte1() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.fail("truncated")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) str() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.fail("string runs past the end")
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) boolean() bool {
	switch d.byte1() {
	case 0:
		return false
	case 1:
		return true
	}
	d.fail("boolean out of range")
	return false
}

func (d *decoder) int63() int64 {
	v := d.uvarint()
	if v > 1<<63-1 {
		d.fail("integer out of range")
		return 0
	}
	return int64(v)
}

func (d *decoder) policy() Policy {
	var p Policy
	p.Name = d.str()
	p.Limit.Algo = algorithms.Algo(d.byte1())
	p.Limit.Count = d.int63()
	p.Limit.Period = d.int63()
	p.Shadow = d.boolean()
	p.Description = d.str()
	return p
}

func (d *decoder) level(depth int) []*descSpec {
	if depth > maxDecodeDepth {
		d.fail("rules nested deeper than %d", maxDecodeDepth)
		return nil
	}
	n := d.count(4)
	out := make([]*descSpec, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		s := &descSpec{key: d.str(), value: d.str()}
		f := d.byte1()
		if f&^flagAll != 0 {
			d.fail("unknown rule flags %#x", f)
			return nil
		}
		s.shadow, s.detailed = f&flagShadow != 0, f&flagDetailed != 0
		s.valueToMetric, s.share, s.quota = f&flagValueToMetric != 0, f&flagShare != 0, f&flagQuota != 0
		if f&flagHasLimit != 0 {
			l := &limitSpec{unlimited: d.boolean()}
			rpu := d.uvarint()
			if rpu > 1<<32-1 {
				d.fail("requests_per_unit out of range")
			}
			l.rpu = uint32(rpu)
			if u := Unit(d.byte1()); !l.unlimited {
				l.unitText = u.String()
			} else if u != UnitUnknown {
				d.fail("an unlimited rule has a unit")
			}
			l.name = d.str()
			nr := d.count(1)
			for j := 0; j < nr && d.err == nil; j++ {
				l.replaces = append(l.replaces, d.str())
			}
			algo := algorithms.Algo(d.byte1())
			burst := d.int63()
			if algo != algorithms.Fixed || burst != 0 {
				l.ext = &extSpec{algo: algo, burst: burst}
				if algo < algorithms.Token || algo > algorithms.Log {
					d.fail("unknown algorithm %d", algo)
				}
			}
			s.limit = l
		}
		s.children = d.level(depth + 1)
		out = append(out, s)
	}
	return out
}

// end reports the first fault, or trailing bytes.
func (d *decoder) end() error {
	if d.err == nil && len(d.b) > 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	return d.err
}
