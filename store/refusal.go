package store

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/internal/replyerr"
)

// Writes refused while the disk refuses them, as Redis's MISCONF: while the
// last write or fsync of the append-only log failed, or the last snapshot
// save failed with stop-writes-on-bgsave-error on, every request that would
// change state is answered with an error that says why, and nothing is
// applied. Peeks, reads and INFO go on. The refusal ends by itself when the
// log's retry (aof.go) or a later save succeeds.

// aofError is a failed write or fsync of the append-only log as a reply:
// Redis's "MISCONF Errors writing to the AOF file: <strerror>", a text the
// one rule (replyerr.Line) sends as it is.
type aofError struct{ err error }

func (e *aofError) Error() string {
	return string(replyerr.MISCONF) + " Errors writing to the AOF file: " + strerror(e.err)
}
func (e *aofError) Unwrap() error { return e.err }

// strerror is err as C's strerror words it when it carries an errno ("No
// space left on device"), else its text.
func strerror(err error) string {
	var no syscall.Errno
	if !errors.As(err, &no) {
		return err.Error()
	}
	s := no.Error()
	if s == "" {
		return err.Error()
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// writeGate holds what refuses writes now. The log's failure comes first
// in the reply, as in Redis.
type writeGate struct {
	mu      sync.Mutex // guards aof and save, and orders the stores of now
	aof     error
	save    error
	refusal atomic.Pointer[error] // aof, else save; nil: writes are accepted
}

// set records the log's (log true) or the snapshot's refusal, nil for
// none.
func (g *writeGate) set(log bool, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if log {
		g.aof = err
	} else {
		g.save = err
	}
	switch {
	case g.aof != nil:
		g.refusal.Store(&g.aof)
	case g.save != nil:
		g.refusal.Store(&g.save)
	default:
		g.refusal.Store(nil)
	}
}

// WriteRefusal returns the error that refuses every change now (Redis's
// MISCONF wording), or nil while changes are accepted.
func (st *Store) WriteRefusal() error {
	if p := st.gate.refusal.Load(); p != nil {
		return *p
	}
	return nil
}

// SetStopWritesOnSaveError is stop-writes-on-bgsave-error: when on (the
// default), a failed background save while periodic saves run (Saver.Run)
// refuses every change until a save succeeds. Turning it off lifts a
// refusal in force.
func (st *Store) SetStopWritesOnSaveError(on bool) {
	st.ignoreSaveErrors.Store(!on)
	if !on {
		st.gate.set(false, nil)
	}
}

// saveRefuses records whether the snapshot refuses changes: true after a
// failed background save while periodic saves run, false after a save
// that worked or once they stop.
func (st *Store) saveRefuses(refuse bool) {
	if refuse && !st.ignoreSaveErrors.Load() {
		st.gate.set(false, errSnapshotMisconf)
	} else if !refuse {
		st.gate.set(false, nil)
	}
}

// decideRefused is Decide while refusal refuses changes: every request
// that would change state (n other than 0, a lease's release), and every
// RL.ALL group holding one, is answered with refusal and nothing of it is
// applied; peeks are decided as usual.
func (st *Store) decideRefused(now int64, reqs []algorithms.Request, out []algorithms.Outcome, refusal error, together bool) {
	for i := 0; i < len(reqs); {
		j := i + 1
		if g := reqs[i].Group; g != 0 {
			for j < len(reqs) && reqs[j].Group == g {
				j++
			}
		}
		writes := false
		for k := i; k < j; k++ {
			writes = writes || reqs[k].N != 0
		}
		if writes {
			clear(out[i:j])
			out[i].Err = refusal // a group's reply is its first outcome's error
		} else {
			st.decideAccepted(now, reqs[i:j], out[i:j], together)
		}
		i = j
	}
}
