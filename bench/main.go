// Command bench measures sluice against Redis running the Lua rate limiters
// people deploy today, side by side, over loopback TCP, and sluice's Envoy
// rate limit service against envoyproxy/ratelimit + Redis over gRPC. It
// imports nothing of sluice: it builds ./cmd/sluice from the tree (or
// drives a running server) and speaks RESP and gRPC to it.
//
// bench is its own module (bench/go.mod, using the tree above through a
// replace directive); run it from this directory, paths relative to it:
//
//	go run .                             # the quick run (about a minute and a half)
//	BENCH=full go run .                  # everything: depths, cardinalities, zipf, cores
//	go run . -scenarios sluice-token,redis-lua-token -P 1,16 -c 50 -d 5s
//	go run . -sluice 127.0.0.1:6380 -redis 127.0.0.1:6379
//	go run . -sluice-bin /tmp/sluice-old -scenarios sluice-token -P 1,16   # a binary built elsewhere
//	go run . -md RESULTS.md              # also write the report and the chart
//	go run . -redis off -scenarios sluice-token,group-token,group-token-follower -P 16,1
//	                                     # a fresh 3-node group (-cluster 3) per round vs one node
//	go run . -plan cluster -md RESULTS.md   # one node, one group and a sharded cluster of 3 groups of 3 (-cluster-groups,
//	                                     # -cluster) at P1, P16, P64, CPU by role; into its own section
//	go run . -failover 7                 # kill -9 the leader of a fresh group, 7 times
//	go run . -recovery 5                 # restart a follower of a group of 100,000 keys, 5 times
//	go run . -floor 3000                 # what a durable entry on 3 processes costs the kernel and disk, nothing else
//	go run . -rls only                   # Envoy RLS v3: sluice vs envoyproxy/ratelimit + Redis, over gRPC
//	go run . -cores 1,2,4,8              # sluice on 1-8 cores vs Redis on one thread and with io-threads
//	go run . -plan sidecar -md RESULTS.md   # only the sidecar regime: paced RL.TOKEN, INCR and Lua at 20k/s and 50k/s,
//	                                     # and 1000 connections; into its own section
//	go run . -scenarios sluice-token,redis-incr -P 1 -offered 20000   # a custom plan, paced (open loop)
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

const (
	maxConns     = 1000
	maxDepthFlag = 1024
	maxKeys      = 100_000_000
	maxDuration  = 10 * time.Minute
	maxCount     = 1_000_000_000
)

// options are the command line.
type options struct {
	sluice, redis     string
	sluiceBin         string
	plan              string
	scenarios, depths string
	conns             int
	rounds            int
	dur, warmup       time.Duration
	count             int64
	offered           float64
	keys              uint64
	zipf              float64
	algo              string
	rate              string
	capacity, window  int64
	cost              int64
	procs             int
	pin               string
	md                string
	crossCheck        bool
	cluster           int // nodes of the groups the group scenarios and trials start
	clusterGroups     int // data groups of the cluster scenario's cluster
	trials            trialOptions
	rls               rlsOptions
	cores             coresOptions
	genCPUs           int // CPUs the load generator keeps to when pinned (0: one)
	floor             int // entries a row of the replication floor (0: no floor)
}

