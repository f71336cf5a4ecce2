package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"

	"github.com/sluice-rl/sluice/algorithms"
	"gopkg.in/yaml.v3"
)

// Reading one rules file into a fileSpec. The file is first checked the way
// envoyproxy/ratelimit checks it (validateYamlKeys: every mapping key, at
// any depth outside metadata, must be one the format knows), then read by
// position. Known keys in places where they mean nothing are ignored, as
// that service ignores them, so every file it accepts is accepted here.
// sluice's own keys (sluice, policies and the keys inside them) are checked
// strictly where they appear.

// envoyKeys are the keys envoyproxy/ratelimit accepts (config_impl.go).
var envoyKeys = map[string]bool{
	"domain": true, "key": true, "value": true, "descriptors": true, "rate_limit": true,
	"unit": true, "requests_per_unit": true, "unlimited": true, "shadow_mode": true,
	"quota_mode": true, "name": true, "replaces": true, "detailed_metric": true,
	"value_to_metric": true, "share_threshold": true, "metadata": true,
}

// The sluice keys and where they may appear.
const (
	keySluice   = "sluice"   // in a descriptor, or in a descriptor's metadata
	keyPolicies = "policies" // at the top of a file
	keySlotBy   = "slot_by"  // at the top of a file
)

// maxNodes bounds the nodes one file may expand to, aliases included.
const maxNodes = 200000

// reader reads one file; faults are collected, positions are 1-based.
type reader struct {
	file    string
	faults  []*ConfigError
	nodes   int
	tooMany bool // the maxNodes fault is reported
}

func (r *reader) fault(n *yaml.Node, format string, args ...any) {
	e := &ConfigError{File: r.file, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	r.faults = append(r.faults, e)
}

func posOf(n *yaml.Node) pos { return pos{n.Line, n.Column} }

var yamlLine = regexp.MustCompile(`^yaml: line (\d+):`)

// parseFile reads one rules file.
func parseFile(name string, data []byte) (*fileSpec, []*ConfigError) {
	r := &reader{file: name}
	spec := &fileSpec{name: name, domainPos: pos{1, 1}}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return spec, nil // an empty file: build reports the empty domain
		}
		e := &ConfigError{File: name, Msg: fmt.Sprintf(msgLoadingConfig, err)}
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			e.Line, _ = strconv.Atoi(m[1])
		}
		return nil, []*ConfigError{e}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil && !empty(&extra) {
		r.fault(&extra, msgSeveralDocuments)
	} else if err != nil && !errors.Is(err, io.EOF) {
		r.fault(nil, msgLoadingConfig, err)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	if empty(root) {
		return spec, r.faults
	}
	if root.Kind != yaml.MappingNode {
		r.fault(root, msgNotMapping, "the file")
		return nil, r.faults
	}
	r.validate(root)
	if len(r.faults) > 0 {
		return nil, r.faults
	}
	r.top(spec, root)
	if len(r.faults) > 0 {
		return nil, r.faults
	}
	return spec, nil
}

// empty reports whether n is nothing: no document, or a null.
func empty(n *yaml.Node) bool {
	if n.Kind == yaml.DocumentNode {
		return len(n.Content) == 0 || empty(n.Content[0])
	}
	return n.Kind == 0 || n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// deref follows aliases, counting nodes against maxNodes.
func (r *reader) deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	r.nodes++
	return n
}

// pair is one key and value of a mapping, merge keys resolved.
type pair struct {
	key   string
	kn    *yaml.Node
	value *yaml.Node
}

// pairs returns a mapping's pairs: the keys of "<<" merges first (YAML's
// merge key, which envoyproxy/ratelimit's YAML library resolves too), then
// the mapping's own keys, which replace merged ones. A key written twice in
// one mapping is a fault. Keys that are not strings are faults, in
// envoyproxy/ratelimit's words.
func (r *reader) pairs(m *yaml.Node) []pair {
	var out []pair
	index := map[string]int{}
	seen := map[string]bool{}
	add := func(p pair, own bool) {
		if own {
			if seen[p.key] {
				r.fault(p.kn, msgDuplicateMapKey, p.key)
				return
			}
			seen[p.key] = true
		}
		if i, ok := index[p.key]; ok {
			out[i] = p
			return
		}
		index[p.key] = len(out)
		out = append(out, p)
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		kn, vn := r.deref(m.Content[i]), m.Content[i+1]
		if kn.Kind == yaml.ScalarNode && kn.Tag == "!!merge" {
			for _, src := range r.mergeSources(vn) {
				for _, p := range r.pairs(src) {
					add(p, false)
				}
			}
			continue
		}
		if kn.Kind != yaml.ScalarNode || kn.Tag != "!!str" {
			r.fault(kn, msgKeyNotString, render(kn))
			continue
		}
		add(pair{key: kn.Value, kn: kn, value: vn}, true)
	}
	return out
}

