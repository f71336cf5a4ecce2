package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"
)

// The report: one table per group of runs, the ratios computed from runs of
// the same invocation, the problems found in replies, the cross-check.

type report struct {
	plan, argv        string
	notes             []string
	started, finished time.Time
	base              base
	results           []*result
	rounds            int
	cross             []crossRun
	machine           machine
}

func (r *result) summary() string {
	if r.skipped != "" {
		return "skipped: " + r.skipped
	}
	s := fmt.Sprintf("%s ops/s, p99 %s, errors %d", groupDigits(r.opsPerSec()), fmtLatency(r.quantile(99)), r.t.errors)
	if ps := r.t.sortedProblems(); len(ps) > 0 {
		s += " (e.g. " + ps[0].example + ")"
	}
	return s
}

func (rep *report) errorCount() int64 {
	var n int64
	for _, r := range rep.results {
		if r.t != nil {
			n += r.t.errors
		}
	}
	return n
}

// find returns the run of a scenario at a depth in the depth group.
func (rep *report) find(name string, depth int) *result {
	for _, r := range rep.results {
		if r.spec.group == groupDepth || r.spec.group == groupOwn {
			if r.spec.sc.name == name && r.spec.depth == depth && r.spec.procs == rep.base.procs && r.skipped == "" && r.t.ok > 0 {
				return r
			}
		}
	}
	return nil
}

// findIn returns the result of name at depth in group, nil if there is
// none.
func (rep *report) findIn(group, name string, depth int) *result {
	for _, r := range rep.results {
		if r.spec.group == group && r.spec.sc.name == name && r.spec.depth == depth && r.skipped == "" && r.t.ok > 0 {
			return r
		}
	}
	return nil
}

// ratio is one line of the ratio table.
type ratio struct {
	what   string
	values [2]float64 // at pipeline 1 and 16; NaN when a run is missing
	target string
	met    string
}

var ratioDepths = [2]int{1, 16}