func main() {
	if role := os.Getenv(floorEnv); role != "" {
		os.Exit(floorChild(role, os.Args[1:], os.Stderr))
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(argv []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(argv, stderr)
	if err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		fmt.Fprintln(stderr, "bench:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer stopAll()
	go func() { // a second Ctrl-C while stopping: stop the servers and leave now
		<-ctx.Done()
		again := make(chan os.Signal, 1)
		signal.Notify(again, os.Interrupt, syscall.SIGTERM)
		<-again
		stopAll()
		os.Exit(130)
	}()

	if o.cores.wanted() {
		if err := runCores(ctx, o, stdout, stderr); err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			if ctx.Err() != nil {
				return 130
			}
			return 1
		}
		return 0
	}
	if o.floor > 0 {
		if err := runFloor(ctx, o, stdout); err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			if ctx.Err() != nil {
				return 130
			}
			return 1
		}
		return 0
	}
	if o.trials.wanted() {
		if err := runTrials(ctx, o, stdout, stderr); err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			if ctx.Err() != nil {
				return 130
			}
			return 1
		}
		return 0
	}
	failed := int64(0)
	if o.rls.mode != "only" {
		rep, err := bench(ctx, o, stderr)
		if err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			if ctx.Err() != nil {
				return 130
			}
			return 1
		}
		rep.printText(stdout)
		if o.md != "" {
			if err := rep.writeMarkdown(o.md); err != nil {
				fmt.Fprintln(stderr, "bench:", err)
				return 1
			}
			fmt.Fprintln(stderr, "bench: wrote", o.md)
		}
		failed += rep.errorCount()
	}
	if o.rls.wanted(o.plan) {
		rrep, err := runRLS(ctx, o, stderr)
		if err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			if ctx.Err() != nil {
				return 130
			}
			return 1
		}
		rrep.printText(stdout)
		if o.md != "" {
			if err := rrep.writeMarkdown(o.md); err != nil {
				fmt.Fprintln(stderr, "bench:", err)
				return 1
			}
			fmt.Fprintln(stderr, "bench: wrote the RLS comparison into", o.md)
		}
		failed += rrep.errorCount()
	}
	if failed > 0 {
		fmt.Fprintf(stderr, "bench: %d requests failed their checks (see the problems above)\n", failed)
		return 1
	}
	return 0
}

