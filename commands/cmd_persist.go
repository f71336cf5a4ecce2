package commands

// The persistence commands: SAVE, BGSAVE, LASTSAVE, with Redis's replies.

func init() {
	register(
		&command{name: "save", arity: 1, flags: flagAdmin, run: cmdSave, group: "server", since: "0.1.0",
			summary: "Writes the snapshot file now, blocking this client until it is written.", complexity: "O(N)"},
		&command{name: "bgsave", arity: -1, maxArgs: 2, flags: flagAdmin, run: cmdBgsave, group: "server", since: "0.1.0",
			summary: "Writes the snapshot file in the background.", complexity: "O(1); the save itself O(N)",
			arguments: []argDoc{{name: "schedule", typ: "pure-token", token: "SCHEDULE", optional: true}}},
		&command{name: "lastsave", arity: 1, flags: flagFast, run: cmdLastsave, group: "server", since: "0.1.0",
			summary: "Returns the unix time of the last successful save.", complexity: "O(1)"},
	)
}

func cmdSave(s *session, args [][]byte) {
	p := s.h.cfg.Persister
	if p == nil {
		s.writeError(errNoPersistence)
		return
	}
	if err := p.Save(); err != nil {
		s.writeError(err)
		return
	}
	s.writeOK()
}

// cmdBgsave: BGSAVE [SCHEDULE]. SCHEDULE is accepted and means the same:
// there is no rewrite to wait for; a save already running is an error.
func cmdBgsave(s *session, args [][]byte) {
	if len(args) == 2 && !equalFold(args[1], "schedule") {
		s.writeError(errSyntax)
		return
	}
	p := s.h.cfg.Persister
	if p == nil {
		s.writeError(errNoPersistence)
		return
	}
	if err := p.BackgroundSave(); err != nil {
		s.writeError(err)
		return
	}
	s.writeSimple("Background saving started")
}

func cmdLastsave(s *session, args [][]byte) {
	p := s.h.cfg.Persister
	if p == nil {
		s.writeInt(s.h.start.Unix())
		return
	}
	s.writeInt(p.LastSave())
}
