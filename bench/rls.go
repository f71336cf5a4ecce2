package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// The RLS comparison: one-descriptor ShouldRateLimit calls, the way Envoy's
// rate_limit filter makes them, against sluice's gRPC front end and against
// envoyproxy/ratelimit with a Redis behind it, at the same client
// concurrency, each on a fresh server (or pair) per round, the rounds
// interleaved. It runs after the RESP plans of `make bench` (quick and
// full), or alone with -rls only.

// rlsOptions are the comparison's flags.
type rlsOptions struct {
	mode         string // auto, on, off, only
	ratelimitBin string
	callers      int
	conns        int
	dur          time.Duration
	keys         uint64
	gen          string // the load generator: rlsGenLean or rlsGenGRPC
}

func (r *rlsOptions) flags(fs *flag.FlagSet) {
	fs.StringVar(&r.mode, "rls", "auto", "the Envoy RLS comparison: auto (after the quick and full plans), on, off, or only")
	fs.StringVar(&r.ratelimitBin, "ratelimit-bin", "", "envoyproxy/ratelimit's service binary (default: built once into the user cache directory from the Go module proxy)")
	fs.IntVar(&r.callers, "rls-c", 50, "RLS comparison: concurrent calls (closed-loop callers)")
	fs.IntVar(&r.conns, "rls-conns", 4, "RLS comparison: HTTP/2 connections the callers share")
	fs.DurationVar(&r.dur, "rls-d", 0, "RLS comparison: measured time per round (default 3s)")
	fs.Uint64Var(&r.keys, "rls-keys", 65536, "RLS comparison: distinct client addresses")
	fs.StringVar(&r.gen, "rls-gen", rlsGenLean, "RLS comparison: the load generator, lean (raw HTTP/2 frames) or grpc (grpc-go's client)")
}

func (r *rlsOptions) check() error {
	switch {
	case r.mode != "auto" && r.mode != "on" && r.mode != "off" && r.mode != "only":
		return fmt.Errorf("-rls %q: want auto, on, off or only", r.mode)
	case r.callers < 1 || r.callers > maxConns:
		return fmt.Errorf("-rls-c %d: want 1 to %d", r.callers, maxConns)
	case r.conns < 1 || r.conns > r.callers:
		return fmt.Errorf("-rls-conns %d: want 1 to -rls-c", r.conns)
	case r.dur < 0 || r.dur > maxDuration:
		return fmt.Errorf("-rls-d %v: want at most %v", r.dur, maxDuration)
	case r.keys < 1 || r.keys > 1<<24:
		return fmt.Errorf("-rls-keys %d: want 1 to %d", r.keys, 1<<24)
	case r.gen != rlsGenLean && r.gen != rlsGenGRPC:
		return fmt.Errorf("-rls-gen %q: want %s or %s", r.gen, rlsGenLean, rlsGenGRPC)
	}
	if r.dur == 0 {
		r.dur = 3 * time.Second
	}
	return nil
}

// wanted reports whether the comparison runs after a plan.
func (r *rlsOptions) wanted(plan string) bool {
	return r.mode == "on" || r.mode == "only" || r.mode == "auto" && plan != "custom" && plan != "sidecar" && plan != "cluster"
}

// The two services compared.
const (
	rlsSluice = "sluice gRPC (--grpc-bind)"
	rlsEnvoy  = "envoyproxy/ratelimit + Redis"
)

// rlsReport is the comparison's outcome.
type rlsReport struct {
	argv              string
	started, finished time.Time
	rounds            int
	opts              rlsOptions
	results           map[string]*result // by service
	skipped           string             // why the envoyproxy/ratelimit side did not run
	machine           machine
	commit            string
	ratelimit         string
	notes             []string
}

