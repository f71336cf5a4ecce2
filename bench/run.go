package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-rl/sluice/bench/internal/proc"
	"github.com/sluice-rl/sluice/internal/resp"
)

// One run: a scenario at one setting, on a fresh server when bench starts
// the servers, with CPU and memory read around the measured part.

// runSpec is one run's settings.
type runSpec struct {
	group    string // which table the run belongs to
	sc       *scenario
	conns    int
	depth    int
	keys     uint64
	zipf     float64 // 0: uniform keys
	procs    int     // GOMAXPROCS of a started sluice; 0: the Go default
	duration time.Duration
	count    int64   // requests to measure; 0: run for duration
	offered  float64 // open loop (paced.go): requests per second over all connections; 0: closed loop
	// oneLoop drives a closed loop from one epoll set (driveEpoll) where
	// the platform has it, instead of a goroutine per connection.
	oneLoop bool
	warmup  time.Duration
	w       workload
}

func (s runSpec) dist() string {
	if s.zipf > 1 {
		return fmt.Sprintf("zipf %.2g", s.zipf)
	}
	return "uniform"
}

// execute performs one run.
func execute(ctx context.Context, spec runSpec, targets map[string]*target) (res *result, err error) {
	res = &result{spec: spec, dbsize: -1}
	tg := targets[spec.sc.server]
	switch {
	case tg == nil && spec.sc.server == "redis":
		res.skipped = "no redis server (redis-server is not on PATH and -redis was not given)"
		return res, nil
	case tg == nil:
		res.skipped = "no " + spec.sc.server + " server (a group needs bench to build and start sluice: drop -sluice)"
		return res, nil
	case spec.procs > 0 && tg.addr != "":
		res.skipped = "GOMAXPROCS can only be set on a server bench starts"
		return res, nil
	case spec.offered > 0 && tg.kind == "cluster":
		res.skipped = "a cluster run is closed-loop only (a paced connection reaches one node)"
		return res, nil
	}
	srv, err := tg.open(ctx, spec.procs)
	if err != nil {
		return nil, err
	}
	if spec.sc.setup != nil {
		if err := spec.sc.setup(srv, spec.w, int(spec.keys)); err != nil {
			return nil, fmt.Errorf("%s: setting up the server: %w", spec.sc.label, err)
		}
	}
	defer srv.stop()
	res.version = srv.version()

	var rss0 int64
	if srv.pid > 0 {
		if v, err := proc.RSS(srv.pid); err == nil {
			rss0, res.rssKnown = v, true
		}
	}
	l := &load{sc: spec.sc, w: spec.w, depth: spec.depth, keys: spec.keys, zipf: spec.zipf,
		counted: spec.count > 0, touched: newKeySet(spec.keys)}
	l.budget.Store(spec.count)
	sha := ""
	if spec.sc.lua != "" {
		if sha, err = loadScript(srv, spec.sc.lua); err != nil {
			return nil, err
		}
	}
	l.tmpl = compileTemplate(spec.sc.args(spec.w, sha), len(spec.sc.prefix)+keyDigits)
	if why := probe(srv, l); why != "" {
		res.skipped = why
		return res, nil
	}
	ws, err := dialWorkers(l, srv, spec.conns, sha)
	if err != nil {
		return nil, err
	}
	bound := spec.warmup + spec.duration + 30*time.Second
	if spec.count > 0 {
		bound = spec.warmup + 10*time.Minute
	}
	hardCtx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	var cpu0, gen0 time.Duration
	var cpuErr error
	var rws []*replWatch
	var sw *shareWatch
	mark := func() {
		// A group's or a cluster's processes are read once for both the
		// total and the shares by role, so that the shares add up to it.
		switch {
		case srv.group != nil || srv.cluster != nil:
			sw = watchShares(srv)
			cpu0, cpuErr = sumCPU(sw.start), sw.err
		case srv.pid > 0:
			cpu0, cpuErr = srv.cpu()
		}
		gen0, _ = selfCPU()
		if srv.group != nil {
			rws = []*replWatch{watchRepl(srv.group)}
		}
		if srv.cluster != nil {
			for _, g := range srv.cluster.groups {
				rws = append(rws, watchRepl(g))
			}
		}
	}
	// end reads the CPU times where the measured part ends, before the
	// workers' tallies are merged: merging a thousand connections'
	// histograms is the generator's own work, not the run's.
	end := func() {
		if srv.pid > 0 && cpuErr == nil {
			read := srv.cpu
			if sw != nil {
				read = sw.stop
			}
			if cpu1, err := read(); err == nil {
				res.srvCPU, res.cpuKnown = cpu1-cpu0, true
			}
		}
		gen1, _ := selfCPU()
		res.genCPU = gen1 - gen0
	}
	marks := measureMarks{start: mark, end: end}
	switch {
	case spec.offered > 0:
		res.t, res.elapsed = drivePaced(l, ws, spec.offered, spec.warmup, spec.duration, hardCtx.Done(), marks)
	case spec.oneLoop && epollDriven && sha == "" && srv.shards == nil:
		if res.t, res.elapsed, err = driveEpoll(l, ws, spec.warmup, spec.duration, hardCtx.Done(), marks); err != nil {
			for _, w := range ws {
				w.close()
			}
			return nil, fmt.Errorf("%s: %w", spec.sc.label, err)
		}
	default:
		res.t, res.elapsed = drive(l, ws, spec.warmup, spec.duration, hardCtx.Done(), marks)
	}
	for _, rw := range rws {
		res.repl = res.repl.add(rw.finish(res.elapsed))
	}
	if sw != nil {
		res.shares = sw.finish()
	}
	if l.aborted.Load() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%s did not finish within %v", spec.sc.label, bound)
	}
	if res.rssKnown {
		if v, err := proc.RSS(srv.pid); err == nil {
			res.rssGrowth = v - rss0
		} else {
			res.rssKnown = false
		}
	}
	res.touched = l.touched.count()
	res.dbsize = srv.dbsize()
	return res, nil
}

// loadScript loads a Lua script and checks the SHA1 the server names it by.
func loadScript(srv *server, src string) (string, error) {
	v, err := srv.call(5*time.Second, "SCRIPT", "LOAD", src)
	if err != nil {
		return "", err
	}
	if v.Kind != '$' || string(v.Text) != scriptSHA(src) {
		return "", fmt.Errorf("SCRIPT LOAD: want %s, got %s", scriptSHA(src), v.String())
	}
	return string(v.Text), nil
}

// probe sends one request of the scenario and reports why the scenario
// cannot run, if the server does not have its command. Other wrong replies
// are left for the run to count and report.
func probe(srv *server, l *load) string {
	now := strconv.AppendInt(nil, time.Now().Unix(), 10)
	v, err := srv.sendAs(5*time.Second, l.tmpl.encode(nil, appendKey(nil, l.sc.prefix, 0), now), true)
	if err == nil && isUnknownCommand(v) {
		return "the server does not have the command: " + v.String()
	}
	return ""
}

// selfCPU is bench's own CPU time, to show what the load generator costs.
func selfCPU() (time.Duration, error) {
	return proc.CPU(os.Getpid())
}

// isUnknownCommand reports whether an error reply says the server lacks the
// command (Redis's wording, which sluice shares).
func isUnknownCommand(v *resp.Value) bool {
	return v.IsError() && strings.HasPrefix(string(v.Text), "ERR unknown command")
}
