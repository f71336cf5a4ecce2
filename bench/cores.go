package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The cores comparison (-cores 1,2,4,8; make bench-cores): sluice on 1, 2,
// 4 and 8 cores of its own (taskset, GOMAXPROCS and --event-loops of that
// many) against Redis 7 on one thread and with io-threads of as many
// cores, on the same workload (RL.TOKEN against INCR at pipeline 16 over
// -c connections), and the five limiter libraries' scripts at pipeline 16
// (sluice natively, Redis running the Lua). The load generator keeps to
// CPUs of its own (-gen-cpus, by default half of the CPUs bench may use),
// and the servers run on the others; a core count that they cannot hold is
// skipped, and the report says so.

// coresDepth is the pipeline depth of every run of the comparison.
const coresDepth = 16

type coresOptions struct {
	list string // -cores: the core counts; empty: no comparison
	gen  int    // -gen-cpus: the generator's CPUs; 0: half of them, at least 1
}

func (c *coresOptions) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.list, "cores", "", "instead of the plans: sluice on these core counts (e.g. 1,2,4,8) against Redis on one thread and with io-threads, RL.TOKEN vs INCR and the libraries' scripts at pipeline 16, the generator on CPUs of its own")
	fs.IntVar(&c.gen, "gen-cpus", 0, "with -cores: CPUs for the load generator, the first ones bench may use (0: half of them, at least 1); the servers get the rest")
}

func (c *coresOptions) wanted() bool { return c.list != "" }

// check validates the flags against the rest of the command line.
func (c *coresOptions) check(o *options) error {
	if !c.wanted() {
		if c.gen != 0 {
			return fmt.Errorf("-gen-cpus needs -cores")
		}
		return nil
	}
	if _, err := parseCores(c.list); err != nil {
		return err
	}
	switch {
	case c.gen < 0:
		return fmt.Errorf("-gen-cpus %d: want 0 or more", c.gen)
	case o.sluice != "" || (o.redis != "" && o.redis != "off"):
		return fmt.Errorf("-cores starts the servers itself on the cores it measures: drop -sluice and -redis")
	case o.pin == "off":
		return fmt.Errorf("-cores needs the generator and the servers on CPUs of their own: drop -pin off")
	}
	return nil
}