// mergeSources returns the mappings a "<<" key merges: one, or a list.
func (r *reader) mergeSources(v *yaml.Node) []*yaml.Node {
	v = r.deref(v)
	switch v.Kind {
	case yaml.MappingNode:
		return []*yaml.Node{v}
	case yaml.SequenceNode:
		var out []*yaml.Node
		for _, e := range v.Content {
			if e = r.deref(e); e.Kind == yaml.MappingNode {
				out = append(out, e)
			} else {
				r.fault(e, msgNotMapping, "a merged value")
			}
		}
		return out
	}
	r.fault(v, msgNotMapping, "a merged value")
	return nil
}

// render writes a scalar the way envoyproxy/ratelimit quotes it in errors.
func render(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		if n.Tag == "!!null" {
			return "<nil>"
		}
		return n.Value
	}
	if n.Kind == yaml.MappingNode {
		return "map[...]"
	}
	return "[...]"
}

// validate is envoyproxy/ratelimit's validateYamlKeys over a mapping: every
// key known, lists hold mappings only, leaves are strings, integers,
// booleans or null. metadata is not looked into; sluice and policies are
// read strictly later and skipped here.
func (r *reader) validate(m *yaml.Node) {
	if r.nodes > maxNodes {
		return
	}
	for _, p := range r.pairs(m) {
		if p.key == keySluice || p.key == keyPolicies || p.key == keySlotBy {
			continue
		}
		if !envoyKeys[p.key] {
			r.fault(p.kn, msgUnknownKey, p.key)
			continue
		}
		if p.key == "metadata" {
			continue
		}
		r.validateValue(r.deref(p.value))
	}
	if r.nodes > maxNodes && !r.tooMany {
		r.tooMany = true
		r.fault(m, msgTooManyNodes, maxNodes)
	}
}

func (r *reader) validateValue(v *yaml.Node) {
	switch v.Kind {
	case yaml.SequenceNode:
		for _, e := range v.Content {
			e = r.deref(e)
			if e.Kind != yaml.MappingNode {
				r.fault(e, msgListOfNonMap, render(e))
				continue
			}
			r.validate(e)
		}
	case yaml.MappingNode:
		r.validate(v)
	case yaml.ScalarNode:
		switch v.Tag {
		case "!!str", "!!int", "!!bool", "!!null":
		default:
			r.fault(v, msgCheckingConfig)
		}
	}
}

// top reads the top mapping: domain, descriptors and policies.
func (r *reader) top(spec *fileSpec, m *yaml.Node) {
	for _, p := range r.pairs(m) {
		v := r.deref(p.value)
		switch p.key {
		case "domain":
			spec.domain = r.str(v, "domain")
			spec.domainPos = posOf(v)
		case "descriptors":
			spec.descriptors = r.descriptors(v)
		case keyPolicies:
			spec.policies = r.policies(v)
		case keySlotBy:
			spec.slotByPos = posOf(v)
			if spec.slotBy = r.str(v, keySlotBy); spec.slotBy == "" {
				r.fault(v, "slot_by must name a descriptor key")
			}
		case keySluice:
			r.fault(p.kn, msgUnknownKey+" (sluice belongs in a descriptor)", p.key)
		}
	}
}

// descriptors reads a descriptors list.
func (r *reader) descriptors(v *yaml.Node) []*descSpec {
	if empty(v) {
		return nil
	}
	if v.Kind != yaml.SequenceNode {
		r.fault(v, msgNotList, "descriptors")
		return nil
	}
	var out []*descSpec
	for _, e := range v.Content {
		if d := r.descriptor(r.deref(e)); d != nil {
			out = append(out, d)
		}
	}
	return out
}

func (r *reader) descriptor(m *yaml.Node) *descSpec {
	if r.nodes > maxNodes {
		return nil
	}
	d := &descSpec{at: posOf(m)}
	var ext, metaExt *extSpec
	for _, p := range r.pairs(m) {
		v := r.deref(p.value)
		switch p.key {
		case "key":
			d.key = r.str(v, "key")
		case "value":
			d.value = r.str(v, "value")
		case "rate_limit":
			d.limit = r.rateLimit(v)
		case "descriptors":
			d.children = r.descriptors(v)
		case "shadow_mode":
			d.shadow = r.boolean(v, p.key)
		case "detailed_metric":
			d.detailed = r.boolean(v, p.key)
		case "value_to_metric":
			d.valueToMetric = r.boolean(v, p.key)
		case "share_threshold":
			d.share = r.boolean(v, p.key)
		case "quota_mode":
			d.quota = r.boolean(v, p.key)
		case "metadata":
			metaExt = r.metadata(v)
		case keySluice:
			ext = r.extension(v)
		case keyPolicies:
			r.fault(p.kn, msgUnknownKey+" (policies belongs at the top of a file)", p.key)
		case keySlotBy:
			r.fault(p.kn, msgUnknownKey+" (slot_by belongs at the top of a file)", p.key)
		}
	}
	if ext != nil && metaExt != nil {
		r.fault(m, "sluice: written twice, as a key and in metadata; keep one")
	}
	if ext == nil {
		ext = metaExt
	}
	if ext != nil {
		if d.limit == nil {
			r.fault(m, "sluice: the extension needs a rate_limit in the same descriptor")
		} else {
			d.limit.ext = ext
		}
	}
	return d
}

