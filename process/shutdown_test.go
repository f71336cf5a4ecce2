package process

import (
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/commands"
)

// Scripts of the stopper's state machine with a fake save and a fake timer.

// fakeDisk is a save that fails while broken, and counts its calls.
type fakeDisk struct {
	mu     sync.Mutex
	broken bool
	saves  int
	probes int
	block  chan struct{} // if set, a save waits for it
}

func (d *fakeDisk) save() error {
	d.mu.Lock()
	d.saves++
	broken, block := d.broken, d.block
	d.mu.Unlock()
	if block != nil {
		<-block
	}
	if broken {
		return errors.New("write sluice.snap.tmp-1: no space left on device")
	}
	return nil
}

func (d *fakeDisk) probe() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.probes++
	if d.broken {
		return errors.New("probe: no space left on device")
	}
	return nil
}

func (d *fakeDisk) set(broken bool) {
	d.mu.Lock()
	d.broken = broken
	d.mu.Unlock()
}

func (d *fakeDisk) counts() (saves, probes int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.saves, d.probes
}

// fakeTimer records the scheduled retries; fire runs the latest.
type fakeTimer struct {
	mu     sync.Mutex
	delays []time.Duration
	next   func()
}

func (ft *fakeTimer) afterFunc(d time.Duration, f func()) func() bool {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	ft.delays = append(ft.delays, d)
	ft.next = f
	return func() bool {
		ft.mu.Lock()
		defer ft.mu.Unlock()
		stopped := ft.next != nil
		ft.next = nil
		return stopped
	}
}

// fire runs the scheduled retry, in the caller's goroutine, and reports
// whether there was one.
func (ft *fakeTimer) fire() bool {
	ft.mu.Lock()
	f := ft.next
	ft.next = nil
	ft.mu.Unlock()
	if f != nil {
		f()
	}
	return f != nil
}

func newTestStopper(d *fakeDisk, saveByDefault bool) (*stopper, *fakeTimer) {
	ft := &fakeTimer{}
	s := newStopper(slog.New(slog.NewTextHandler(io.Discard, nil)), d.save, d.probe, saveByDefault)
	s.afterFunc = ft.afterFunc
	return s, ft
}

// waitStop returns how the stopper ended, failing after 5 s.
func waitStop(t *testing.T, s *stopper) stopping {
	t.Helper()
	select {
	case r := <-s.Done():
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("the stopper decided nothing in 5 s")
		return stopping{}
	}
}

// notStopped fails if the stopper has decided to exit.
func notStopped(t *testing.T, s *stopper, when string) {
	t.Helper()
	select {
	case r := <-s.Done():
		t.Fatalf("%s: exiting with %+v; want the server up", when, r)
	case <-time.After(20 * time.Millisecond):
	}
}

func TestSignalSavesAndExitsZeroHoldingTheStore(t *testing.T) {
	d := &fakeDisk{}
	s, _ := newTestStopper(d, true)
	s.Signal("terminated")
	if r := waitStop(t, s); r != (stopping{code: ExitOK, held: true}) {
		t.Fatalf("stopped %+v; want exit 0 with the store held", r)
	}
}

func TestSignalWithAFailingSaveRetriesWithBackoffUntilItWorks(t *testing.T) {
	d := &fakeDisk{broken: true}
	s, ft := newTestStopper(d, true)
	s.Signal("terminated")
	notStopped(t, s, "after the first failed save")
	for i := 0; i < 7; i++ {
		if !ft.fire() {
			t.Fatalf("retry %d was not scheduled", i+1)
		}
	}
	notStopped(t, s, "after 8 failed saves")
	want := []time.Duration{1, 2, 4, 8, 16, 30, 30, 30}
	for i := range want {
		want[i] *= time.Second
	}
	if len(ft.delays) != len(want) {
		t.Fatalf("retries scheduled after %v; want %v", ft.delays, want)
	}
	for i := range want {
		if ft.delays[i] != want[i] {
			t.Fatalf("retries scheduled after %v; want %v", ft.delays, want)
		}
	}
	if saves, probes := d.counts(); saves != 1 || probes != 7 {
		t.Fatalf("%d saves, %d probes; want the first save, then a probe per retry", saves, probes)
	}
	d.set(false)
	ft.fire()
	if r := waitStop(t, s); r != (stopping{code: ExitOK, held: true}) {
		t.Fatalf("stopped %+v; want exit 0 once the save works", r)
	}
}

func TestSecondSignalStopsAFailedShutdownUnsaved(t *testing.T) {
	d := &fakeDisk{broken: true}
	s, _ := newTestStopper(d, true)
	s.Signal("terminated")
	notStopped(t, s, "after the failed save")
	s.Signal("interrupt")
	if r := waitStop(t, s); r != (stopping{code: ExitUnsaved}) {
		t.Fatalf("stopped %+v; want exit %d", r, ExitUnsaved)
	}
}

