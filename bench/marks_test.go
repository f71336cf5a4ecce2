package main

import (
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

