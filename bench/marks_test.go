package main

import (
	"strings"
	"testing"
	"time"
)

// newPingLoad dials conns connections to f for sluice-ping at pipeline 1.
func newPingLoad(t *testing.T, f *fakeServer, conns int) (*load, []*worker) {
	t.Helper()
	sc := findScenario("sluice-ping")
	l := &load{sc: sc, w: testWorkload, depth: 1, keys: 100, touched: newKeySet(100)}
	l.tmpl = compileTemplate(sc.args(l.w, ""), len(sc.prefix)+keyDigits)
	ws, err := dialWorkers(l, &server{addr: f.addr()}, conns, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, w := range ws {
			w.close()
		}
	})
	return l, ws
}

// markTimes records when a run's marks came.
type markTimes struct{ start, end time.Time }

func (m *markTimes) marks(atEnd func()) measureMarks {
	return measureMarks{
		start: func() { m.start = time.Now() },
		end: func() {
			m.end = time.Now()
			if atEnd != nil {
				atEnd()
			}
		},
	}
}

// window checks that the marks span the measured wall time: what is read
// at them (the processes' CPU) covers the same part as the requests.
func (m *markTimes) window(t *testing.T, elapsed time.Duration) {
	t.Helper()
	if m.start.IsZero() || m.end.IsZero() {
		t.Fatalf("marks called: start %v, end %v; want both", !m.start.IsZero(), !m.end.IsZero())
	}
	if span := m.end.Sub(m.start); span < elapsed || span > elapsed+50*time.Millisecond {
		t.Fatalf("the marks span %v, the measured part %v; want the same part", span, elapsed)
	}
}

// openConns counts the workers' connections not yet closed.
func openConns(ws []*worker) int {
	n := 0
	for _, w := range ws {
		if w.conn.SetReadDeadline(time.Time{}) == nil {
			n++
		}
	}
	return n
}

// The end mark comes where the measured part ends, after its last counted
// reply and before the workers' connections close and their tallies merge:
// a thousand connections' histograms take the generator a noticeable time
// to merge, and the CPU read at the mark leaves that out.
func TestMeasureMarksSpanTheMeasuredPart(t *testing.T) {
	f := startFake(t, func(int64, []string) (string, bool) { return "+PONG\r\n", false })
	never := make(chan struct{})

	t.Run("closed loop", func(t *testing.T) {
		l, ws := newPingLoad(t, f, 20)
		var m markTimes
		counted, open := int64(-1), 0
		// Every worker has stopped when the end mark comes, so their
		// tallies are read without a race.
		total, elapsed := drive(l, ws, 20*time.Millisecond, 200*time.Millisecond, never, m.marks(func() {
			counted, open = 0, openConns(ws)
			for _, w := range ws {
				counted += w.t.ok
			}
		}))
		m.window(t, elapsed)
		if total.ok == 0 || counted != total.ok {
			t.Fatalf("%d replies counted at the end mark, %d in the run; want the same, not 0", counted, total.ok)
		}
		if open != len(ws) {
			t.Fatalf("%d of %d connections open at the end mark; want all (the teardown comes after it)", open, len(ws))
		}
	})

	t.Run("one loop", func(t *testing.T) {
		if !epollDriven {
			t.Skip("no epoll here")
		}
		l, ws := newPingLoad(t, f, 20)
		var m markTimes
		counted, open := int64(-1), 0
		total, elapsed, err := driveEpoll(l, ws, 20*time.Millisecond, 200*time.Millisecond, never, m.marks(func() {
			counted, open = 0, openConns(ws)
			for _, w := range ws {
				counted += w.t.ok
			}
		}))
		if err != nil {
			t.Fatal(err)
		}
		m.window(t, elapsed)
		if total.ok == 0 || counted != total.ok || total.errors != 0 {
			t.Fatalf("%d replies counted at the end mark, %d in the run, %d errors; want the same, not 0, and none",
				counted, total.ok, total.errors)
		}
		if open != len(ws) {
			t.Fatalf("%d of %d connections open at the end mark; want all (the teardown comes after it)", open, len(ws))
		}
	})

	t.Run("paced", func(t *testing.T) {
		l, ws := newPingLoad(t, f, 4)
		var m markTimes
		open := 0
		total, elapsed := drivePaced(l, ws, 400, 20*time.Millisecond, 300*time.Millisecond, never,
			m.marks(func() { open = openConns(ws) }))
		m.window(t, elapsed)
		if total.ok == 0 {
			t.Fatal("no replies counted")
		}
		if open != len(ws) {
			t.Fatalf("%d of %d connections open at the end mark; want all (the teardown comes after it)", open, len(ws))
		}
	})
}

// busyRun is a closed-loop run of name in group at depth that answered
// 100,000 requests in a second with the server and the generator keeping
// srv and gen cores busy.
func busyRun(group, name string, depth int, srv, gen float64) *result {
	conns := 50
	if group == groupSidecar {
		conns = sidecarManyConns
	}
	r := &result{spec: runSpec{group: group, sc: findScenario(name), conns: conns, depth: depth},
		elapsed: time.Second, cpuKnown: true,
		srvCPU: time.Duration(srv * float64(time.Second)), genCPU: time.Duration(gen * float64(time.Second)),
		t: &tally{hist: newHistogram(), ok: 100_000, problems: map[string]*problem{}}}
	r.t.hist.RecordValue(1e6)
	return r
}