func (rep *report) ratios() []ratio {
	// compare compares figure get of scenario a with b at each depth, both
	// found by find (pairedRatio).
	compare := func(find func(name string, d int) *result, get func(figures) float64) func(a, b string) func(int) float64 {
		return func(a, b string) func(int) float64 {
			return func(d int) float64 { return pairedRatio(find(a, d), find(b, d), get) }
		}
	}
	in := func(group string) func(name string, d int) *result {
		return func(name string, d int) *result { return rep.findIn(group, name, d) }
	}
	tput, cpu, p99 := compare(rep.find, opsOf), compare(rep.find, srvPerMOf), compare(rep.find, p99Of)
	aof, aofCPU := compare(in(groupAOF), opsOf), compare(in(groupAOF), srvPerMOf)
	check, checkCPU := compare(in(groupCheck), opsOf), compare(in(groupCheck), srvPerMOf)
	sec := compare(in(groupSec), opsOf)
	// The scrape comparison's own runs, or a custom plan's.
	scraped := func(a, b string, get func(figures) float64) func(int) float64 {
		return compare(func(name string, d int) *result {
			if rep.findIn(groupScrape, a, d) != nil && rep.findIn(groupScrape, b, d) != nil {
				return rep.findIn(groupScrape, name, d)
			}
			return rep.find(name, d)
		}, get)(a, b)
	}
	rows := []struct {
		what   string
		f      func(int) float64
		target string
		need   []int // indexes of ratioDepths the target is about
		ok     func(v [2]float64) bool
	}{
		{"sluice RL.TOKEN ÷ Redis Lua token bucket, throughput", tput("sluice-token", "redis-lua-token"),
			"≥ 10 at P16", []int{1}, func(v [2]float64) bool { return v[1] >= 10 }},
		{"sluice RL.TOKEN ÷ Redis INCR, throughput", tput("sluice-token", "redis-incr"),
			"≥ 1 at P1 and P16", []int{0, 1}, func(v [2]float64) bool { return v[0] >= 1 && v[1] >= 1 }},
		{"sluice RL.TOKEN p99 ÷ Redis INCR p99", p99("sluice-token", "redis-incr"),
			"≤ 1 at P1", []int{0}, func(v [2]float64) bool { return v[0] <= 1 }},
		{"sluice RL.TOKEN ÷ sluice PING, throughput", tput("sluice-token", "sluice-ping"),
			"≥ 0.8 at P16", []int{1}, func(v [2]float64) bool { return v[1] >= 0.8 }},
		{"sluice RL.FIXED ÷ Redis Lua fixed window, throughput", tput("sluice-fixed", "redis-lua-fixed"), "", nil, nil},
		{"Redis Lua token bucket ÷ sluice RL.TOKEN, server CPU per decision", cpu("redis-lua-token", "sluice-token"), "", nil, nil},
		{"Redis INCR ÷ sluice RL.TOKEN, server CPU per request", cpu("redis-incr", "sluice-token"), "", nil, nil},
		{"sluice PING ÷ sluice RL.TOKEN, server CPU per request", cpu("sluice-ping", "sluice-token"), "", nil, nil},
		{"Redis INCR ÷ Redis PING, throughput (Redis's cheapest write against its no-op)", tput("redis-incr", "redis-ping"), "", nil, nil},
		{"Redis PING ÷ Redis INCR, server CPU per request", cpu("redis-ping", "redis-incr"), "", nil, nil},
		{"Redis Lua token bucket ÷ Redis INCR, throughput (the cost of Lua)", tput("redis-lua-token", "redis-incr"), "", nil, nil},
		{"sluice RL.TOKEN, appendfsync everysec ÷ log off, throughput", aof("sluice-token-aof-everysec", "sluice-token"), "", nil, nil},
		{"sluice RL.TOKEN, appendfsync everysec ÷ log off, server CPU per decision", aofCPU("sluice-token-aof-everysec", "sluice-token"),
			"≤ 1.1 at P16 (everysec would then be the default)", []int{1}, func(v [2]float64) bool { return v[1] <= 1.1 }},
		{"sluice RL.TOKEN, appendfsync always ÷ log off, throughput", aof("sluice-token-aof-always", "sluice-token"), "", nil, nil},
		{"sluice RL.TOKEN, /metrics scraped every second ÷ no endpoint, throughput",
			scraped("sluice-token-metrics", "sluice-token", opsOf), "≥ 0.97 at P16", []int{1},
			func(v [2]float64) bool { return v[1] >= 0.97 }},
		{"sluice RL.TOKEN, /metrics scraped every second ÷ no endpoint, server CPU per decision",
			scraped("sluice-token-metrics", "sluice-token", srvPerMOf), "", nil, nil},
		{"sluice RL.CHECK (TOKEN policy) ÷ RL.TOKEN, throughput", check("sluice-check", "sluice-token"),
			"≥ 0.9 at P16", []int{1}, func(v [2]float64) bool { return v[1] >= 0.9 }},
		{"sluice RL.CHECK, 1 subject in 10 overridden ÷ none, throughput", check("sluice-check-ovr", "sluice-check"), "", nil, nil},
		{"sluice RL.CHECK, a policy per key (100k policies) ÷ RL.TOKEN, throughput", check("sluice-check-100k", "sluice-token"),
			"≥ 0.9 at P16", []int{1}, func(v [2]float64) bool { return v[1] >= 0.9 }},
		{"sluice RL.CHECK, a policy per key (100k policies) ÷ RL.TOKEN, server CPU per decision",
			checkCPU("sluice-check-100k", "sluice-token"), "", nil, nil},
		{"sluice RL.TOKEN on RL.CHECK's state keys ÷ RL.TOKEN, throughput (the store's part of RL.CHECK at 100k)",
			check("sluice-token-derived", "sluice-token"), "", nil, nil},
		{"sluice RL.CHECK, a policy per key (100k policies) ÷ RL.TOKEN on its state keys, throughput (the rest)",
			check("sluice-check-100k", "sluice-token-derived"), "", nil, nil},
		{"sluice RL.TOKEN over TLS ÷ plaintext, throughput", sec("sluice-token-tls", "sluice-token"), "", nil, nil},
		{"sluice RL.TOKEN as an ACL user with a key pattern ÷ the default user, throughput", sec("sluice-token-acl", "sluice-token"), "", nil, nil},
		{"group RL.TOKEN → leader ÷ sluice RL.TOKEN (one node), throughput", tput("group-token", "sluice-token"), "", nil, nil},
		{"group RL.TOKEN → leader p99 ÷ sluice RL.TOKEN p99", p99("group-token", "sluice-token"), "", nil, nil},
		{"group RL.TOKEN → follower ÷ → leader, throughput", tput("group-token-follower", "group-token"), "", nil, nil},
		{"group RL.TOKEN → leader, no fsync ÷ with fsync, throughput", tput("group-token-nofsync", "group-token"), "", nil, nil},
		{"group RL.TOKEN → leader ÷ sluice RL.TOKEN, server CPU per decision (all nodes)", cpu("group-token", "sluice-token"), "", nil, nil},
	}
	for _, l := range libraries {
		rows = append(rows, struct {
			what   string
			f      func(int) float64
			target string
			need   []int
			ok     func(v [2]float64) bool
		}{"sluice ÷ Redis, " + l.label + " script (EVALSHA), throughput", tput("sluice-script-"+l.name, "redis-script-"+l.name),
			"≥ 10 at P16", []int{1}, func(v [2]float64) bool { return v[1] >= 10 }})
	}
	var out []ratio
	for _, row := range rows {
		r := ratio{what: row.what, target: row.target}
		for i, d := range ratioDepths {
			r.values[i] = row.f(d)
		}
		if math.IsNaN(r.values[0]) && math.IsNaN(r.values[1]) {
			continue
		}
		if row.ok != nil {
			r.met = "not met"
			if row.ok(r.values) {
				r.met = "met"
			}
			for _, i := range row.need {
				if math.IsNaN(r.values[i]) {
					r.met = "not measured"
				}
			}
		}
		out = append(out, r)
	}
	return out
}

