package commands

// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT], with Redis 7's modifiers,
// replies and errors.

func init() {
	register(&command{name: "shutdown", arity: -1, flags: flagAdmin, run: cmdShutdown, group: "server", since: "0.1.0",
		summary:    "Saves the snapshot (unless NOSAVE) and stops the server; a failed save keeps it up.",
		complexity: "O(N) when saving, where N is the number of keys, otherwise O(1)",
		arguments: []argDoc{
			{name: "nosave", typ: "pure-token", token: "NOSAVE", optional: true},
			{name: "save", typ: "pure-token", token: "SAVE", optional: true},
			{name: "now", typ: "pure-token", token: "NOW", optional: true},
			{name: "force", typ: "pure-token", token: "FORCE", optional: true},
			{name: "abort", typ: "pure-token", token: "ABORT", optional: true},
		}})
}

// Shutdowner stops the process: SIGTERM's sequence, asked for by a client.
// Both methods are called from client goroutines and event loops, at the
// same time as signals arrive.
type Shutdowner interface {
	// Shutdown saves as opts say and, if that works, has the process exit:
	// it returns nil and the process is on its way out. An error means the
	// save failed and the server stays up; the shutdown is then retried
	// until it works or is aborted (see AbortShutdown).
	Shutdown(opts ShutdownOptions) error
	// AbortShutdown cancels a shutdown in progress (one retrying a failed
	// save); it reports false if there is none.
	AbortShutdown() bool
}

// ShutdownOptions are SHUTDOWN's modifiers. At most one of NoSave and Save
// is set.
type ShutdownOptions struct {
	NoSave bool // do not save, even with saves configured
	Save   bool // save, even with saves turned off (--save 0)
	Now    bool // skip waiting for lagging replicas: sluice has none to wait for
	Force  bool // exit even if the save fails
}

// cmdShutdown: SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]. On success the
// connection closes with no reply, as Redis's does (the process exits).
func cmdShutdown(s *session, args [][]byte) {
	opts, abort, err := parseShutdown(args[1:])
	if err != nil {
		s.writeError(err)
		return
	}
	sd := s.h.cfg.Shutdowner
	if sd == nil {
		s.writeError(errNoShutdowner)
		return
	}

	if abort {
		if !sd.AbortShutdown() {
			s.writeError(errNoShutdown)
			return
		}
		s.writeOK()
		return
	}
	s.h.log.Warn("user requested shutdown", "client", s.conn.ID(), "addr", s.conn.RemoteAddr(),
		"nosave", opts.NoSave, "save", opts.Save, "force", opts.Force)
	if err := sd.Shutdown(opts); err != nil {
		s.writeError(errCantShutdown)
		return
	}
	s.conn.CloseAfterReply() // no reply: the process is exiting
}

// parseShutdown reads SHUTDOWN's modifiers as Redis 7 does: any of them in
// any order and letter case, repeats allowed; ABORT alone; not both SAVE
// and NOSAVE.
func parseShutdown(words [][]byte) (opts ShutdownOptions, abort bool, err error) {
	for _, w := range words {
		switch {
		case equalFold(w, "nosave"):
			opts.NoSave = true
		case equalFold(w, "save"):
			opts.Save = true
		case equalFold(w, "now"):
			opts.Now = true
		case equalFold(w, "force"):
			opts.Force = true
		case equalFold(w, "abort"):
			abort = true
		default:
			return ShutdownOptions{}, false, errSyntax
		}
	}
	if abort && opts != (ShutdownOptions{}) || opts.NoSave && opts.Save {
		return ShutdownOptions{}, false, errSyntax
	}
	return opts, abort, nil
}
