package commands

import "github.com/sluice-rl/sluice/compat"

// Deferred scripts. EVAL and EVALSHA of a known script (and their _RO
// forms) are queued like decisions (deferred.go), in a class of their own,
// when the keyspace carries out batches of them (BatchScripter): a
// pipeline of script calls is then one call to the keyspace, under one
// taking of its keys' shard locks, one frame of the append-only log, one
// entry of a replicated group's log. A call whose arguments are wrong
// (numkeys, an unknown SHA1) answers its error at once, after the calls
// queued before it.

// BatchScripter is a Scripter that carries out a batch of ops at once:
// ExecBatch carries out ops in order at now, as Exec would one after
// another, leaving each reply in its Reply, with c as scratch (see
// store.Store.ExecBatch).
type BatchScripter interface {
	ExecBatch(now int64, ops []compat.TxOp, c *compat.Call)
}

// scriptQueue is the queue's part for scripts, made at a connection's
// first deferred script call: the calls, in order, and their keys' and
// arguments' slice headers, copied into args (the transport reuses the
// command's own [][]byte for the next command; the bytes they point to, in
// the input buffer, stay until the batch ends).
type scriptQueue struct {
	ops  []compat.TxOp
	args [][]byte
}

// queueScript defers op on keys with argv if the keyspace takes batches,
// and reports whether it did.
func (s *session) queueScript(op compat.Op, keys, argv [][]byte) bool {
	if _, ok := s.h.ks.(BatchScripter); !ok {
		return false
	}
	q := &s.queue
	if q.scr == nil {
		q.scr = new(scriptQueue)
	}
	q.class = classScript
	q.kinds = append(q.kinds, kindScript)
	sq := q.scr
	a := len(sq.args)
	sq.args = append(append(sq.args, keys...), argv...)
	k := sq.args[a : a+len(keys) : a+len(keys)]
	v := sq.args[a+len(keys) : len(sq.args) : len(sq.args)]
	sq.ops = append(sq.ops, compat.TxOp{Op: op, Keys: k, Argv: v})
	return true
}

// runScripts carries out the queued script calls in one ExecBatch and
// writes their replies.
func (s *session) runScripts() {
	ops := s.queue.scr.ops
	if s.call == nil {
		s.call = new(compat.Call)
	}
	s.h.ks.(BatchScripter).ExecBatch(s.conn.Now(), ops, s.call)
	clear(s.call.Keys)
	resp3 := s.resp3.Load()
	for i := range ops {
		r := &ops[i].Reply
		if r.Type == compat.Error {
			s.errors++
		}
		s.conn.Out = r.AppendRESP(s.conn.Out, resp3)
	}
}

// reset empties the script queue, dropping its references into the input
// buffer.
func (sq *scriptQueue) reset() {
	clear(sq.ops)
	clear(sq.args)
	sq.ops, sq.args = sq.ops[:0], sq.args[:0]
}