// runColumns are the columns of a run table.
var runColumns = []string{"scenario", "P", "conns", "keys", "dist", "cores", "ops/s", "p50", "p99", "p99.9", "max",
	"srv CPU s/M", "gen CPU s/M", "RSS/key", "admitted", "errors"}

func (r *result) row() []string {
	s := r.spec
	head := []string{s.sc.label, fmt.Sprint(s.depth), fmt.Sprint(s.conns), groupDigits(float64(s.keys)), s.dist(),
		cpus.label(s.sc.server, s.procs)}
	if r.skipped != "" {
		return append(head, "skipped", "-", "-", "-", "-", "-", "-", "-", "-", "-")
	}
	f := r.figs()
	srvCPU, rss, admitted := "n/a", "-", "-"
	if !math.IsNaN(f.srvPerM) {
		srvCPU = fmtNum(f.srvPerM)
	}
	if !math.IsNaN(f.rssPerKey) && r.touched >= 10_000 {
		rss = fmt.Sprintf("%.0f B", f.rssPerKey)
	}
	if d := r.t.allowed + r.t.denied; d > 0 {
		admitted = fmt.Sprintf("%.1f%%", 100*float64(r.t.allowed)/float64(d))
	}
	return append(head, groupDigits(f.ops), fmtLatency(f.p50), fmtLatency(f.p99),
		fmtLatency(f.p999), fmtLatency(f.max), srvCPU, fmtNum(f.genPerM),
		rss, admitted, fmt.Sprint(r.t.errors))
}

// generatorBoundRuns names, by group (its title up to the first
// parenthesis), the closed-loop runs outside the sidecar section whose
// generator kept its pinned CPUs nearly all busy, busier than the server:
// their throughput, and a throughput ratio taken from them, shows what the
// generator could drive rather than what the server could take.
func (rep *report) generatorBoundRuns() []string {
	var out []string
	for _, g := range rep.groups() {
		var runs []string
		for _, r := range rep.results {
			if r.spec.group != g || r.spec.offered > 0 || r.skipped != "" || r.t == nil || r.t.ok == 0 {
				continue
			}
			if bound, srv, gen := r.pacedByGenerator(); bound {
				runs = append(runs, fmt.Sprintf("%s P%d (%.2f / %.2f)", r.spec.sc.label, r.spec.depth, gen, srv))
			}
		}
		if len(runs) > 0 {
			title, _, _ := strings.Cut(groupTitles[g], " (")
			out = append(out, title+": "+strings.Join(runs, ", "))
		}
	}
	return out
}

// generatorBoundNote is the paragraph that lists generatorBoundRuns, a
// line a group, each line starting with bullet; empty when there are none.
func (rep *report) generatorBoundNote(bullet string) string {
	runs := rep.generatorBoundRuns()
	if len(runs) == 0 {
		return ""
	}
	return fmt.Sprintf("Generator-bound runs: the load generator kept at least 0.95 of its %d %s busy, more than the server "+
		"(generator / server, cores busy), so their throughput is what the generator could drive:\n%s%s\n",
		len(cpus.gen), cpuWord(len(cpus.gen)), bullet, strings.Join(runs, "\n"+bullet))
}

// groups returns the groups present, in plan order.
func (rep *report) groups() []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range rep.results {
		if r.spec.group == groupSidecar {
			continue // its own section (sidecar.go)
		}
		if !seen[r.spec.group] {
			seen[r.spec.group] = true
			out = append(out, r.spec.group)
		}
	}
	return out
}

