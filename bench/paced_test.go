package main

import (
	"context"
	"testing"
	"time"
)

// runPaced runs sluice-ping open-loop against the fake server.
func runPaced(t *testing.T, f *fakeServer, offered float64, d time.Duration) *result {
	t.Helper()
	spec := runSpec{group: groupOwn, sc: findScenario("sluice-ping"), conns: 1, depth: 1, keys: 100, duration: d,
		offered: offered, w: testWorkload}
	res, err := execute(context.Background(), spec, map[string]*target{"sluice": {kind: "sluice", addr: f.addr()}})
	if err != nil {
		t.Fatalf("execute: %v", err)
	}
	return res
}

// atLeast counts the recorded latencies of res that are at least d.
func atLeast(res *result, d time.Duration) int64 {
	var n int64
	for _, b := range res.t.hist.Distribution() {
		if b.From >= int64(d) {
			n += b.Count
		}
	}
	return n
}

// A server that stalls for 300 ms once delays every request scheduled
// during the stall, and a paced run counts each of those from the instant
// it was due: at 500 requests a second about 150 fall in the stall and about
// half of them wait 150 ms or more. A closed loop would have sent one request
// and recorded one long latency.
func TestPacedLatencyCountsFromTheSchedule(t *testing.T) {
	const stall = 300 * time.Millisecond
	f := startFake(t, func(n int64, _ []string) (string, bool) {
		if n == 100 {
			time.Sleep(stall)
		}
		return "+PONG\r\n", false
	})
	res := runPaced(t, f, 500, time.Second)
	if res.t.errors != 0 {
		t.Fatalf("errors %d (%v); want none", res.t.errors, res.t.sortedProblems())
	}
	// 500 are due in the measured second; the replies to the last few may
	// come after it, and a loaded machine may run late, but the sender does
	// not wait for replies.
	if res.t.ok < 300 || res.t.ok > 600 {
		t.Fatalf("ok = %d; want about 500 (500/s for 1 s)", res.t.ok)
	}
	if n := atLeast(res, stall/2); n < 40 {
		t.Fatalf("%d latencies ≥ %v; want the requests due during the %v stall counted from their schedule (about 75)",
			n, stall/2, stall)
	}
	if max := time.Duration(res.t.hist.Max()); max < stall*9/10 {
		t.Fatalf("max latency %v; want ≥ %v (the request that met the stall)", max, stall*9/10)
	}
}

// The paced plan's runs: three servers at each offered rate over 50
// connections at pipeline 1, long enough for /proc's CPU ticks, and the
// 1000-connection closed loop, all in the sidecar group.
func TestSidecarPlan(t *testing.T) {
	b := base{conns: 7, keys: 100, dur: time.Second, algo: "all", w: testWorkload}
	runs := sidecarRuns(b)
	if len(runs) != len(sidecarRates)*len(sidecarPaced)+len(sidecarManyNames) {
		t.Fatalf("%d runs; want %d", len(runs), len(sidecarRates)*len(sidecarPaced)+len(sidecarManyNames))
	}
	for i, r := range runs {
		paced := i < len(sidecarRates)*len(sidecarPaced)
		switch {
		case r.group != groupSidecar || r.depth != 1:
			t.Fatalf("run %d: group %q P%d; want sidecar P1", i, r.group, r.depth)
		case paced && (r.conns != sidecarConns || r.offered <= 0 || r.duration < sidecarMinDur):
			t.Fatalf("run %d (%s): conns %d offered %v for %v; want 50 connections paced for ≥ %v",
				i, r.sc.name, r.conns, r.offered, r.duration, sidecarMinDur)
		case !paced && (r.conns != sidecarManyConns || r.offered != 0):
			t.Fatalf("run %d (%s): conns %d offered %v; want 1000 closed-loop connections", i, r.sc.name, r.conns, r.offered)
		}
	}
}
