package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/algorithms"
)

func parseOne(t *testing.T, yaml string) (*RuleSet, error) {
	t.Helper()
	return Parse([]File{{Name: "r.yaml", Data: []byte(yaml)}}, Options{LogMaxLimit: 1000})
}

// limitOf plans one descriptor of domain d and returns its item.
func limitOf(t *testing.T, rs *RuleSet, domain string, kv ...string) Item {
	t.Helper()
	var p Plan
	if err := rs.Plan(&p, []byte(domain), 1, []Descriptor{desc(kv...)}); err != nil {
		t.Fatal(err)
	}
	return p.Items[0]
}

func TestLoadSluiceExtensionPicksTheAlgorithm(t *testing.T) {
	rs, err := parseOne(t, `domain: d
descriptors:
  - key: a
    rate_limit: {unit: second, requests_per_unit: 10}
    sluice: {algorithm: token, burst: 25}
  - key: b
    rate_limit: {unit: minute, requests_per_unit: 60}
    sluice: {algorithm: leaky}
  - key: c
    rate_limit: {unit: hour, requests_per_unit: 5}
    sluice: {algorithm: sliding}
  - key: e
    rate_limit: {unit: day, requests_per_unit: 7}
    sluice: {algorithm: log}
  - key: f
    rate_limit: {unit: week, requests_per_unit: 3}
  - key: g
    rate_limit: {unit: MONTH, requests_per_unit: 3}
    metadata: {sluice: {algorithm: token}, other: kept}
`)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]algorithms.Limit{
		"a": {Algo: algorithms.Token, Count: 25, Period: int64(100 * time.Millisecond)},
		"b": {Algo: algorithms.Leaky, Count: 60, Period: int64(time.Second)},
		"c": {Algo: algorithms.Sliding, Count: 5, Period: int64(time.Hour)},
		"e": {Algo: algorithms.Log, Count: 7, Period: int64(24 * time.Hour)},
		"f": {Algo: algorithms.Fixed, Count: 3, Period: int64(7 * 24 * time.Hour)},
		"g": {Algo: algorithms.Token, Count: 3, Period: int64(10 * 24 * time.Hour)},
	}
	for key, want := range cases {
		if got := limitOf(t, rs, "d", key, "x").Limit; got != want {
			t.Errorf("%s: %+v; want %+v", key, got, want)
		}
	}
}

func TestLoadRefusesWithFileLineAndColumn(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{"domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1}\n    sluice: {algorithm: magic}\n",
			"r.yaml:5:25: sluice: algorithm must be token, leaky, fixed, sliding or log, not 'magic'"},
		{"domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1}\n    sluice: {algorithm: fixed, burst: 3}\n",
			"r.yaml:5:13: invalid limit: burst applies to the token and leaky algorithms only"},
		{"domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1}\n    sluice: {algo: token}\n",
			"r.yaml:5:14: config error, unknown key 'algo' (sluice takes algorithm and burst)"},
		{"domain: d\ndescriptors:\n  - key: a\n    sluice: {algorithm: token}\n",
			"r.yaml:3:5: sluice: the extension needs a rate_limit in the same descriptor"},
		{"domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unlimited: true}\n    sluice: {algorithm: token}\n",
			"r.yaml:5:13: sluice: an unlimited rate_limit takes no algorithm"},
		{"domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: -3}\n",
			"r.yaml:4:51: requests_per_unit must be an integer from 0 to 4294967295, not '-3'"},
		{"domain: d\ndescriptors:\n  - key: a\n    shadow_mode: maybe\n",
			"r.yaml:4:18: shadow_mode must be true or false, not 'maybe'"},
		{"domain: d\ndescriptors:\n  - key: a\n    key: b\n",
			"r.yaml:4:5: key 'key' appears twice in one mapping"},
		{"domain: d\ndescriptors:\n  - key: a\n    value: 1.5\n",
			"r.yaml:4:12: error checking config"},
		{"domain: d\n---\ndomain: e\n",
			"r.yaml:2:1: a file holds one YAML document; this one has several"},
		{"- a\n- b\n", "r.yaml:1:1: the file must be a mapping"},
		{"domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 2000000000}\n    sluice: {algorithm: token}\n",
			"r.yaml:5:13: invalid limit: rate is too high: at most 1 per nanosecond"},
		{"domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 2000}\n    sluice: {algorithm: log}\n",
			"r.yaml:5:13: invalid limit: the limit is above log-max-limit (1000)"},
		{"domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1}\n    sluice: {algorithm: token}\n    metadata: {sluice: {algorithm: log}}\n",
			"r.yaml:3:5: sluice: written twice, as a key and in metadata; keep one"},
		{"domain: d\nsluice: {algorithm: token}\n",
			"r.yaml:2:1: config error, unknown key 'sluice' (sluice belongs in a descriptor)"},
	}
	for _, c := range cases {
		_, err := parseOne(t, c.yaml)
		if err == nil || err.Error() != c.want {
			t.Errorf("Parse(%q)\n  = %v\nwant %s", c.yaml, err, c.want)
		}
	}
}

