package main

import (
	"bufio"
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/internal/resp"
	"github.com/sluice-rl/sluice/policy"
)

// Unit tests of the generator's parts: the reply reader, the request
// templates, the checks, the report's section splicing and the chart.

// parse reads one reply.
func parse(t *testing.T, s string) *resp.Value {
	t.Helper()
	v := new(resp.Value)
	if err := resp.Read(bufio.NewReader(strings.NewReader(s)), v); err != nil {
		t.Fatalf("resp.Read(%q): %v", s, err)
	}
	return v
}

// TestReadingAndCheckingRepliesDoesNotAllocate: reading and checking
// replies of a known shape does not allocate: the generator must not be
// what limits throughput.
func TestReadingAndCheckingRepliesDoesNotAllocate(t *testing.T) {
	reply := "*5\r\n:1\r\n:100\r\n:99\r\n:0\r\n:100\r\n"
	src := strings.NewReader("")
	r := bufio.NewReader(src)
	v := new(resp.Value)
	allocs := testing.AllocsPerRun(100, func() {
		src.Reset(reply)
		r.Reset(src)
		if err := resp.Read(r, v); err != nil {
			t.Fatal(err)
		}
		if _, bad := checkDecision(testWorkload, v); bad != "" {
			t.Fatal(bad)
		}
	})
	if allocs != 0 {
		t.Fatalf("%.0f allocations per reply; want 0", allocs)
	}
}

func TestTemplate(t *testing.T) {
	sc := findScenario("redis-lua-token")
	tmpl := compileTemplate(sc.args(testWorkload, "abc"), len(sc.prefix)+keyDigits)
	key := appendKey(nil, sc.prefix, 42)
	got := string(tmpl.encode(nil, key, []byte("1700000000")))
	want := string(resp.AppendCommand(nil, "EVALSHA", "abc", "2", "rl.{tk:000000000042}.tokens", "rl.{tk:000000000042}.timestamp",
		"10", "100", "1700000000", "1"))
	if got != want {
		t.Fatalf("encode = %q;\nwant %q", got, want)
	}
	tk := findScenario("sluice-token")
	tmpl = compileTemplate(tk.args(testWorkload, ""), len(tk.prefix)+keyDigits)
	got = string(tmpl.encode(nil, appendKey(nil, tk.prefix, 999_999_999_999), nil))
	if want := string(resp.AppendCommand(nil, "RL.TOKEN", "tk:999999999999", "10", "100", "1")); got != want {
		t.Fatalf("encode = %q; want %q", got, want)
	}
}

func TestCheckDecision(t *testing.T) {
	for _, tc := range []struct {
		reply string
		ok    bool
	}{
		{"*5\r\n:1\r\n:100\r\n:99\r\n:0\r\n:100\r\n", true},
		{"*5\r\n:0\r\n:100\r\n:0\r\n:100\r\n:10000\r\n", true},
		{"*5\r\n:0\r\n:100\r\n:0\r\n:-1\r\n:0\r\n", true}, // n above the limit: never
		{"*5\r\n:2\r\n:100\r\n:0\r\n:0\r\n:0\r\n", false},
		{"*5\r\n:1\r\n:100\r\n:99\r\n:5\r\n:100\r\n", false},
		{"*5\r\n:1\r\n:100\r\n:99\r\n:0\r\n:-3\r\n", false},
		{"*5\r\n:0\r\n:100\r\n:0\r\n:-2\r\n:0\r\n", false},
		{"*4\r\n:1\r\n:100\r\n:99\r\n:0\r\n", false},
		{"%5\r\n+allowed\r\n#t\r\n+limit\r\n:100\r\n+remaining\r\n:9\r\n+retry_after_ms\r\n:0\r\n+reset_after_ms\r\n:1\r\n", false},
	} {
		_, bad := checkDecision(testWorkload, parse(t, tc.reply))
		if (bad == "") != tc.ok {
			t.Errorf("checkDecision(%q) = %q; want ok %v", tc.reply, bad, tc.ok)
		}
	}
}

func TestSpliceSection(t *testing.T) {
	gen := func(s string) string { return sectionBegin + "\n" + s + sectionEnd + "\n" }
	before, after := "# Results\n\nintro\n\n", "\n## Keyspace at scale\n\nkept\n"
	cases := []struct{ doc, want string }{
		{"", "# Benchmark results\n\n" + gen("new\n")},
		{"# Mine\n\ntext\n", "# Mine\n\ntext\n\n" + gen("new\n")},
		{before + gen("old\n") + after, before + gen("new\n") + after},
		{before + gen("old\n"), before + gen("new\n")},
	}
	for _, tc := range cases {
		if got := string(spliceSection([]byte(tc.doc), "new\n")); got != tc.want {
			t.Errorf("splice(%q) =\n%q\nwant\n%q", tc.doc, got, tc.want)
		}
	}
}

