package commands

import "strconv"

// The persistence commands: SAVE, BGSAVE, LASTSAVE and BGREWRITEAOF, with
// Redis's replies, and INFO persistence's aof_ fields. The sync of the
// append-only log at the end of every batch is in durable.go.

func init() {
	register(
		&command{name: "save", arity: 1, flags: flagAdmin, run: cmdSave, group: "server", since: "0.1.0",
			summary: "Writes the snapshot file now, blocking this client until it is written.", complexity: "O(N)"},
		&command{name: "bgsave", arity: -1, maxArgs: 2, flags: flagAdmin, run: cmdBgsave, group: "server", since: "0.1.0",
			summary: "Writes the snapshot file in the background.", complexity: "O(1); the save itself O(N)",
			arguments: []argDoc{{name: "schedule", typ: "pure-token", token: "SCHEDULE", optional: true}}},
		&command{name: "lastsave", arity: 1, flags: flagFast, run: cmdLastsave, group: "server", since: "0.1.0",
			summary: "Returns the unix time of the last successful save.", complexity: "O(1)"},
		&command{name: "bgrewriteaof", arity: 1, flags: flagAdmin, run: cmdBgrewriteaof, group: "server", since: "0.1.0",
			summary:    "Rewrites the append-only log in the background: a new base from the current state, then the changes made meanwhile.",
			complexity: "O(1); the rewrite itself O(N)"},
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

// cmdBgrewriteaof: BGREWRITEAOF, with Redis's replies.
func cmdBgrewriteaof(s *session, args [][]byte) {
	if s.h.cfg.Cluster != nil {
		s.writeError(errAOFInGroup)
		return
	}
	ao := s.h.cfg.AppendOnly
	if ao == nil {
		s.writeError(errAOFOff)
		return
	}
	if err := ao.BackgroundRewrite(); err != nil {
		s.writeError(err)
		return
	}
	s.writeSimple("Background append only file rewriting started")
}

// appendOnlyInfo returns INFO persistence's lines of the append-only log,
// with Redis's names: the sizes and the pending bytes only when it is on.
func (h *Handler) appendOnlyInfo() []Param {
	ao := h.cfg.AppendOnly
	if ao == nil {
		return []Param{
			{"aof_enabled", "0"},
			{"aof_rewrite_in_progress", "0"},
			{"aof_rewrites", "0"},
			{"aof_last_bgrewrite_status", "ok"},
			{"aof_last_write_status", "ok"},
		}
	}
	st := ao.AppendOnlyStats()
	return []Param{
		{"aof_enabled", "1"},
		{"aof_rewrite_in_progress", boolDigit(st.RewriteInProgress)},
		{"aof_rewrites", strconv.FormatInt(st.Rewrites, 10)},
		{"aof_last_bgrewrite_status", okErr(st.LastRewriteOK)},
		{"aof_last_write_status", okErr(st.LastWriteOK)},
		{"aof_current_size", strconv.FormatInt(st.CurrentSize, 10)},
		{"aof_base_size", strconv.FormatInt(st.BaseSize, 10)},
		{"aof_buffer_length", strconv.FormatInt(st.PendingBytes, 10)},
		{"aof_delayed_fsync", strconv.FormatInt(st.DelayedFsync, 10)},
	}
}

func boolDigit(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func okErr(ok bool) string {
	if ok {
		return "ok"
	}
	return "err"
}