func TestLoadCollectsEveryFaultAndRefusesTheWholeSet(t *testing.T) {
	good := File{Name: "good.yaml", Data: []byte("domain: good\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1}\n")}
	bad := File{Name: "bad.yaml", Data: []byte("domain: bad\ndescriptors:\n  - key: a\n    rate_limit: {unit: fortnight}\n  - value: x\n")}
	rs, err := Parse([]File{good, bad}, Options{})
	var le *LoadError
	if rs != nil || !errors.As(err, &le) || len(le.Faults) != 2 {
		t.Fatalf("Parse = %v, %v; want no rule set and two faults", rs, err)
	}
	want := "bad.yaml:4:24: invalid rate limit unit 'fortnight'; bad.yaml:5:5: descriptor has empty key"
	if err.Error() != want {
		t.Fatalf("error = %q; want %q", err, want)
	}
}

func TestLoadYAMLAnchorsAndMergeKeys(t *testing.T) {
	rs, err := parseOne(t, `domain: d
descriptors:
  - key: a
    rate_limit: &base {unit: minute, requests_per_unit: 10}
  - key: b
    rate_limit:
      <<: *base
      requests_per_unit: 20
  - key: c
    rate_limit: *base
`)
	if err != nil {
		t.Fatal(err)
	}
	for key, rpu := range map[string]uint32{"a": 10, "b": 20, "c": 10} {
		if got := limitOf(t, rs, "d", key, "x").Envoy; got != (EnvoyLimit{rpu, UnitMinute}) {
			t.Errorf("%s: %+v; want %d/minute", key, got, rpu)
		}
	}
}

