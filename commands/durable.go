package commands

import "github.com/sluice-rl/sluice/internal/replyerr"

// Replies that acknowledge a change wait for the change to be durable, and
// changes are refused while they cannot be (Redis's MISCONF).
//
// With the append-only log on, a reply that acknowledges a change (a
// decision that took units, a lease released, DEL, SET, RL.OVERRIDE SET,
// EXEC, a script call …) is noted as an ack: its place in the output. The
// batch's syncLog writes the log (and with appendfsync always forces it to
// disk) before any reply is sent; if that fails, every ack of the batch is
// replaced by the log's MISCONF error, so that no client is told of a
// change a crash could lose. Replies that acknowledge nothing (peeks,
// denials, reads, errors) stay. The changes so taken back stay applied in
// memory and their frames stay pending, written by the log's retry: until
// then a crash loses them, and since none was acknowledged, no unit is
// handed out twice.
//
// While the keyspace refuses changes (WriteRefuser: the log's last write
// failed, or the last background save with stop-writes-on-bgsave-error),
// every command that may change state is refused before it runs: the
// decisions that would take units by the keyspace itself (their peeks
// answer), the other write commands here (exec, refuseWrite), as Redis
// refuses write commands.

// WriteRefuser is a keyspace that refuses changes while they cannot be
// made durable (store.Store).
type WriteRefuser interface {
	// WriteRefusal returns the error that refuses every change now, in
	// Redis's MISCONF words, or nil while changes are accepted.
	WriteRefusal() error
}

// ackSpan is the place in the output of a reply that acknowledges a change.
type ackSpan struct{ start, end int }

// ack notes the reply written from at to the end of the output as one that
// acknowledges a change.
func (s *session) ack(at int) {
	s.acks = append(s.acks, ackSpan{at, len(s.conn.Out)})
}

// writeRefusal returns the keyspace's refusal of changes, or nil.
func (h *Handler) writeRefusal() error {
	if r, ok := h.ks.(WriteRefuser); ok {
		return r.WriteRefusal()
	}
	return nil
}

// syncLog makes the batch's changes as durable as appendfsync says before
// its replies are written (appendfsync always: on disk), and takes back
// its acks if that fails. It runs once per batch, after the deferred work.
// A batch that acknowledged nothing does not wait on the log, and does not
// try it again while it is failing (the log retries by itself).
func (s *session) syncLog() {
	ao := s.h.cfg.AppendOnly
	if ao == nil {
		return
	}
	if len(s.acks) == 0 {
		if s.h.writeRefusal() == nil {
			ao.Sync()
		}
		return
	}
	if err := ao.Sync(); err != nil {
		s.takeBack(err)
	}
	s.acks = s.acks[:0]
}

// takeBack replaces every reply the batch noted as an ack by err.
func (s *session) takeBack(err error) {
	out := s.conn.Out
	buf := make([]byte, 0, len(out))
	prev := 0
	for _, a := range s.acks {
		buf = append(buf, out[prev:a.start]...)
		at := len(buf)
		buf = replyerr.Append(buf, err)
		s.errors++
		s.h.errs.count(buf[at:])
		prev = a.end
	}
	s.conn.Out = append(buf, out[prev:]...)
}
