package policy

import (
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/algorithms"
)

// Fuzz targets for every parser and for the matcher. Seed corpora live in
// testdata/fuzz/<target>.

// FuzzLoad: any bytes as a rules file either load, and then survive an
// encode/decode round trip with the same hash and plan without panicking,
// or are refused with a one-line LoadError naming the file.
func FuzzLoad(f *testing.F) {
	for _, name := range []string{"basic_config.yaml", "share_threshold.yaml", "wildcard.yaml", "bad_yaml.yaml", "non_map_list.yaml"} {
		if b, err := os.ReadFile("testdata/envoy/" + name); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(matchRules))
	f.Add([]byte("policies:\n  - {name: free, algorithm: token, rate: 10/s, capacity: 20}\n"))
	f.Add([]byte(slottedRules))
	f.Add([]byte("domain: a\nslot_by: [x]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		opts := Options{LogMaxLimit: 1 << 20}
		rs, err := Parse([]File{{Name: "f.yaml", Data: data}}, opts)
		if err != nil {
			var le *LoadError
			if !errors.As(err, &le) || len(le.Faults) == 0 || rs != nil {
				t.Fatalf("refusal %v (%T) with rule set %v", err, err, rs)
			}
			if msg := err.Error(); strings.ContainsAny(msg, "\r\n") || !strings.HasPrefix(msg, "f.yaml") {
				t.Fatalf("refusal text %q is not one line naming the file", msg)
			}
			return
		}
		enc := rs.Encode(nil)
		back, err := DecodeRuleSet(enc, opts)
		if err != nil {
			t.Fatalf("decoding a loaded set: %v", err)
		}
		if string(back.Encode(nil)) != string(enc) || back.Hash() != rs.Hash() {
			t.Fatalf("round trip changed the set")
		}
		for _, dom := range rs.Domains() {
			if back.SlotBy(dom) != rs.SlotBy(dom) {
				t.Fatalf("domain %q: slot_by %q after a round trip; want %q", dom, back.SlotBy(dom), rs.SlotBy(dom))
			}
		}
		if err := rs.CheckSlotted(); err != nil && !errors.Is(err, ErrNotSlotted) {
			t.Fatalf("CheckSlotted: %v", err)
		}
		var p Plan
		for _, dom := range rs.Domains() {
			d := rs.domains[dom]
			ds := []Descriptor{}
			for _, r := range d.root.list {
				ds = append(ds, desc(r.key, r.value))
				for _, c := range r.children.list {
					ds = append(ds, desc(r.key, r.value+"x", c.key, c.value))
				}
			}
			if len(ds) > 0 {
				if err := rs.Plan(&p, []byte(dom), 1, ds); err != nil {
					t.Fatalf("Plan: %v", err)
				}
			}
		}
	})
}

// The rules the matcher fuzz target matches against, in three domains.
func fuzzRules(t testing.TB) ([]File, map[string][]*descSpec) {
	wild, err := os.ReadFile("testdata/envoy/wildcard.yaml")
	if err != nil {
		t.Fatal(err)
	}
	share, err := os.ReadFile("testdata/envoy/share_threshold.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files := []File{
		{Name: "api.yaml", Data: []byte(matchRules)},
		{Name: "share.yaml", Data: share},
		{Name: "wild.yaml", Data: []byte(strings.Replace(string(wild), "domain: test-domain", "domain: wild", 1))},
	}
	specs := map[string][]*descSpec{}
	for _, fl := range files {
		s, errs := parseFile(fl.Name, fl.Data)
		if len(errs) > 0 {
			t.Fatal(errs[0])
		}
		specs[s.domain] = s.descriptors
	}
	return files, specs
}

