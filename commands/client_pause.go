package commands

import (
	"sync/atomic"
	"time"

	"github.com/sluice-rl/sluice/internal/parse"
)

// CLIENT PAUSE and CLIENT UNPAUSE, for planned failovers: while a pause
// lasts, the commands it covers are not run; the transport keeps them
// unread and tries them again (server.Conn.Park), so the clients wait and
// nothing is lost. WRITE covers the commands that change state (every
// decision, peeks included, and EXEC); ALL covers every command but CLIENT
// itself, so that CLIENT UNPAUSE and CLIENT LIST still work. The pause
// ends at its timeout or at CLIENT UNPAUSE. The clock is the wall clock,
// not the debug clock.

// pauseState is the pause in force: its end (unix ns; 0: none) and
// whether it covers every command. Any goroutine.
type pauseState struct {
	until atomic.Int64
	all   atomic.Bool
}

// parks reports whether cmd must wait for the pause to end.
func (p *pauseState) parks(cmd *command) bool {
	until := p.until.Load()
	if until == 0 || cmd == nil || cmd.name == "client" {
		return false
	}
	if time.Now().UnixNano() >= until {
		p.until.CompareAndSwap(until, 0)
		return false
	}
	return p.all.Load() || cmd.flags&(flagWrite|flagDecision) != 0 || cmd.name == "exec"
}

// clientPause: CLIENT PAUSE timeout [WRITE|ALL]
func (s *session) clientPause(args [][]byte) {
	ms, ok := parse.Int(args[0])
	switch {
	case !ok:
		s.writeError(errPauseTimeout)
		return
	case ms < 0:
		s.writeError(errPauseNegative)
		return
	}
	all := true
	if len(args) == 2 {
		switch {
		case equalFold(args[1], "write"):
			all = false
		case equalFold(args[1], "all"):
		default:
			s.writeError(errSyntax)
			return
		}
	}
	until := time.Now().Add(time.Duration(min(ms, int64(1)<<40)) * time.Millisecond).UnixNano()
	p := &s.h.pause
	// a pause in force that ends later, or covers more, stays as it is, as in Redis
	if cur := p.until.Load(); cur != 0 && cur > until {
		until = cur
	}
	p.all.Store(all || p.until.Load() != 0 && p.all.Load())
	p.until.Store(until)
	s.writeOK()
}

// clientUnpause: CLIENT UNPAUSE
func (s *session) clientUnpause() {
	s.h.pause.until.Store(0)
	s.h.pause.all.Store(false)
	s.writeOK()
}
