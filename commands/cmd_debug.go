package commands

import (
	"math"

	"github.com/sluice-rl/sluice/internal/parse"
)

// DEBUG CLOCK: the test clock, only with --enable-debug-command yes (or
// local, for loopback clients).

func init() {
	register(&command{name: "debug", arity: -2, flags: flagAdmin, run: cmdDebug, group: "server", since: "0.1.0",
		summary:    "DEBUG CLOCK SET <unix_ms> | ADVANCE <ms> | REAL: drives the server clock (needs --enable-debug-command).",
		complexity: "O(1)", subs: []string{"clock", "help"}})
}

// The debug clock's range: from the Unix epoch to the year 2262 in
// nanoseconds, less a margin for the longest limit's arithmetic.
const maxDebugMillis = math.MaxInt64 / 1_000_000 / 2

func cmdDebug(s *session, args [][]byte) {
	switch s.h.cfg.Debug {
	case "yes":
	case "local":
		if !s.conn.Loopback() {
			s.writeError(errDebugDisabled)
			return
		}
	default:
		s.writeError(errDebugDisabled)
		return
	}
	clock := s.h.clock
	switch {
	case equalFold(args[1], "clock") && len(args) == 4 && equalFold(args[2], "set"):
		ms, ok := parse.Int(args[3])
		if !ok || ms < 0 || ms > maxDebugMillis {
			s.writeError(errNotInteger)
			return
		}
		clock.Set(ms * 1e6)
		s.writeOK()
	case equalFold(args[1], "clock") && len(args) == 4 && equalFold(args[2], "advance"):
		ms, ok := parse.Int(args[3])
		if !ok || ms < 0 || ms > maxDebugMillis || clock.Now()/1e6+ms > maxDebugMillis {
			s.writeError(errNotInteger)
			return
		}
		clock.Advance(ms * 1e6)
		s.writeOK()
	case equalFold(args[1], "clock") && len(args) == 3 && equalFold(args[2], "real"):
		clock.Real()
		s.writeOK()
	case equalFold(args[1], "help") && len(args) == 2:
		help := []string{
			"DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"CLOCK SET <unix_ms>", "    Freeze the server clock at this instant.",
			"CLOCK ADVANCE <ms>", "    Move the server clock forward.",
			"CLOCK REAL", "    Return to the real clock.",
		}
		s.writeArray(len(help))
		for _, l := range help {
			s.writeSimple(l)
		}
	default:
		s.writeError(errUnknownSubcommand(args[1], "DEBUG"))
	}
	s.conn.SetNow(clock.Now()) // the rest of the batch runs at the clock just set
}
