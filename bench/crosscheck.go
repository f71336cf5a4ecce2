package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// The redis-benchmark cross-check and the description of the machine.

// crossRun is one redis-benchmark run.
type crossRun struct {
	label   string
	command string // as it can be typed, with the port bench used
	result  string // redis-benchmark's summary line, or why there is none
	rps     float64
}

// crossCheck runs redis-benchmark against fresh servers, as a second
// opinion on the load generator's figures: RL.TOKEN on sluice and INCR on
// Redis, 50 connections, pipeline 16, a million requests over 100000 random
// keys.
func crossCheck(ctx context.Context, targets map[string]*target, log io.Writer) []crossRun {
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		return []crossRun{{label: "redis-benchmark", result: "not run: redis-benchmark is not on PATH"}}
	}
	jobs := []struct {
		label, kind string
		cmd         []string
	}{
		{"sluice RL.TOKEN", "sluice", []string{"RL.TOKEN", "k:__rand_int__", "10", "100", "1"}},
		{"Redis INCR", "redis", []string{"INCR", "k:__rand_int__"}},
	}
	var out []crossRun
	for _, j := range jobs {
		tg := targets[j.kind]
		if tg == nil {
			out = append(out, crossRun{label: j.label, result: "not run: no " + j.kind + " server"})
			continue
		}
		cr := crossRun{label: j.label}
		srv, err := tg.open(ctx, 0)
		if err != nil {
			cr.result = "not run: " + err.Error()
			out = append(out, cr)
			continue
		}
		host, port := splitAddr(srv.addr)
		args := append([]string{"-h", host, "-p", port, "-c", "50", "-P", "16", "-n", "1000000", "-r", "100000", "-q"}, j.cmd...)
		cr.command = "redis-benchmark " + strings.Join(args, " ")
		fmt.Fprintf(log, "bench: %s", cr.command)
		rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		b, err := exec.CommandContext(rctx, bin, args...).CombinedOutput()
		cancel()
		srv.stop()
		cr.result, cr.rps = parseRedisBenchmark(b)
		if err != nil {
			cr.result = fmt.Sprintf("failed: %v: %s", err, clip(string(b), 200))
		}
		fmt.Fprintln(log, " →", cr.result)
		out = append(out, cr)
		if ctx.Err() != nil {
			break
		}
	}
	return out
}

// parseRedisBenchmark finds the summary line of redis-benchmark -q:
// "<command>: 123456.79 requests per second, p50=0.183 msec".
func parseRedisBenchmark(b []byte) (string, float64) {
	b = bytes.ReplaceAll(b, []byte("\r"), []byte("\n"))
	var last string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "requests per second") {
			last = strings.TrimSpace(line)
		}
	}
	if last == "" {
		return "no summary line in the output: " + clip(strings.TrimSpace(string(b)), 200), 0
	}
	f := strings.Fields(last[strings.LastIndex(last, ":")+1:])
	if len(f) == 0 {
		return last, 0
	}
	rps, _ := strconv.ParseFloat(f[0], 64)
	return last, rps
}

func splitAddr(addr string) (host, port string) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return addr, "6379"
	}
	return addr[:i], addr[i+1:]
}

// machine describes where the numbers were measured.
type machine struct {
	cpus                  int
	model, kernel         string
	goVersion, benchGo    string
	redisVersion, sluice  string
	loadBefore, loadAfter string // /proc/loadavg: other work on the machine
}

// loadAverage returns the 1, 5 and 15 minute load averages.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func describeMachine(targets map[string]*target) machine {
	m := machine{cpus: runtime.NumCPU(), benchGo: runtime.Version(), model: "unknown", kernel: "unknown",
		goVersion: "unknown", redisVersion: "not installed", sluice: "unknown", loadAfter: loadAverage()}
	if b, err := exec.Command("lscpu").Output(); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "Model name:"); ok {
				m.model = strings.TrimSpace(rest)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.kernel = strings.TrimSpace(string(b))
	}
	if b, err := exec.Command("go", "version").Output(); err == nil {
		m.goVersion = strings.TrimSpace(string(b))
	}
	if tg := targets["redis"]; tg != nil && tg.bin != "" {
		if b, err := exec.Command(tg.bin, "--version").Output(); err == nil {
			m.redisVersion = strings.TrimSpace(string(b))
		}
	}
	if tg := targets["sluice"]; tg != nil && tg.bin != "" {
		if b, err := exec.Command(tg.bin, "--version").Output(); err == nil {
			m.sluice = strings.TrimSpace(string(b))
		}
	}
	return m
}