func TestSecondSignalDuringTheFirstSaveDoesNotWaitForIt(t *testing.T) {
	d := &fakeDisk{block: make(chan struct{})}
	defer close(d.block)
	s, _ := newTestStopper(d, true)
	s.Signal("terminated")
	for saves, _ := d.counts(); saves == 0; saves, _ = d.counts() {
		time.Sleep(time.Millisecond)
	}
	s.Signal("terminated")
	if r := waitStop(t, s); r != (stopping{code: ExitUnsaved}) {
		t.Fatalf("stopped %+v; want exit %d at once", r, ExitUnsaved)
	}
}

func TestShutdownCommandRepliesTheFailureAndKeepsRetrying(t *testing.T) {
	d := &fakeDisk{broken: true}
	s, ft := newTestStopper(d, true)
	if err := s.Shutdown(commands.ShutdownOptions{}); err == nil {
		t.Fatal("SHUTDOWN with a failing save succeeded")
	}
	notStopped(t, s, "after a failed SHUTDOWN")
	if len(ft.delays) != 1 {
		t.Fatalf("retries scheduled: %v; want one", ft.delays)
	}
	// Another SHUTDOWN tries at once; its failure schedules nothing more.
	if err := s.Shutdown(commands.ShutdownOptions{Now: true}); err == nil {
		t.Fatal("second SHUTDOWN succeeded")
	}
	if saves, _ := d.counts(); saves != 2 || len(ft.delays) != 1 {
		t.Fatalf("%d saves, retries %v; want 2 saves and still one retry", saves, ft.delays)
	}
	d.set(false)
	ft.fire()
	if r := waitStop(t, s); r.code != ExitOK {
		t.Fatalf("stopped %+v; want exit 0", r)
	}
}

func TestAbortCancelsTheRetries(t *testing.T) {
	d := &fakeDisk{broken: true}
	s, ft := newTestStopper(d, true)
	if s.AbortShutdown() {
		t.Fatal("ABORT with nothing in progress reported true")
	}
	s.Signal("terminated")
	notStopped(t, s, "after the failed save")
	if !s.AbortShutdown() {
		t.Fatal("ABORT of a retrying shutdown reported false")
	}
	if ft.fire() {
		t.Fatal("a retry was still scheduled after ABORT")
	}
	if s.AbortShutdown() {
		t.Fatal("a second ABORT reported true")
	}
	notStopped(t, s, "after ABORT")
	// A signal after ABORT starts a new shutdown, with the backoff reset.
	d.set(false)
	s.Signal("terminated")
	if r := waitStop(t, s); r != (stopping{code: ExitOK, held: true}) {
		t.Fatalf("stopped %+v; want exit 0", r)
	}
}

func TestNoSaveAndForceExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name       string
		failFirst  bool // a SHUTDOWN whose save fails comes first
		broken     bool
		opts       commands.ShutdownOptions
		want       stopping
		wantSaves  int
		byDefault  bool
		noSaveFunc bool // a replicated node: nothing to save
	}{
		{name: "NOSAVE", opts: commands.ShutdownOptions{NoSave: true}, want: stopping{code: ExitOK}, byDefault: true},
		{name: "NOSAVE after a failed save", failFirst: true, broken: true, opts: commands.ShutdownOptions{NoSave: true},
			want: stopping{code: ExitUnsaved}, wantSaves: 1, byDefault: true},
		{name: "FORCE, the save works", opts: commands.ShutdownOptions{Force: true}, want: stopping{code: ExitOK, held: true},
			wantSaves: 1, byDefault: true},
		{name: "FORCE, the save fails", broken: true, opts: commands.ShutdownOptions{Force: true},
			want: stopping{code: ExitUnsaved}, wantSaves: 1, byDefault: true},
		{name: "saves off", opts: commands.ShutdownOptions{}, want: stopping{code: ExitOK}},
		{name: "SAVE with saves off", opts: commands.ShutdownOptions{Save: true}, want: stopping{code: ExitOK, held: true},
			wantSaves: 1},
		{name: "SAVE on a replicated node", opts: commands.ShutdownOptions{Save: true}, want: stopping{code: ExitOK},
			noSaveFunc: true, byDefault: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &fakeDisk{broken: tc.broken}
			s, _ := newTestStopper(d, tc.byDefault)
			if tc.noSaveFunc {
				s.save = nil
			}
			if tc.failFirst && s.Shutdown(commands.ShutdownOptions{}) == nil {
				t.Fatal("the first SHUTDOWN succeeded")
			}
			if err := s.Shutdown(tc.opts); err != nil {
				t.Fatalf("SHUTDOWN %+v = %v; want the process on its way out", tc.opts, err)
			}
			if r := waitStop(t, s); r != tc.want {
				t.Fatalf("stopped %+v; want %+v", r, tc.want)
			}
			if saves, _ := d.counts(); saves != tc.wantSaves {
				t.Fatalf("%d saves; want %d", saves, tc.wantSaves)
			}
		})
	}
}

func TestSignalWithSavesOffExitsAtOnce(t *testing.T) {
	d := &fakeDisk{broken: true}
	s, _ := newTestStopper(d, false)
	s.Signal("terminated")
	if r := waitStop(t, s); r != (stopping{code: ExitOK}) {
		t.Fatalf("stopped %+v; want exit 0 with nothing saved", r)
	}
	if saves, _ := d.counts(); saves != 0 {
		t.Fatalf("%d saves with saves off", saves)
	}
}