func (rep *report) printText(w io.Writer) {
	fmt.Fprintf(w, "\nsluice vs Redis + Lua — plan %s, %d runs × %d rounds (figures: the median round), %s\n",
		rep.plan, len(rep.results), rep.rounds, rep.finished.Sub(rep.started).Round(time.Second))
	fmt.Fprintf(w, "load average before: %s, after: %s\n", rep.machine.loadBefore, rep.machine.loadAfter)
	for _, n := range rep.notes {
		fmt.Fprintln(w, "note:", n)
	}
	for _, g := range rep.groups() {
		fmt.Fprintf(w, "\n%s\n", groupTitles[g])
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, strings.Join(runColumns, "\t")+"\t")
		for _, r := range rep.results {
			if r.spec.group == g {
				fmt.Fprintln(tw, strings.Join(r.row(), "\t")+"\t")
			}
		}
		tw.Flush()
	}
	if rs := rep.ratios(); len(rs) > 0 {
		fmt.Fprintln(w, "\nRatios (same run)")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "comparison\tP1\tP16\ttarget\t")
		for _, r := range rs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", r.what, fmtRatio(r.values[0]), fmtRatio(r.values[1]), strings.TrimSpace(r.target+" "+r.met))
		}
		tw.Flush()
	}
	if n := rep.generatorBoundNote("  "); n != "" {
		fmt.Fprint(w, "\n"+n)
	}
	rep.printRepl(w)
	rep.printSidecar(w)
	rep.printSharded(w)
	rep.printSkipped(w, "")
	rep.printProblems(w, "")
	for _, c := range rep.cross {
		fmt.Fprintf(w, "\n%s\n  %s\n", c.command, c.result)
	}
}

// printSkipped says why runs were skipped, once per reason and scenario.
func (rep *report) printSkipped(w io.Writer, bullet string) {
	seen := map[string]bool{}
	for _, r := range rep.results {
		line := r.spec.sc.label + ": " + r.skipped
		if r.skipped == "" || seen[line] {
			continue
		}
		if len(seen) == 0 {
			fmt.Fprintln(w, "\nSkipped")
			fmt.Fprintln(w)
		}
		seen[line] = true
		fmt.Fprintf(w, "%s%s\n", bullet, line)
	}
}

// printProblems lists every failed check, with an example, per run.
func (rep *report) printProblems(w io.Writer, bullet string) {
	first := true
	for _, r := range rep.results {
		if r.t == nil || r.t.errors == 0 && r.t.nosc == 0 {
			continue
		}
		if first {
			fmt.Fprintln(w, "\nProblems (replies that failed their checks)")
			fmt.Fprintln(w)
			first = false
		}
		fmt.Fprintf(w, "%s%s P%d: %d errors", bullet, r.spec.sc.label, r.spec.depth, r.t.errors)
		if r.t.nosc > 0 {
			fmt.Fprintf(w, ", %d NOSCRIPT replies (script loaded again)", r.t.nosc)
		}
		fmt.Fprintln(w)
		for _, p := range r.t.sortedProblems() {
			fmt.Fprintf(w, "%s  %d × %s\n", strings.Repeat(" ", len(bullet)), p.count, p.example)
		}
	}
}

func fmtNum(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}

func fmtRatio(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}

// fmtLatency prints a duration in ms with 3 significant digits.
func fmtLatency(d time.Duration) string {
	ms := float64(d) / 1e6
	switch {
	case ms >= 100:
		return fmt.Sprintf("%.0fms", ms)
	case ms >= 10:
		return fmt.Sprintf("%.1fms", ms)
	case ms >= 1:
		return fmt.Sprintf("%.2fms", ms)
	default:
		return fmt.Sprintf("%.3fms", ms)
	}
}

// groupDigits prints a count with thousands separators.
func groupDigits(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// clip cuts s to n bytes, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// has reports whether a run of the table group ran (groupSidecar,
// groupSharded, …).
func (rep *report) has(group string) bool {
	for _, r := range rep.results {
		if r.spec.group == group {
			return true
		}
	}
	return false
}

// only reports whether every run was of the table group (a -plan sidecar
// or cluster run): the main section of RESULTS.md is then left as it is.
func (rep *report) only(group string) bool {
	for _, r := range rep.results {
		if r.spec.group != group {
			return false
		}
	}
	return true
}