// parseCores reads a comma-separated list of core counts, ascending.
func parseCores(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 1024 {
			return nil, fmt.Errorf("-cores: %q is not a core count from 1 to 1024", f)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}

// splitGen is how many of cpus CPUs the generator takes when asked for gen
// (0: half, at least 1).
func splitGen(cpus, gen int) int {
	if gen > 0 {
		return gen
	}
	return max(1, cpus/2)
}

// coresPlan is the comparison's runs for core counts of which the servers'
// CPUs hold at most room, each scenario's runs side by side so that the
// runs a ratio compares are close in time: sluice at each core count;
// Redis on one thread once (on one core: it does not change with more),
// then with io-threads at each core count from two. It also returns why
// counts were left out.
func coresPlan(b base, counts []int, room int, names []string) (runs []runSpec, skipped []string) {
	at := func(name string, procs int, iothreads bool) runSpec {
		s := b.spec("cores", name, coresDepth)
		s.procs = procs
		if iothreads {
			s.sc = ioThreaded(s.sc)
		}
		return s
	}
	var fit []int
	for _, n := range counts {
		if n > room {
			skipped = append(skipped, fmt.Sprintf("%d cores: skipped, the servers have %d CPU(s) of their own", n, room))
			continue
		}
		fit = append(fit, n)
	}
	if slices.Contains(fit, 1) {
		skipped = append(skipped, "Redis with io-threads on 1 core: not run, the same as one thread")
	}
	for _, name := range names {
		if strings.HasPrefix(name, "redis-") {
			runs = append(runs, at(name, 1, false))
		}
		for _, n := range fit {
			switch {
			case strings.HasPrefix(name, "sluice-"):
				runs = append(runs, at(name, n, false))
			case n > 1:
				runs = append(runs, at(name, n, true))
			}
		}
	}
	return runs, skipped
}

// coresScenarios are the comparison's scenarios: RL.TOKEN against INCR,
// then each library's script, sluice's and Redis's.
func coresScenarios() []string {
	return append([]string{"sluice-token", "redis-incr"}, libraryPairs...)
}

// ioThreaded is the Redis scenario sc served by Redis with io-threads of
// the run's cores.
func ioThreaded(sc *scenario) *scenario {
	c := *sc
	c.name += "-iothreads"
	c.label += ", io-threads"
	c.server = "redis-iothreads"
	return &c
}

// eventLoops are sluice's threading flags on procs cores: a loop per core
// (GOMAXPROCS, which bench sets to procs, gives the same; said outright).
func eventLoops(procs int) []string { return []string{"--event-loops", strconv.Itoa(procs)} }

// ioThreads are Redis's on procs cores: that many I/O threads, the main
// one included, reading as well as writing.
func ioThreads(procs int) []string {
	return []string{"--io-threads", strconv.Itoa(procs), "--io-threads-do-reads", "yes"}
}

// runCores performs the comparison and prints its report.
func runCores(ctx context.Context, o *options, stdout, log io.Writer) error {
	counts, err := parseCores(o.cores.list)
	if err != nil {
		return err
	}
	if runtime.NumCPU() < 2 {
		return fmt.Errorf("-cores: bench may use %d CPU; the generator and the servers need one each at least", runtime.NumCPU())
	}
	o.genCPUs = splitGen(runtime.NumCPU(), o.cores.gen)
	o.pin = "on"
	tmp, err := os.MkdirTemp("", "sluice-cores-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	targets, notes, err := setupTargets(ctx, o, tmp, log)
	if err != nil {
		return err
	}
	targets["sluice"].threads = eventLoops
	if tg := targets["redis"]; tg != nil {
		io := *tg
		io.threads = ioThreads
		targets["redis-iothreads"] = &io
	}
	b := base{conns: o.conns, keys: o.keys, zipf: o.zipf, dur: o.dur, warmup: o.warmup, count: o.count, algo: "all",
		w: workload{rate: o.rate, capacity: o.capacity, window: o.window, cost: o.cost}}
	runs, skipped := coresPlan(b, counts, len(cpus.servers), coresScenarios())
	started, loadBefore := time.Now(), loadAverage()
	rounds := make([][]*result, len(runs))
	for round := 1; round <= o.rounds; round++ { // interleaved, as bench's plans are
		for i, spec := range runs {
			fmt.Fprintf(log, "bench: [round %d/%d, run %d/%d] %-44s %d core(s)", round, o.rounds, i+1, len(runs), spec.sc.label, spec.procs)
			if round > 1 && rounds[i][0].skipped != "" {
				fmt.Fprintln(log, " → skipped")
				continue
			}
			res, err := execute(ctx, spec, targets)
			if err != nil {
				fmt.Fprintln(log)
				return err
			}
			fmt.Fprintln(log, " →", res.summary())
			rounds[i] = append(rounds[i], res)
		}
	}
	rep := &coresReport{counts: counts, skipped: skipped, notes: notes, argv: commandLine(o), rounds: o.rounds,
		started: started, finished: time.Now(), loadBefore: loadBefore, gen: len(cpus.gen)}
	for _, rs := range rounds {
		rep.results = append(rep.results, combine(rs))
	}
	rep.machine = describeMachine(targets)
	if wd, err := os.Getwd(); err == nil {
		if root, err := moduleRoot(wd); err == nil {
			rep.commit = gitCommit(root)
		}
	}
	rep.print(stdout)
	var failed int64
	for _, r := range rep.results {
		if r.t != nil {
			failed += r.t.errors
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d requests failed their checks (see the problems above)", failed)
	}
	return nil
}

// coresReport is the comparison's outcome.
type coresReport struct {
	counts            []int
	skipped, notes    []string
	argv, commit      string
	rounds, gen       int
	started, finished time.Time
	loadBefore        string
	machine           machine
	results           []*result
}

// find returns the run of scenario name (its Redis io-threads form if
// iothreads) on n cores, nil if there is none with successes.
func (rep *coresReport) find(name string, n int, iothreads bool) *result {
	if iothreads {
		name += "-iothreads"
	}
	for _, r := range rep.results {
		if r.spec.sc.name == name && r.spec.procs == n && r.skipped == "" && r.t != nil && r.t.ok > 0 {
			return r
		}
	}
	return nil
}

// measured are the core counts sluice ran at.
func (rep *coresReport) measured() []int {
	var out []int
	for _, n := range rep.counts {
		if rep.find("sluice-token", n, false) != nil {
			out = append(out, n)
		}
	}
	return out
}

// ratioRow is one comparison across the measured core counts.
type ratioRow struct {
	what   string
	values []float64 // NaN: not measured
	target float64   // 0: none
}

// ratios are the comparison's figures by core count: throughput ratios,
// the scaling of sluice against itself on one core, and how busy the
// server's cores and the generator's were (a figure near 1 says that side
// was the limit).
func (rep *coresReport) ratios() []ratioRow {
	ns := rep.measured()
	row := func(what string, target float64, f func(n int) float64) ratioRow {
		r := ratioRow{what: what, target: target}
		for _, n := range ns {
			r.values = append(r.values, f(n))
		}
		return r
	}
	ops := func(name string, n int, io bool) float64 {
		if r := rep.find(name, n, io); r != nil {
			return r.opsPerSec()
		}
		return math.NaN()
	}
	// busy is the share of cores that r's per-million CPU figure kept busy.
	busy := func(r *result, perM float64, cores int) float64 {
		return coresBusy(r.figs(), perM) / float64(cores)
	}
	out := []ratioRow{
		row("sluice RL.TOKEN, decisions/s", 0, func(n int) float64 { return ops("sluice-token", n, false) }),
		row("sluice RL.TOKEN ÷ sluice RL.TOKEN on 1 core", 0, func(n int) float64 {
			return ops("sluice-token", n, false) / ops("sluice-token", 1, false)
		}),
		row("sluice RL.TOKEN ÷ Redis INCR, one thread", 0, func(n int) float64 {
			return ops("sluice-token", n, false) / ops("redis-incr", 1, false)
		}),
		row("sluice RL.TOKEN ÷ Redis INCR, io-threads on as many cores", 0, func(n int) float64 {
			return ops("sluice-token", n, false) / ops("redis-incr", n, true)
		}),
		row("sluice RL.TOKEN, server CPU µs per decision", 0, func(n int) float64 {
			return rep.find("sluice-token", n, false).figs().srvPerM
		}),
		row("sluice RL.TOKEN, share of its cores busy", 0, func(n int) float64 {
			r := rep.find("sluice-token", n, false)
			return busy(r, r.figs().srvPerM, n)
		}),
		row("sluice RL.TOKEN, share of the generator's CPUs busy", 0, func(n int) float64 {
			r := rep.find("sluice-token", n, false)
			return busy(r, r.figs().genPerM, rep.gen)
		}),
	}
	for _, l := range libraries {
		out = append(out,
			row("sluice ÷ Redis Lua one thread, "+l.label, 10, func(n int) float64 {
				return ops("sluice-script-"+l.name, n, false) / ops("redis-script-"+l.name, 1, false)
			}),
			row("sluice ÷ Redis Lua io-threads, "+l.label, 0, func(n int) float64 {
				return ops("sluice-script-"+l.name, n, false) / ops("redis-script-"+l.name, n, true)
			}))
	}
	return out
}

func (rep *coresReport) print(w io.Writer) {
	fmt.Fprintf(w, "\n## sluice on 1 to %d cores against Redis (bench -cores)\n\n", rep.counts[len(rep.counts)-1])
	fmt.Fprintf(w, "Measured %s, commit %s: %d runs × %d rounds in %s (figures: the median round).\n\n",
		rep.started.UTC().Format("2006-01-02 15:04 MST"), rep.commit, len(rep.results), rep.rounds,
		rep.finished.Sub(rep.started).Round(time.Second))
	m := rep.machine
	fmt.Fprintf(w, "- machine: %d CPUs (%s), kernel %s; %s; %s\n", m.cpus, m.model, m.kernel, m.redisVersion, m.sluice)
	fmt.Fprintf(w, "- load average (1, 5, 15 min) before: %s; after: %s\n", rep.loadBefore, m.loadAfter)
	fmt.Fprintf(w, "- command: `%s`\n", rep.argv)
	for _, n := range rep.notes {
		fmt.Fprintf(w, "- %s\n", n)
	}
	for _, s := range rep.skipped {
		fmt.Fprintf(w, "- %s\n", s)
	}
	ns := rep.measured()
	if len(ns) > 0 {
		fmt.Fprintf(w, "\n| comparison |")
		for _, n := range ns {
			fmt.Fprintf(w, " %d core(s) |", n)
		}
		fmt.Fprintf(w, " target |\n|---|")
		for range ns {
			fmt.Fprintf(w, "---:|")
		}
		fmt.Fprintf(w, "---|\n")
		for _, r := range rep.ratios() {
			fmt.Fprintf(w, "| %s |", r.what)
			met := len(r.values) > 0
			for _, v := range r.values {
				fmt.Fprintf(w, " %s |", fmtCoresFigure(v))
				if math.IsNaN(v) || v < r.target {
					met = false
				}
			}
			switch {
			case r.target == 0:
				fmt.Fprintf(w, " |\n")
			case met:
				fmt.Fprintf(w, " ≥ %g **met** |\n", r.target)
			default:
				fmt.Fprintf(w, " ≥ %g **not met** |\n", r.target)
			}
		}
	}
	fmt.Fprintf(w, "\n| %s |\n|%s\n", strings.Join(runColumns, " | "), strings.Repeat("---|", len(runColumns)))
	for _, r := range rep.results {
		fmt.Fprintf(w, "| %s |\n", strings.Join(r.row(), " | "))
	}
	for _, r := range rep.results {
		if r.t == nil {
			continue
		}
		for _, p := range r.t.sortedProblems() {
			fmt.Fprintf(w, "- problem: %s on %d core(s): %d× %s\n", r.spec.sc.label, r.spec.procs, p.count, p.example)
		}
	}
}

// fmtCoresFigure prints a ratio or a rate: large values grouped, small
// ones to two decimals.
func fmtCoresFigure(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "-"
	case v >= 1000:
		return groupDigits(v)
	}
	return fmt.Sprintf("%.2f", v)
}