// A closed-loop comparison whose generator had its pinned CPU nearly all
// the time, more than either server, says so beside its ratio: its
// throughput is what the generator could drive. A generator with room to
// spare adds nothing.
func TestSidecarRatioSaysWhenTheGeneratorWasTheBound(t *testing.T) {
	saved := cpus
	t.Cleanup(func() { cpus = saved })
	cpus = cpuPlan{pinned: true, gen: []int{0}, servers: []int{1}}
	mk := func(name string, srv, gen float64) *result {
		return busyRun(groupSidecar, name, 1, srv, gen)
	}
	many := func(rep *report) sidecarRatio {
		for _, r := range rep.sidecarRatios() {
			if strings.Contains(r.what, "1000 connections") {
				return r
			}
		}
		t.Fatal("no 1000-connection ratio")
		return sidecarRatio{}
	}

	bound := many(&report{results: []*result{mk("sluice-token", 0.85, 0.99), mk("redis-incr", 0.81, 0.97)}})
	if bound.value != 1 || !strings.Contains(bound.note, "generator-bound") || !strings.Contains(bound.note, "kept 0.99 of its 1 CPU busy") ||
		!strings.Contains(bound.note, "servers at most 0.85") {
		t.Fatalf("ratio %v, note %q; want 1 and the generator named as the bound with its 0.99 and the servers' 0.85", bound.value, bound.note)
	}
	if v := bound.verdict(bold); !strings.HasPrefix(v, "≥ 1 **met** (generator-bound") {
		t.Fatalf("verdict %q; want the target, the verdict in bold, then the note", v)
	}
	// One run held back by the generator: the ratio bounds the servers'.
	lower := many(&report{results: []*result{mk("sluice-token", 0.90, 0.99), mk("redis-incr", 0.98, 0.92)}})
	if want := "(a lower bound: the generator kept 0.99 of its 1 CPU busy in the sluice RL.TOKEN run, its server 0.90; Redis INCR's server 0.98)"; lower.note != want {
		t.Fatalf("note %q; want %q", lower.note, want)
	}
	upper := many(&report{results: []*result{mk("sluice-token", 0.98, 0.92), mk("redis-incr", 0.90, 0.99)}})
	if !strings.HasPrefix(upper.note, "(an upper bound: the generator kept 0.99 of its 1 CPU busy in the Redis INCR run") {
		t.Fatalf("note %q; want an upper bound named by Redis INCR's run", upper.note)
	}
	for _, c := range []struct {
		why       string
		gen, srvs float64
	}{{"a generator with room", 0.70, 0.99}, {"servers busier than the generator", 0.97, 0.99}} {
		rep := &report{results: []*result{mk("sluice-token", c.srvs, c.gen), mk("redis-incr", c.srvs, c.gen)}}
		if r := many(rep); r.note != "" {
			t.Fatalf("%s: note %q; want none", c.why, r.note)
		}
	}
}

// The main report lists the closed-loop runs whose generator set the pace,
// and only those: the sidecar's runs have their own note.
func TestReportNamesTheGeneratorBoundRuns(t *testing.T) {
	saved := cpus
	t.Cleanup(func() { cpus = saved })
	cpus = cpuPlan{pinned: true, gen: []int{0}, servers: []int{1}}
	mk := busyRun
	rep := &report{results: []*result{
		mk(groupOwn, "sluice-token", 1, 0.87, 0.96),   // bound by the generator
		mk(groupOwn, "redis-incr", 1, 0.97, 0.96),     // the server busier
		mk(groupOwn, "sluice-token", 16, 0.99, 0.80),  // the generator with room
		mk(groupSidecar, "redis-incr", 1, 0.80, 1.00), // reported in its own section
	}}
	runs := rep.generatorBoundRuns()
	if len(runs) != 1 || runs[0] != "Runs: sluice RL.TOKEN P1 (0.96 / 0.87)" {
		t.Fatalf("generator-bound runs %q; want sluice RL.TOKEN P1 alone, under its group's title", runs)
	}
	if n := rep.generatorBoundNote("- "); !strings.HasPrefix(n, "Generator-bound runs: the load generator kept at least 0.95 of its 1 CPU busy") ||
		!strings.HasSuffix(n, ":\n- Runs: sluice RL.TOKEN P1 (0.96 / 0.87)\n") {
		t.Fatalf("note %q", n)
	}
	cpus.pinned = false
	if runs := rep.generatorBoundRuns(); len(runs) != 0 {
		t.Fatalf("unpinned: %q; want none (the generator's share of the CPUs is unknown)", runs)
	}
}

// A server that never answers holds the one-loop driver only until the
// hard stop: the run ends, marked aborted, with nothing counted.
func TestEpollDriverEndsAtTheHardStop(t *testing.T) {
	if !epollDriven {
		t.Skip("no epoll here")
	}
	release := make(chan struct{})
	f := startFake(t, func(int64, []string) (string, bool) {
		<-release
		return "", true
	})
	t.Cleanup(func() { close(release) }) // before the fake's own cleanup waits for its goroutines
	l, ws := newPingLoad(t, f, 4)
	stop := make(chan struct{})
	time.AfterFunc(300*time.Millisecond, func() { close(stop) })
	began := time.Now()
	total, _, err := driveEpoll(l, ws, 20*time.Millisecond, time.Hour, stop, measureMarks{start: func() {}, end: func() {}})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > 5*time.Second || !l.aborted.Load() || total.ok != 0 {
		t.Fatalf("returned after %v, aborted %v, %d counted; want soon after the stop, aborted, none", took, l.aborted.Load(), total.ok)
	}
}