// oracleMatch is the matching rule written as plainly as possible over the
// parsed specs: exact value, then the first wildcard in file order (as a
// regular expression), then the key alone; the last entry's rule must have
// a rate_limit.
func oracleMatch(level []*descSpec, entries []Entry) (leaf *descSpec, whitelisted bool) {
	for i, e := range entries {
		var m *descSpec
		for _, d := range level {
			if d.key == string(e.Key) && d.value != "" && d.value == string(e.Value) {
				m = d
				break
			}
		}
		for _, d := range level {
			if m == nil && d.key == string(e.Key) && strings.Contains(d.value, "*") && globOracle(d.value, string(e.Value)) {
				m = d
			}
		}
		for _, d := range level {
			if m == nil && d.key == string(e.Key) && d.value == "" {
				m = d
			}
		}
		if m == nil {
			return nil, false
		}
		if i == len(entries)-1 {
			if m.limit == nil {
				return nil, true
			}
			return m, false
		}
		level = m.children
	}
	return nil, false
}

func globOracle(pattern, value string) bool {
	parts := strings.Split(pattern, "*")
	for i := range parts {
		parts[i] = regexp.QuoteMeta(parts[i])
	}
	return regexp.MustCompile("(?s)^" + strings.Join(parts, ".*") + "$").MatchString(value)
}

// fuzzDescriptor turns bytes into a descriptor: entries separated by 0xff,
// each a key picked from keys and a value that starts with one of values
// (or not) followed by bytes from a small alphabet.
func fuzzDescriptor(data []byte, keys, values []string) Descriptor {
	const alphabet = "ab/*_.-x0195ftp"
	var d Descriptor
	for _, chunk := range strings.Split(string(data), "\xff") {
		if len(chunk) == 0 || len(d.Entries) == 6 {
			continue
		}
		key := keys[int(chunk[0])%len(keys)]
		var v strings.Builder
		rest := chunk[1:]
		if len(rest) > 0 && rest[0] < 128 {
			v.WriteString(values[int(rest[0])%len(values)])
			rest = rest[1:]
		}
		for i := 0; i < len(rest); i++ {
			v.WriteByte(alphabet[int(rest[i])%len(alphabet)])
		}
		d.Entries = append(d.Entries, Entry{Key: []byte(key), Value: []byte(v.String())})
	}
	return d
}

func collect(level []*descSpec, keys, values map[string]bool) {
	for _, d := range level {
		keys[d.key] = true
		values[d.value] = true
		if i := strings.IndexByte(d.value, '*'); i >= 0 {
			values[d.value[:i]] = true
		}
		collect(d.children, keys, values)
	}
}