func parseFlags(argv []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.sluice, "sluice", "", "address of a running sluice (default: build ./cmd/sluice and start a fresh one per run)")
	fs.StringVar(&o.sluiceBin, "sluice-bin", "", "a sluice binary to start instead of building ./cmd/sluice (to compare two builds with the same plan)")
	fs.StringVar(&o.redis, "redis", "", `address of a running Redis (default: start redis-server per run if on PATH; "off" to skip Redis)`)
	fs.StringVar(&o.plan, "plan", "", "quick, full, sidecar (only the paced runs at partial load and 1000 connections), cluster (only one node, one group and a sharded cluster at P1, P16, P64) or custom (default: $BENCH, else quick; -scenarios or -P alone mean custom)")
	fs.StringVar(&o.scenarios, "scenarios", "sluice-ping,sluice-token,redis-lua-token,redis-incr", "custom plan: scenarios, of "+scenarioNames())
	fs.StringVar(&o.depths, "P", "1,16", "custom plan: pipeline depths, comma-separated")
	fs.IntVar(&o.conns, "c", 50, "connections")
	fs.DurationVar(&o.dur, "d", 0, "measured time per round of a run (default: quick 1s, full 3s, custom 3s)")
	fs.IntVar(&o.rounds, "rounds", 0, "rounds of every run, interleaved; figures are the median round's (default: quick and full 3, custom 1)")
	fs.Float64Var(&o.offered, "offered", 0, "custom plan: offer this many requests per second over all connections, open-loop (paced), instead of closed-loop connections")
	fs.Int64Var(&o.count, "n", 0, "measure this many requests per run instead of a duration")
	fs.DurationVar(&o.warmup, "warmup", 300*time.Millisecond, "unmeasured load before each round (replies are still checked)")
	fs.Uint64Var(&o.keys, "keys", 100_000, "key cardinality: keys are drawn from this many (1 = one hot key)")
	fs.Float64Var(&o.zipf, "zipf", 0, "zipfian keys with this exponent (> 1); 0 for uniform")
	fs.StringVar(&o.algo, "algo", "all", "decision scenarios to run: all, token, fixed or script (the limiter libraries' scripts)")
	fs.StringVar(&o.rate, "rate", "10", "token bucket rate, tokens per second (a plain decimal, as both RL.TOKEN and the Lua script read it)")
	fs.Int64Var(&o.capacity, "capacity", 100, "token bucket capacity, and the fixed window's limit")
	fs.Int64Var(&o.window, "window", 10, "fixed window length, whole seconds")
	fs.Int64Var(&o.cost, "cost", 1, "units each request asks for (n)")
	fs.IntVar(&o.procs, "gomaxprocs", 0, "GOMAXPROCS of the sluice bench starts (0: the cores it is given); more than the servers' cores shares all of them with the generator")
	fs.StringVar(&o.pin, "pin", "auto", "auto, on or off: run the load generator on the first CPU and the servers bench starts on the others (auto: with 2 or more CPUs and a server to start)")
	fs.StringVar(&o.md, "md", "", "write the report into this markdown file (its generated section only) and the chart into results/ beside it")
	fs.BoolVar(&o.crossCheck, "redis-benchmark", true, "quick and full plans: also run redis-benchmark on the same servers, if installed")
	fs.IntVar(&o.cluster, "cluster", 3, "nodes of the replicated group bench starts on loopback for every round of a group-* scenario, and for -failover and -recovery; nodes of each group of the cluster scenario")
	fs.IntVar(&o.clusterGroups, "cluster-groups", 3, "data groups of the sharded cluster bench starts (--cluster-groups) for every round of the cluster-token scenario")
	fs.IntVar(&o.floor, "floor", 0, "instead of load runs: the replication floor, this many entries a row: a leader and two follower processes (no Raft, no codec) that write, fdatasync and send over loopback TCP entries of 128 B to 64 KiB, with and without fdatasync; their CPU an entry")
	o.trials.flags(fs)
	o.rls.flags(fs)
	o.cores.flags(fs)
	if err := fs.Parse(argv); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.plan == "" {
		o.plan = os.Getenv("BENCH")
		if !set["plan"] && (set["scenarios"] || set["P"]) {
			o.plan = "custom"
		}
		if o.plan == "" {
			o.plan = "quick"
		}
	}
	if o.dur == 0 {
		o.dur = 3 * time.Second
		if o.plan == "quick" && !set["cores"] {
			o.dur = time.Second
		}
	}
	if o.rounds == 0 {
		o.rounds = 1
		if o.plan != "custom" {
			o.rounds = 3
		}
	}
	switch {
	case o.plan != "quick" && o.plan != "full" && o.plan != "custom" && o.plan != "sidecar" && o.plan != "cluster":
		return nil, fmt.Errorf("-plan %q: want quick, full, sidecar, cluster or custom", o.plan)
	case o.rounds < 1 || o.rounds > 15:
		return nil, fmt.Errorf("-rounds %d: want 1 to 15", o.rounds)
	case o.conns < 1 || o.conns > maxConns:
		return nil, fmt.Errorf("-c %d: want 1 to %d connections", o.conns, maxConns)
	case o.dur <= 0 || o.dur > maxDuration:
		return nil, fmt.Errorf("-d %v: want more than 0 and at most %v", o.dur, maxDuration)
	case o.warmup < 0 || o.warmup > time.Minute:
		return nil, fmt.Errorf("-warmup %v: want 0 to 1m", o.warmup)
	case o.offered < 0 || o.offered > 10_000_000:
		return nil, fmt.Errorf("-offered %v: want 0 (closed loop) to 10,000,000 requests per second", o.offered)
	case o.offered > 0 && o.count > 0:
		return nil, fmt.Errorf("-offered and -n: a paced run lasts -d")
	case o.count < 0 || o.count > maxCount:
		return nil, fmt.Errorf("-n %d: want 0 to %d", o.count, maxCount)
	case o.keys < 1 || o.keys > maxKeys:
		return nil, fmt.Errorf("-keys %d: want 1 to %d", o.keys, maxKeys)
	case o.zipf != 0 && o.zipf <= 1:
		return nil, fmt.Errorf("-zipf %v: want an exponent above 1, or 0 for uniform keys", o.zipf)
	case o.algo != "all" && o.algo != "token" && o.algo != "fixed" && o.algo != "script":
		return nil, fmt.Errorf("-algo %q: want all, token, fixed or script", o.algo)
	case o.capacity < 1 || o.window < 1:
		return nil, fmt.Errorf("-capacity and -window must be positive")
	case o.pin != "auto" && o.pin != "on" && o.pin != "off":
		return nil, fmt.Errorf("-pin %q: want auto, on or off", o.pin)
	case o.procs < 0:
		return nil, fmt.Errorf("-gomaxprocs %d: want 0 or more", o.procs)
	case o.floor < 0 || o.floor > maxFloor:
		return nil, fmt.Errorf("-floor %d: want 0 to %d entries a row", o.floor, maxFloor)
	case o.cluster < 1 || o.cluster > maxGroupSize:
		return nil, fmt.Errorf("-cluster %d: want 1 to %d nodes", o.cluster, maxGroupSize)
	case o.clusterGroups < 1 || o.clusterGroups > maxClusterGroups:
		return nil, fmt.Errorf("-cluster-groups %d: want 1 to %d groups", o.clusterGroups, maxClusterGroups)
	case o.sluiceBin != "" && o.sluice != "":
		return nil, fmt.Errorf("-sluice-bin and -sluice: give a binary to start or a running server, not both")
	}
	if err := o.trials.check(o.cluster); err != nil {
		return nil, err
	}
	if err := o.rls.check(); err != nil {
		return nil, err
	}
	if err := o.cores.check(o); err != nil {
		return nil, err
	}
	return o, nil
}

