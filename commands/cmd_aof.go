package commands

import "strconv"

// The append-only log: BGREWRITEAOF, INFO persistence's aof_ fields, and
// the sync at the end of every batch.

func init() {
	register(
		&command{name: "bgrewriteaof", arity: 1, flags: flagAdmin, run: cmdBgrewriteaof, group: "server", since: "0.1.0",
			summary:    "Rewrites the append-only log in the background: a new base from the current state, then the changes made meanwhile.",
			complexity: "O(1); the rewrite itself O(N)"},
	)
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

// syncLog makes the batch's changes as durable as appendfsync says before
// its replies are written (appendfsync always: on disk). It runs once per
// batch, after the deferred work; with nothing appended it returns at once.
func (s *session) syncLog() {
	if ao := s.h.cfg.AppendOnly; ao != nil {
		ao.Sync()
	}
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
