package store

import (
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/algorithms"
)

func TestRefusalRefusesChangesAndAnswersPeeks(t *testing.T) {
	st := New(4)
	tok := req(algorithms.Token, "k", 10, time.Hour, 1)
	decide(st, t0, tok)
	st.gate.set(true, &aofError{err: syscall.ENOSPC})
	want := "MISCONF Errors writing to the AOF file: No space left on device"
	if err := st.WriteRefusal(); err == nil || err.Error() != want {
		t.Fatalf("WriteRefusal() = %v; want %q", err, want)
	}
	peek := tok
	peek.N = 0
	a, b := req(algorithms.Token, "a", 10, time.Hour, 0), req(algorithms.Token, "b", 10, time.Hour, 1)
	a.Group, b.Group = 1, 1
	out := decideAll(st, t0, []algorithms.Request{tok, peek, a, b})
	if out[0].Err == nil || out[0].Err.Error() != want {
		t.Fatalf("Take(t0, n=1) while refused = %+v; want %q", out[0], want)
	}
	if out[1].Err != nil || out[1].Result.Remaining != 9 {
		t.Fatalf("Take(t0, n=0) while refused = %+v; want remaining 9", out[1])
	}
	if out[2].Err == nil || out[3] != (algorithms.Outcome{}) {
		t.Fatalf("RL.ALL of a peek and a take while refused = %+v; want the group's error, nothing else", out[2:])
	}
	if !errors.Is(out[0].Err, syscall.ENOSPC) {
		t.Fatalf("the refusal %v does not wrap ENOSPC", out[0].Err)
	}
	// The log's refusal is reported before the snapshot's; each lifts alone.
	st.saveRefuses(true)
	st.gate.set(true, nil)
	if err := st.WriteRefusal(); !errors.Is(err, errSnapshotMisconf) {
		t.Fatalf("WriteRefusal() with only the save failed = %v; want the snapshot's MISCONF", err)
	}
	st.SetStopWritesOnSaveError(false)
	if o := decide(st, t0, tok); o.Err != nil || o.Result.Remaining != 8 {
		t.Fatalf("Take(t0, n=1) once stop-writes-on-bgsave-error is off = %+v; want admitted, remaining 8", o)
	}
	st.saveRefuses(true)
	if err := st.WriteRefusal(); err != nil {
		t.Fatalf("a failed save with stop-writes-on-bgsave-error off refuses: %v", err)
	}
}