// runRLS performs the comparison: rounds × (sluice, then the pair).
func runRLS(ctx context.Context, o *options, log io.Writer) (*rlsReport, error) {
	rep := &rlsReport{argv: commandLine(o), started: time.Now(), rounds: o.rounds, opts: o.rls, results: map[string]*result{}}
	tmp, err := os.MkdirTemp("", "sluice-bench-rls-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	root, err := moduleRoot(wd)
	if err != nil {
		return nil, err
	}
	rep.commit = gitCommit(root)
	sluiceBin, err := sluiceBinary(ctx, o, tmp, log)
	if err != nil {
		return nil, err
	}
	if o.sluiceBin != "" {
		rep.notes = append(rep.notes, "sluice: the binary "+sluiceBin+" (-sluice-bin), not built from this tree.")
	}
	rulesDir, err := writeRLSRules(tmp)
	if err != nil {
		return nil, err
	}
	if err := setupCPUs(o.pin, 1); err != nil {
		return nil, err
	}
	rep.notes = append(rep.notes, "CPUs: "+cpus.describe()+".")
	redisBin, _ := exec.LookPath("redis-server")
	ratelimitBin, why := ratelimitBinary(ctx, o.rls.ratelimitBin, log)
	switch {
	case redisBin == "":
		rep.skipped = "redis-server is not on PATH (apt-get install redis-server)"
	case why != "":
		rep.skipped = why
	}
	if rep.skipped != "" {
		fmt.Fprintln(log, "bench: the envoyproxy/ratelimit side of the RLS comparison is skipped:", rep.skipped)
	} else {
		rep.ratelimit = ratelimitModule + "@" + ratelimitVersion
	}
	rep.machine = describeMachine(map[string]*target{"redis": {bin: redisBin}, "sluice": {bin: sluiceBin}})
	rep.machine.loadBefore = loadAverage()

	rounds := map[string][]*result{}
	for round := 1; round <= o.rounds; round++ {
		for _, name := range []string{rlsSluice, rlsEnvoy} {
			if name == rlsEnvoy && rep.skipped != "" {
				continue
			}
			fmt.Fprintf(log, "bench: [RLS round %d/%d] %-30s c%d conns=%d", round, o.rounds, name, o.rls.callers, o.rls.conns)
			var srv *rlsServer
			if name == rlsSluice {
				srv, err = startSluiceRLS(ctx, sluiceBin, tmp, rulesDir)
			} else {
				srv, err = startEnvoyRatelimit(ctx, ratelimitBin, redisBin, tmp, tmp)
			}
			if err != nil {
				fmt.Fprintln(log)
				return nil, err
			}
			res, err := measureRLS(srv, o)
			srv.stop()
			if err != nil {
				fmt.Fprintln(log)
				return nil, err
			}
			fmt.Fprintln(log, " →", res.summary())
			rounds[name] = append(rounds[name], res)
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
		}
	}
	for name, rs := range rounds {
		rep.results[name] = combine(rs)
	}
	rep.machine.loadAfter = loadAverage()
	rep.finished = time.Now()
	return rep, nil
}

// measureRLS drives one service for a warmup and the measured time, and
// reads the CPU its processes and the generator used meanwhile.
func measureRLS(srv *rlsServer, o *options) (*result, error) {
	reqs := rlsRequests(o.rls.keys)
	tr, err := dialRLSGen(o.rls.gen, srv.addr, o.rls.conns, reqs)
	if err != nil {
		return nil, err
	}
	defer tr.close()
	res := &result{dbsize: -1}
	l := &rlsLoad{callers: o.rls.callers, conns: o.rls.conns, keys: o.rls.keys}
	var cpu0, gen0 time.Duration
	var cpuErr error
	res.t, res.elapsed = driveRLS(l, tr, len(reqs), o.warmup, o.rls.dur, measureMarks{
		start: func() {
			cpu0, cpuErr = srv.cpu()
			gen0, _ = selfCPU()
		},
		end: func() {
			if cpuErr == nil {
				if cpu1, err := srv.cpu(); err == nil {
					res.srvCPU, res.cpuKnown = cpu1-cpu0, true
				}
			}
			gen1, _ := selfCPU()
			res.genCPU = gen1 - gen0
		},
	})
	return res, nil
}

// gitCommit is the tree's commit, with "+changes" when it has uncommitted
// ones; "unknown" outside git.
func gitCommit(root string) string {
	out, err := exec.Command("git", "-C", root, "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		c += "+changes"
	}
	return c
}