// FuzzMatch compares Plan with oracleMatch on descriptors built from the
// fuzzer's bytes, and checks the derived key's shape.
func FuzzMatch(f *testing.F) {
	files, specs := fuzzRules(f)
	rs, err := Parse(files, Options{})
	if err != nil {
		f.Fatal(err)
	}
	keySet, valueSet := map[string]bool{"zz": true}, map[string]bool{"": true}
	for _, s := range specs {
		collect(s, keySet, valueSet)
	}
	var keys, values []string
	for k := range keySet {
		keys = append(keys, k)
	}
	for v := range valueSet {
		values = append(values, v)
	}
	sortStrings(keys)
	sortStrings(values)
	domains := []string{"api", "test-domain", "wild", "none"}
	f.Add(byte(0), []byte("\x00\x01"))
	f.Add(byte(1), []byte("\x03\x05ab\xff\x07\x02"))
	f.Add(byte(2), []byte("\x10\x20/x/y"))
	f.Fuzz(func(t *testing.T, dom byte, data []byte) {
		domain := domains[int(dom)%len(domains)]
		d := fuzzDescriptor(data, keys, values)
		var p Plan
		if err := rs.Plan(&p, []byte(domain), 1, []Descriptor{d}); err != nil {
			t.Fatalf("Plan: %v", err)
		}
		it := p.Items[0]
		leaf, whitelisted := oracleMatch(specs[domain], d.Entries)
		if leaf == nil {
			if it.Flags&FlagNoRule == 0 || (it.Flags&FlagWhitelisted != 0) != whitelisted {
				t.Fatalf("%s %q: planned %+v; oracle: no rule (whitelisted %v)", domain, d.Entries, it, whitelisted)
			}
			if _, ok := rs.AppendStatsKey(nil, []byte(domain), d); ok {
				t.Fatalf("a stats key without a limit")
			}
			return
		}
		l := leaf.limit
		if it.Flags&FlagNoRule != 0 || it.Name != l.name || (it.Flags&FlagUnlimited != 0) != l.unlimited ||
			(it.Flags&FlagShadow != 0) != leaf.shadow || !l.unlimited && it.Envoy.RequestsPerUnit != l.rpu {
			t.Fatalf("%s %q: planned %+v; oracle: %+v %+v", domain, d.Entries, it, *leaf, *l)
		}
		if it.Decides() {
			head := string(new(ruleKey).head(nil, []byte(domain), it.Limit.Algo))
			if !strings.HasPrefix(string(it.Key), head) || strings.Count(string(it.Key), ":") != 2+len(d.Entries) {
				t.Fatalf("key %q for %q", it.Key, d.Entries)
			}
		}
		if _, ok := rs.AppendStatsKey(nil, []byte(domain), d); !ok {
			t.Fatalf("no stats key for a limit")
		}
	})
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// FuzzDecodeRuleSet: any bytes decode to a set that re-encodes stably, or
// are refused.
func FuzzDecodeRuleSet(f *testing.F) {
	files, _ := fuzzRules(f)
	rs, err := Parse(append(files, File{Name: "p.yaml", Data: []byte("policies: [{name: free, algorithm: token, rate: 10/s, capacity: 20}]")}), Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(rs.Encode(nil))
	f.Add((*RuleSet)(nil).Encode(nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := DecodeRuleSet(data, Options{})
		if err != nil {
			if rs != nil {
				t.Fatal("a rule set with an error")
			}
			return
		}
		enc := rs.Encode(nil)
		back, err := DecodeRuleSet(enc, Options{})
		if err != nil || string(back.Encode(nil)) != string(enc) || back.Hash() != rs.Hash() {
			t.Fatalf("re-encoding is not stable: %v", err)
		}
	})
}

// FuzzDecodePolicies: any bytes decode to valid, uniquely named policies
// that re-encode stably, or are refused.
func FuzzDecodePolicies(f *testing.F) {
	f.Add(EncodePolicies(nil, []Policy{tokenPolicy("free", 20), {Name: "d", Limit: algorithms.Limit{Algo: algorithms.Fixed, Count: 1, Period: 1}, Shadow: true, Description: "x"}}))
	f.Add(EncodePolicies(nil, nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := DecodePolicies(data)
		if err != nil {
			return
		}
		for i := range ps {
			if err := ps[i].Validate(); err != nil {
				t.Fatalf("decoded an invalid policy: %v", err)
			}
		}
		enc := EncodePolicies(nil, ps)
		back, err := DecodePolicies(enc)
		if err != nil || string(EncodePolicies(nil, back)) != string(enc) {
			t.Fatalf("re-encoding is not stable: %v", err)
		}
	})
}

// FuzzUnpackOverride: words either unpack to an override that packs back
// to the same words, or are refused.
func FuzzUnpackOverride(f *testing.F) {
	f.Add(int64(1<<63-1), int64(2), int64(0))
	f.Add(int64(5), int64(1|1<<8|20<<16), int64(100))
	f.Fuzz(func(t *testing.T, a, b, c int64) {
		w := [3]int64{a, b, c}
		o, err := UnpackOverride(w)
		if err != nil {
			return
		}
		back, err := o.Pack()
		if err != nil || back != w {
			t.Fatalf("Pack(UnpackOverride(%v)) = %v, %v", w, back, err)
		}
	})
}