// bench sets up the servers, performs the plan's runs and the cross-check,
// and returns the report.
func bench(ctx context.Context, o *options, log io.Writer) (*report, error) {
	b := base{conns: o.conns, keys: o.keys, zipf: o.zipf, procs: o.procs, dur: o.dur, warmup: o.warmup,
		count: o.count, algo: o.algo, w: workload{rate: o.rate, capacity: o.capacity, window: o.window, cost: o.cost},
		nodes: o.cluster, groups: o.clusterGroups}
	var runs []runSpec
	switch o.plan {
	case "quick":
		runs = quickPlan(b)
	case "full":
		runs = fullPlan(b)
	case "sidecar":
		runs = sidecarRuns(b)
	case "cluster":
		runs = clusterRuns(b)
	default:
		names, err := parseScenarios(o.scenarios)
		if err != nil {
			return nil, err
		}
		depths, err := parseDepths(o.depths)
		if err != nil {
			return nil, err
		}
		runs = customPlan(b, names, depths)
		for i := range runs {
			runs[i].offered = o.offered
		}
	}

	tmp, err := os.MkdirTemp("", "sluice-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	targets, notes, err := setupTargets(ctx, o, tmp, log)
	if err != nil {
		return nil, err
	}
	rep := &report{plan: o.plan, argv: commandLine(o), notes: notes, started: time.Now(), base: b}
	loadBefore := loadAverage()
	rounds := make([][]*result, len(runs))
	for round := 1; round <= o.rounds; round++ { // interleaved, so that a burst of other work hits one round of each
		for i, spec := range runs {
			fmt.Fprintf(log, "bench: [round %d/%d, run %d/%d] %-24s P%-3d c%d keys=%d %s", round, o.rounds, i+1, len(runs),
				spec.sc.label, spec.depth, spec.conns, spec.keys, spec.dist())
			if spec.procs > 0 {
				fmt.Fprintf(log, " GOMAXPROCS=%d", spec.procs)
			}
			if spec.offered > 0 {
				fmt.Fprintf(log, " paced %s/s", groupDigits(spec.offered))
			}
			if round > 1 && rounds[i][0].skipped != "" {
				fmt.Fprintln(log, " → skipped")
				continue
			}
			res, err := execute(ctx, spec, targets)
			if err != nil {
				fmt.Fprintln(log)
				return nil, err
			}
			fmt.Fprintln(log, " →", res.summary())
			rounds[i] = append(rounds[i], res)
		}
	}
	for _, rs := range rounds {
		rep.results = append(rep.results, combine(rs))
	}
	rep.rounds = o.rounds
	if o.crossCheck && o.plan != "custom" && o.plan != "sidecar" && o.plan != "cluster" {
		rep.cross = crossCheck(ctx, targets, log)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	rep.machine = describeMachine(targets)
	rep.machine.loadBefore = loadBefore
	rep.finished = time.Now()
	return rep, nil
}

// setupTargets decides how each server is reached, building sluice if
// bench is to start it.
func setupTargets(ctx context.Context, o *options, tmp string, log io.Writer) (map[string]*target, []string, error) {
	targets := map[string]*target{}
	var notes []string
	if o.sluice != "" {
		targets["sluice"] = &target{kind: "sluice", addr: o.sluice}
	} else {
		bin, err := sluiceBinary(ctx, o, tmp, log)
		if err != nil {
			return nil, nil, err
		}
		if o.sluiceBin != "" {
			notes = append(notes, "sluice: the binary "+bin+" (-sluice-bin), not built from this tree.")
		}
		targets["sluice"] = &target{kind: "sluice", bin: bin, dir: tmp}
		for _, fsync := range []string{"everysec", "always"} {
			targets["sluice-aof-"+fsync] = &target{kind: "sluice", bin: bin, dir: tmp,
				extra: []string{"--appendonly", "yes", "--appendfsync", fsync}}
		}
		rules, err := writeBenchPolicy(tmp, o.rate, o.capacity)
		if err != nil {
			return nil, nil, err
		}
		targets["sluice-policies"] = &target{kind: "sluice", bin: bin, dir: tmp, extra: []string{"--policies", rules}}
		tlsFiles, err := newBenchTLS(tmp)
		if err != nil {
			return nil, nil, err
		}
		targets["sluice-tls"] = &target{kind: "sluice", bin: bin, dir: tmp, extra: tlsFiles.flags(), tls: tlsFiles.client}
		aclFile, err := writeBenchACL(tmp, findScenario("sluice-token-acl").prefix)
		if err != nil {
			return nil, nil, err
		}
		targets["sluice-acl"] = &target{kind: "sluice", bin: bin, dir: tmp, extra: []string{"--aclfile", aclFile},
			user: aclUser, pass: aclPass}
		targets["sluice-metrics"] = &target{kind: "sluice", bin: bin, dir: tmp, scrape: true}
		for name, t := range groupTargets(bin, tmp, o.cluster) {
			targets[name] = t
		}
		targets["cluster"] = &target{kind: "cluster", bin: bin, dir: tmp,
			cl: clusterTarget{groups: o.clusterGroups, size: o.cluster, fsync: true}}
	}
	switch {
	case o.redis == "off":
		notes = append(notes, "Redis scenarios skipped: -redis off.")
	case o.redis != "":
		targets["redis"] = &target{kind: "redis", addr: o.redis}
	default:
		bin, err := exec.LookPath("redis-server")
		if err != nil {
			notes = append(notes, "Redis scenarios skipped: redis-server is not on PATH (apt-get install redis-server redis-tools).")
		} else {
			targets["redis"] = &target{kind: "redis", bin: bin, dir: tmp}
		}
	}
	starts := false
	for _, t := range targets {
		if t.addr != "" {
			notes = append(notes, fmt.Sprintf("%s at %s was given: it is not restarted between runs, and its CPU and memory are read only if it runs on this machine.", t.kind, t.addr))
		} else {
			starts = true
		}
	}
	mode := o.pin
	if mode == "auto" && !starts {
		mode = "off" // the servers run where their owner put them
	}
	if err := setupCPUs(mode, o.genCPUs); err != nil {
		return nil, nil, err
	}
	notes = append(notes, "CPUs: "+cpus.describe()+".")
	return targets, notes, nil
}

// sluiceBinary returns the sluice binary to start: -sluice-bin, or
// ./cmd/sluice of the source tree built into dir.
func sluiceBinary(ctx context.Context, o *options, dir string, log io.Writer) (string, error) {
	if o.sluiceBin != "" {
		bin, err := filepath.Abs(o.sluiceBin)
		if err != nil {
			return "", err
		}
		if _, err := os.Stat(bin); err != nil {
			return "", fmt.Errorf("-sluice-bin: %w", err)
		}
		fmt.Fprintln(log, "bench: starting", bin)
		return bin, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	root, err := moduleRoot(wd)
	if err != nil {
		return "", err
	}
	fmt.Fprintln(log, "bench: building ./cmd/sluice from", root)
	return buildSluice(ctx, root, dir)
}

// commandLine is how the run was invoked, for the report: from bench/, the
// directory of the bench module, as make bench runs it.
func commandLine(o *options) string {
	args := strings.Join(os.Args[1:], " ")
	if args != "" {
		args = " " + args
	}
	env := ""
	if v := os.Getenv("BENCH"); v != "" {
		env = "BENCH=" + v + " "
	}
	return "cd bench && " + env + "go run ." + args
}
