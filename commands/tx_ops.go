package commands

import (
	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/compat"
)

// The commands on keys that a transaction holds besides the decisions: the
// string commands, the known scripts (EVAL, EVALSHA and their _RO forms)
// and DEL, EXISTS, TYPE, TTL and PTTL. EXEC hands each to the keyspace as a
// compat.TxOp in the same Transactor.Transact call as the decisions, in
// the order they were queued: one instant, one set of locks, one log
// entry. A command whose arguments fail before it touches a key (EVAL's
// numkeys, an unknown SHA1) answers its error in EXEC's array, as in Redis,
// and the others run.

// txOpBuilders make a queued command's Op, keys and arguments after the
// keys from its arguments, at EXEC.
var txOpBuilders = map[string]func(s *session, args [][]byte) (compat.Op, [][]byte, [][]byte, error){
	"get":        noErr(getOp),
	"set":        noErr(setOp),
	"incr":       noErr(incrOp),
	"incrby":     noErr(incrOp),
	"decr":       noErr(incrOp),
	"decrby":     noErr(incrOp),
	"expire":     noErr(expireOp),
	"pexpire":    noErr(expireOp),
	"del":        keySpaceOp(compat.CmdDel),
	"exists":     keySpaceOp(compat.CmdExists),
	"type":       keySpaceOp(compat.CmdType),
	"ttl":        keySpaceOp(compat.CmdTTL),
	"pttl":       keySpaceOp(compat.CmdTTL),
	"eval":       (*session).evalOp,
	"evalsha":    (*session).evalOp,
	"eval_ro":    (*session).evalOp,
	"evalsha_ro": (*session).evalOp,
	"setex":      noErr(str1Op),
	"psetex":     noErr(str1Op),
	"setnx":      noErr(str1Op),
	"getdel":     noErr(str1Op),
	"mget":       nil, // several ops: txOps makes them
}

func noErr(f func([][]byte) (compat.Op, [][]byte, [][]byte)) func(*session, [][]byte) (compat.Op, [][]byte, [][]byte, error) {
	return func(_ *session, args [][]byte) (compat.Op, [][]byte, [][]byte, error) {
		op, keys, argv := f(args)
		return op, keys, argv, nil
	}
}

// keySpaceOp is the builder of DEL, EXISTS (every argument a key), TYPE,
// TTL and PTTL (one key).
func keySpaceOp(cmd compat.Cmd) func(*session, [][]byte) (compat.Op, [][]byte, [][]byte, error) {
	return func(_ *session, args [][]byte) (compat.Op, [][]byte, [][]byte, error) {
		return compat.Op{Cmd: cmd}, args[1:], nil, nil
	}
}

// txOps builds the TxOps of the queued commands that have one, in order,
// into s.tx.ops, and records in each such queued command the index of its
// op, or the error it answers instead.
func (s *session) txOps() []compat.TxOp {
	ops := s.tx.ops[:0]
	for i := range s.tx.cmds {
		c := &s.tx.cmds[i]
		if c.permErr != nil {
			continue // denied at EXEC: no op
		}
		if c.cmd.name == "mget" {
			c.op = len(ops) + 1
			ops = mgetOps(ops, c.args, c.first)
			continue
		}
		build := txOpBuilders[c.cmd.name]
		if build == nil {
			continue
		}
		op, keys, argv, err := build(s, c.args)
		if err != nil {
			c.opErr = err
			continue
		}
		c.op = len(ops) + 1
		ops = append(ops, compat.TxOp{Before: c.first, Op: op, Keys: keys, Argv: argv})
	}
	s.tx.ops = ops
	return ops
}

// writeTxOp writes the reply of queued command c that had a TxOp (or its
// error): as the command gives it alone.
func (s *session) writeTxOp(c *queuedCmd) {
	if c.opErr != nil {
		s.writeError(c.opErr)
		return
	}
	if c.cmd.name == "mget" {
		s.writeMget(s.tx.ops[c.op-1 : c.op-1+len(c.args)-1])
		return
	}
	r := &s.tx.ops[c.op-1].Reply
	if r.Type == compat.Error {
		s.errors++
		s.conn.Out = r.AppendRESP(s.conn.Out, s.resp3.Load())
		return
	}
	switch c.cmd.name {
	case "type":
		s.writeSimple(algorithms.Algo(r.Int).String())
	case "ttl":
		s.writeTTL(r.Int, 1000)
	case "pttl":
		s.writeTTL(r.Int, 1)
	default:
		s.conn.Out = r.AppendRESP(s.conn.Out, s.resp3.Load())
	}
}

// txOpCommand reports whether the command named name is carried out as
// TxOps inside a transaction.
func txOpCommand(name string) bool {
	_, ok := txOpBuilders[name]
	return ok
}