func TestChart(t *testing.T) {
	rep := &report{}
	for _, name := range chartSet {
		for i, d := range []int{1, 4, 16, 64} {
			r := &result{spec: runSpec{group: groupDepth, sc: findScenario(name), depth: d},
				t: &tally{hist: newHistogram(), ok: int64(1000 * (i + 1))}, elapsed: time.Second}
			r.t.hist.RecordValue(int64((i + 1) * 1e6))
			rep.results = append(rep.results, r)
		}
	}
	panels := rep.depthChart()
	if len(panels) != 2 || len(panels[0].series) != len(chartSet) || len(panels[0].series[0].pts) != 4 {
		t.Fatalf("panels = %+v; want throughput and p99 with %d series of 4 points", panels, len(chartSet))
	}
	svg := renderSVG("a <title> & more", panels)
	assertXML(t, []byte(svg))
	for _, want := range []string{"Redis Lua token bucket", "pipeline depth", "4k", "&lt;title&gt;"} {
		if !strings.Contains(svg, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
}

func TestRatios(t *testing.T) {
	mk := func(name string, depth int, ops int64) *result {
		r := &result{spec: runSpec{group: groupDepth, sc: findScenario(name), depth: depth},
			t: &tally{hist: newHistogram(), ok: ops}, elapsed: time.Second}
		r.t.hist.RecordValue(1e6)
		return r
	}
	rep := &report{results: []*result{
		mk("sluice-token", 1, 200), mk("redis-lua-token", 1, 100), mk("redis-incr", 1, 100), mk("sluice-ping", 1, 250),
		mk("sluice-token", 16, 2000), mk("redis-lua-token", 16, 100), mk("redis-incr", 16, 1000), mk("sluice-ping", 16, 3000),
	}}
	got := map[string]ratio{}
	for _, r := range rep.ratios() {
		got[r.what] = r
	}
	lua := got["sluice RL.TOKEN ÷ Redis Lua token bucket, throughput"]
	if lua.values != [2]float64{2, 20} || lua.met != "met" {
		t.Errorf("vs Lua = %+v; want 2 and 20, met", lua)
	}
	ping := got["sluice RL.TOKEN ÷ sluice PING, throughput"]
	if math.Abs(ping.values[1]-2.0/3) > 1e-9 || ping.met != "not met" {
		t.Errorf("vs PING = %+v; want 0.67 at P16, not met", ping)
	}
	if _, ok := got["sluice RL.FIXED ÷ Redis Lua fixed window, throughput"]; ok {
		t.Errorf("a ratio of runs that did not happen is listed")
	}
}

func TestParseRedisBenchmark(t *testing.T) {
	out := "RL.TOKEN k:__rand_int__ 10 100 1: rps=0.0 (overall: nan) avg_msec=nan\r" +
		"RL.TOKEN k:__rand_int__ 10 100 1: 1234567.88 requests per second, p50=0.631 msec\n"
	line, rps := parseRedisBenchmark([]byte(out))
	if rps != 1234567.88 || !strings.HasPrefix(line, "RL.TOKEN") {
		t.Fatalf("parse = %q, %v", line, rps)
	}
}

func TestKeySet(t *testing.T) {
	s := newKeySet(130)
	for _, k := range []uint64{0, 63, 64, 129, 64, 0} {
		s.add(k)
	}
	if got := s.count(); got != 4 {
		t.Fatalf("count = %d; want 4", got)
	}
}

func TestCombineTakesMedians(t *testing.T) {
	var rs []*result
	for i, ops := range []int64{1000, 9000, 3000} { // the second round was disturbed the other way
		r := &result{spec: runSpec{sc: findScenario("sluice-token")}, elapsed: time.Second, cpuKnown: true,
			srvCPU: time.Duration(ops) * time.Millisecond, t: &tally{hist: newHistogram(), ok: ops, allowed: ops,
				errors: int64(i), problems: map[string]*problem{}}}
		r.t.hist.RecordValue(int64(i+1) * 1e6)
		rs = append(rs, r)
	}
	c := combine(rs)
	f := c.figs()
	if f.ops != 3000 || f.p99 < 1900*time.Microsecond || f.p99 > 2100*time.Microsecond || f.max < 2900*time.Microsecond {
		t.Fatalf("combined %+v; want the median round's 3000 ops/s and p99 2ms, max 3ms", f)
	}
	if c.t.ok != 13000 || c.t.errors != 3 || c.rounds != 3 || math.Abs(f.srvPerM-1000) > 1e-6 {
		t.Fatalf("ok %d errors %d rounds %d srv CPU/M %v; want sums 13000 and 3, 3 rounds, 1000 s/M",
			c.t.ok, c.t.errors, c.rounds, f.srvPerM)
	}
	if median([]float64{1, math.NaN()}) == median([]float64{1, math.NaN()}) {
		t.Fatalf("median with an unknown value is known")
	}
}

// TestCPUPlacement: with two CPUs the generator keeps the first, servers
// start on the second through taskset, and a run asking for more cores
// than the servers have shares all of them; the labels say which.
func TestCPUPlacement(t *testing.T) {
	p := cpuPlan{pinned: true, gen: []int{0}, servers: []int{1}, all: []int{0, 1}, taskset: "/usr/bin/taskset"}
	for _, tc := range []struct {
		kind  string
		procs int
		argv  string
		label string
	}{
		{"sluice", 0, "/usr/bin/taskset -c 1 /b/sluice --port 7", "1 own"},
		{"sluice", 1, "/usr/bin/taskset -c 1 /b/sluice --port 7", "1 own"},
		{"sluice", 2, "/usr/bin/taskset -c 0,1 /b/sluice --port 7", "2 shared"},
		{"redis", 0, "/usr/bin/taskset -c 1 /b/sluice --port 7", "1 own"},
	} {
		name, argv := p.command("/b/sluice", []string{"--port", "7"}, tc.procs)
		if got := strings.Join(append([]string{name}, argv...), " "); got != tc.argv {
			t.Errorf("%s procs %d: command %q; want %q", tc.kind, tc.procs, got, tc.argv)
		}
		if got := p.label(tc.kind, tc.procs); got != tc.label {
			t.Errorf("%s procs %d: label %q; want %q", tc.kind, tc.procs, got, tc.label)
		}
	}
	off := cpuPlan{all: []int{0, 1}, why: "-pin off"}
	if name, argv := off.command("/b/sluice", []string{"--port", "7"}, 0); name != "/b/sluice" || len(argv) != 2 {
		t.Errorf("unpinned command: %s %v", name, argv)
	}
	if got := off.label("sluice", 0); got != "2 shared" {
		t.Errorf("unpinned sluice label %q", got)
	}
	if got := off.label("redis", 0); got != "1 (redis)" {
		t.Errorf("unpinned redis label %q", got)
	}
	if !strings.Contains(off.describe(), "not pinned (-pin off)") {
		t.Errorf("describe: %q", off.describe())
	}
}

// RL.TOKEN's keys in sluice-token-derived are RL.CHECK's state keys in
// sluice-check-100k but for the name's ':', which RL.CHECK escapes.
func TestDerivedKeysAreCheckKeys(t *testing.T) {
	tk, ck := findScenario("sluice-token-derived"), findScenario("sluice-check-100k")
	tmpl := compileTemplate(tk.args(testWorkload, ""), len(tk.prefix)+keyDigits)
	var v resp.Value
	cmd := tmpl.encode(nil, appendKey(nil, tk.prefix, 42), nil)
	if err := resp.Read(bufio.NewReader(bytes.NewReader(cmd)), &v); err != nil {
		t.Fatal(err)
	}
	got := string(v.Elems[1].Text)
	subject := appendKey(nil, ck.prefix, 42)
	want := string(policy.AppendCheckKey(nil, string(subject), algorithms.Token, subject))
	if want = strings.Replace(want, "%3A", ":", 1); strings.ReplaceAll(want, ck.prefix, tk.prefix) != got {
		t.Fatalf("derived key %q; want RL.CHECK's %q with the name unescaped and prefix %q", got, want, tk.prefix)
	}
}

// A ratio is the median of the rounds' own ratios: a round that slowed
// both runs alike does not move it, where the ratio of the two medians
// would take its figures from different rounds.
func TestRatiosArePairedByRound(t *testing.T) {
	mk := func(opsByRound ...int64) *result {
		var rs []*result
		for _, ops := range opsByRound {
			r := &result{spec: runSpec{sc: findScenario("sluice-token")}, elapsed: time.Second,
				t: &tally{hist: newHistogram(), ok: ops, problems: map[string]*problem{}}}
			r.t.hist.RecordValue(1e6)
			rs = append(rs, r)
		}
		return combine(rs)
	}
	x := mk(900, 300, 1000) // round 2 slowed both
	y := mk(1000, 330, 1100)
	if got := pairedRatio(x, y, opsOf); math.Abs(got-300.0/330) > 1e-9 {
		t.Fatalf("paired ratio %v; want the median of 0.9, 0.909, 0.909", got)
	}
	if medians := x.opsPerSec() / y.opsPerSec(); math.Abs(medians-0.9) > 1e-9 {
		t.Fatalf("ratio of medians %v; want 900/1000", medians)
	}
	// Runs of different rounds (one skipped or combined apart) fall back
	// to the ratio of their figures.
	if got := pairedRatio(x, mk(500), opsOf); math.Abs(got-900.0/500) > 1e-9 {
		t.Fatalf("unpaired ratio %v; want 900/500", got)
	}
	// A missing run, or a zero to divide by, gives no ratio.
	if got := pairedRatio(x, nil, opsOf); !math.IsNaN(got) {
		t.Fatalf("ratio to a missing run %v; want NaN", got)
	}
	if got := pairedRatio(x, y, func(figures) float64 { return 0 }); !math.IsNaN(got) {
		t.Fatalf("ratio to a zero figure %v; want NaN", got)
	}
}