// metadata returns the sluice extension written inside metadata, the
// spelling that envoyproxy/ratelimit also loads (it refuses an unknown
// sluice key beside rate_limit, but passes metadata through).
func (r *reader) metadata(v *yaml.Node) *extSpec {
	if empty(v) {
		return nil
	}
	if v.Kind != yaml.MappingNode {
		r.fault(v, msgNotMapping, "metadata")
		return nil
	}
	for _, p := range r.pairs(v) {
		if p.key == keySluice {
			return r.extension(r.deref(p.value))
		}
	}
	return nil
}

// extension reads sluice: {algorithm: token|leaky|fixed|sliding|log, burst: N}.
func (r *reader) extension(v *yaml.Node) *extSpec {
	if v.Kind != yaml.MappingNode {
		r.fault(v, msgNotMapping, "sluice")
		return nil
	}
	e := &extSpec{at: posOf(v), algo: algorithms.Fixed}
	for _, p := range r.pairs(v) {
		pv := r.deref(p.value)
		switch p.key {
		case "algorithm":
			name := r.str(pv, "algorithm")
			a, ok := ParseAlgo(name)
			if !ok || a == algorithms.Concurrency {
				r.fault(pv, "sluice: algorithm must be token, leaky, fixed, sliding or log, not '%s'", name)
				continue
			}
			e.algo = a
		case "burst":
			e.burst = r.positive(pv, "burst")
		default:
			r.fault(p.kn, msgUnknownKey+" (sluice takes algorithm and burst)", p.key)
		}
	}
	return e
}

// rateLimit reads a rate_limit block.
func (r *reader) rateLimit(v *yaml.Node) *limitSpec {
	if empty(v) {
		return nil
	}
	if v.Kind != yaml.MappingNode {
		r.fault(v, msgNotMapping, "rate_limit")
		return nil
	}
	l := &limitSpec{at: posOf(v)}
	for _, p := range r.pairs(v) {
		pv := r.deref(p.value)
		switch p.key {
		case "unit":
			l.unitText, l.unitAt = r.str(pv, "unit"), posOf(pv)
		case "requests_per_unit":
			l.rpu = r.uint32(pv, "requests_per_unit")
		case "unlimited":
			l.unlimited = r.boolean(pv, "unlimited")
		case "name":
			l.name = r.str(pv, "name")
		case "replaces":
			r.replaces(l, pv)
		}
	}
	return l
}

func (r *reader) replaces(l *limitSpec, v *yaml.Node) {
	if empty(v) {
		return
	}
	if v.Kind != yaml.SequenceNode {
		r.fault(v, msgNotList, "replaces")
		return
	}
	for _, e := range v.Content {
		e = r.deref(e)
		name := ""
		for _, p := range r.pairs(e) {
			if p.key == "name" {
				name = r.str(r.deref(p.value), "name")
			}
		}
		l.replaces = append(l.replaces, name)
		l.replAt = append(l.replAt, posOf(e))
	}
}

// str reads a scalar as the text it is written with; null is "".
func (r *reader) str(v *yaml.Node, what string) string {
	if v.Kind != yaml.ScalarNode {
		r.fault(v, "%s must be a string", what)
		return ""
	}
	if v.Tag == "!!null" {
		return ""
	}
	return v.Value
}

// yaml11Bools are the booleans of YAML 1.1, which envoyproxy/ratelimit's
// YAML library (yaml.v2) reads; a quoted scalar is a string, not one of them.
var yaml11Bools = map[string]bool{
	"y": true, "Y": true, "yes": true, "Yes": true, "YES": true, "on": true, "On": true, "ON": true,
	"true": true, "True": true, "TRUE": true,
	"n": false, "N": false, "no": false, "No": false, "NO": false, "off": false, "Off": false, "OFF": false,
	"false": false, "False": false, "FALSE": false,
}

func (r *reader) boolean(v *yaml.Node, what string) bool {
	if v.Kind == yaml.ScalarNode {
		if v.Tag == "!!null" {
			return false
		}
		if b, ok := yaml11Bools[v.Value]; ok && v.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) == 0 {
			return b
		}
	}
	r.fault(v, "%s must be true or false, not '%s'", what, render(v))
	return false
}

func (r *reader) uint32(v *yaml.Node, what string) uint32 {
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return 0
	}
	var u uint32
	if v.Kind != yaml.ScalarNode || v.Tag != "!!int" || v.Decode(&u) != nil {
		r.fault(v, "%s must be an integer from 0 to 4294967295, not '%s'", what, render(v))
		return 0
	}
	return u
}

func (r *reader) positive(v *yaml.Node, what string) int64 {
	var n int64
	if v.Kind != yaml.ScalarNode || v.Tag != "!!int" || v.Decode(&n) != nil || n < 1 {
		r.fault(v, "%s must be a positive integer, not '%s'", what, render(v))
		return 0
	}
	return n
}