func TestLoadRefusesAnAliasBomb(t *testing.T) {
	// Each level is a descriptor holding the previous one twice: 2^30 nodes.
	var b strings.Builder
	b.WriteString("domain: d\ndescriptors:\n  - &a0 {key: k}\n")
	for i := 1; i <= 30; i++ {
		n, prev := strconv.Itoa(i), strconv.Itoa(i-1)
		b.WriteString("  - &a" + n + " {key: k" + n + ", descriptors: [*a" + prev + ", *a" + prev + "]}\n")
	}
	start := time.Now()
	_, err := parseOne(t, b.String())
	if err == nil || !strings.Contains(err.Error(), "YAML nodes") {
		t.Fatalf("alias bomb: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second { // generous: a loaded 2-core machine
		t.Fatalf("alias bomb took %v", d)
	}
}

func TestLoadPoliciesSection(t *testing.T) {
	rs, err := Parse([]File{{Name: "p.yaml", Data: []byte(`policies:
  - name: free
    algorithm: token
    rate: 10/s
    capacity: 20
    description: free tier
  - name: daily:quota
    algorithm: fixed
    limit: 1000
    window: 1d
  - name: jobs
    algorithm: concurrency
    limit: 5
    lease: 30s
    shadow: true
  - name: slow
    algorithm: leaky
    rate: 100/90s
    capacity: 3
  - name: half
    algorithm: token
    rate: 0.5
    capacity: 1
`)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Policy{
		{Name: "daily:quota", Limit: algorithms.Limit{Algo: algorithms.Fixed, Count: 1000, Period: int64(24 * time.Hour)}, File: "p.yaml"},
		{Name: "free", Limit: algorithms.Limit{Algo: algorithms.Token, Count: 20, Period: int64(100 * time.Millisecond)}, Description: "free tier", File: "p.yaml"},
		{Name: "half", Limit: algorithms.Limit{Algo: algorithms.Token, Count: 1, Period: int64(2 * time.Second)}, File: "p.yaml"},
		{Name: "jobs", Limit: algorithms.Limit{Algo: algorithms.Concurrency, Count: 5, Period: int64(30 * time.Second)}, Shadow: true, File: "p.yaml"},
		{Name: "slow", Limit: algorithms.Limit{Algo: algorithms.Leaky, Count: 3, Period: int64(900 * time.Millisecond)}, File: "p.yaml"},
	}
	got := rs.Policies()
	if len(got) != len(want) {
		t.Fatalf("%d policies; want %d", len(got), len(want))
	}
	for i := range want {
		if *got[i] != want[i] {
			t.Errorf("policy %d = %+v; want %+v", i, *got[i], want[i])
		}
	}
	if len(rs.Domains()) != 0 {
		t.Fatalf("domains %v", rs.Domains())
	}
}

func TestLoadPoliciesRefusals(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{"policies:\n  - name: x\n    algorithm: token\n    rate: 10/s\n",
			"p.yaml:2:5: policy 'x' needs capacity"},
		{"policies:\n  - name: x\n    algorithm: fixed\n    limit: 5\n    window: 60\n",
			"p.yaml:5:13: invalid limit: window needs a unit, like 60s or 1500ms"},
		{"policies:\n  - name: x\n    algorithm: fixed\n    limit: 5\n    window: 1m\n    rate: 1/s\n",
			"p.yaml:6:11: rate does not apply to algorithm fixed (it takes window and limit)"},
		{"policies:\n  - name: bad name\n    algorithm: fixed\n    limit: 5\n    window: 1m\n",
			"p.yaml:2:5: policy 'bad name': invalid policy name 'bad name': use 1 to 128 of the characters A-Z a-z 0-9 _ . : -"},
		{"policies:\n  - name: x\n    algorithm: token\n    rate: .5/s\n    capacity: 1\n",
			"p.yaml:4:11: invalid limit: invalid rate '.5/s': use N/unit like 10/s, 100/m, N/duration like 100/90s, or N per second"},
		{"policies:\n  - name: x\n    algorithm: fixed\n    limit: 5\n    window: 1m\n    colour: red\n",
			"p.yaml:6:5: config error, unknown key 'colour' (a policy takes name, algorithm, rate, capacity, limit, window, lease, shadow, description)"},
	}
	for _, c := range cases {
		_, err := Parse([]File{{Name: "p.yaml", Data: []byte(c.yaml)}}, Options{})
		if err == nil || err.Error() != c.want {
			t.Errorf("Parse(%q)\n  = %v\nwant %s", c.yaml, err, c.want)
		}
	}
	a := File{Name: "a.yaml", Data: []byte("policies:\n  - {name: x, algorithm: fixed, limit: 1, window: 1s}\n")}
	b := File{Name: "b.yaml", Data: []byte("policies:\n  - {name: x, algorithm: fixed, limit: 2, window: 1s}\n")}
	if _, err := Parse([]File{a, b}, Options{}); err == nil || err.Error() != "b.yaml:2:5: policy 'x' is defined twice (first in a.yaml)" {
		t.Errorf("a policy in two files: %v", err)
	}
}

// TestLoadDirectorySkipsDotEntriesAndFollowsSymlinks lays out a directory
// the way a Kubernetes ConfigMap volume does: the files in a timestamped
// directory, a ..data symlink to it, and visible symlinks into ..data.
func TestLoadDirectorySkipsDotEntriesAndFollowsSymlinks(t *testing.T) {
	dir := t.TempDir()
	configMap(t, dir, "..2026_01_01", map[string]string{
		"a.yaml": "domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n",
		"b.yml":  "domain: b\n",
		"notes":  "not a rules file",
	})
	if err := os.WriteFile(filepath.Join(dir, ".hidden.yaml"), []byte("domain: a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rs, err := Load([]string{dir}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rs.Domains(), ","); got != "a,b" {
		t.Fatalf("domains %s; want a,b (..data, the timestamped directory and dot files skipped)", got)
	}
	if _, err := Load([]string{filepath.Join(dir, "missing.yaml")}, Options{}); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a missing file: %v", err)
	}
	if _, err := Load(nil, Options{}); err != ErrNoRulesPath {
		t.Fatalf("no path: %v", err)
	}
	empty := t.TempDir()
	if rs, err := Load([]string{empty}, Options{}); err != nil || len(rs.Domains()) != 0 {
		t.Fatalf("an empty directory: %v %v", rs, err)
	}
}

// configMap writes files into dir/version and points dir/..data and a
// visible symlink per file at them, as the kubelet does; a second call
// swaps ..data atomically (rename over the old link).
func configMap(t *testing.T, dir, version string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, version), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, version, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tmp := filepath.Join(dir, "..data_tmp")
	os.Remove(tmp)
	if err := os.Symlink(version, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	for name := range files {
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRuleSetEncodeDecodeRoundTrip(t *testing.T) {
	files := []File{
		{Name: "rules.yaml", Data: []byte(matchRules)},
		{Name: "share.yaml", Data: mustRead(t, "testdata/envoy/share_threshold.yaml")},
		{Name: "p.yaml", Data: []byte("policies:\n  - {name: free, algorithm: token, rate: 10/s, capacity: 20, shadow: true, description: d}\n")},
	}
	rs, err := Parse(files, Options{})
	if err != nil {
		t.Fatal(err)
	}
	enc := rs.Encode(nil)
	back, err := DecodeRuleSet(enc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if again := back.Encode(nil); string(again) != string(enc) {
		t.Fatalf("Encode(Decode(b)) differs from b")
	}
	if back.Hash() != rs.Hash() || strings.Join(back.Files(), ",") != "rules.yaml,share.yaml,p.yaml" {
		t.Fatalf("hash or files differ after decoding")
	}
	if *back.Policies()[0] != *rs.Policies()[0] {
		t.Fatalf("policy %+v; want %+v", *back.Policies()[0], *rs.Policies()[0])
	}
	// The decoded set matches as the loaded one does.
	for _, kv := range [][]string{{"path", "/api/admin/x"}, {"files", "files/q"}, {"user", "u", "tier", "free"}} {
		a, b := limitOf(t, rs, "api", kv...), limitOf(t, back, "api", kv...)
		a.rule, b.rule = nil, nil
		if a.Limit != b.Limit || string(a.Key) != string(b.Key) || a.Flags != b.Flags || a.Envoy != b.Envoy || a.Name != b.Name {
			t.Errorf("%v: decoded %+v; loaded %+v", kv, b, a)
		}
	}
	// The hash ignores paths, comments and layout.
	moved := []File{
		{Name: "/etc/other/rules.yaml", Data: []byte("# a comment\n" + matchRules)},
		{Name: "x.yaml", Data: files[1].Data},
		{Name: "y.yaml", Data: []byte("policies: [{name: free, algorithm: token, rate: 10/s, capacity: 20, shadow: true, description: d}]")},
	}
	rs2, err := Parse(moved, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rs2.Hash() != rs.Hash() {
		t.Fatalf("the same rules at other paths hash differently")
	}
	changed, _ := Parse([]File{{Name: "rules.yaml", Data: []byte(strings.Replace(matchRules, "requests_per_unit: 2}", "requests_per_unit: 3}", 1))}, files[1], files[2]}, Options{})
	if changed.Hash() == rs.Hash() {
		t.Fatalf("a changed limit keeps the hash")
	}
	if _, err := DecodeRuleSet(enc[:len(enc)-1], Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("truncated: %v", err)
	}
	var nilSet *RuleSet
	if e, err := DecodeRuleSet(nilSet.Encode(nil), Options{}); err != nil || e.Hash() != nilSet.Hash() {
		t.Fatalf("empty set: %v", err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
