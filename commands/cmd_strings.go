package commands

import "github.com/sluice-rl/sluice/compat"

// The plain string commands that limiter libraries send on the keys their
// scripts write (docs/compat.md): GET, SET, INCR, INCRBY, DECR, DECRBY,
// EXPIRE, PEXPIRE, SETEX, PSETEX, SETNX, GETDEL, MGET and STRLEN, with Redis 7.0's
// arguments, replies and errors. They
// work on strings only: against a key that holds a native limiter's state
// they answer WRONGTYPE, and SET replaces it, as Redis's SET does. DEL,
// EXISTS, TYPE, PTTL and TTL are the key-space commands (cmd_keys.go).

func init() {
	key := argDoc{name: "key", typ: "key"}
	expireOpts := []argDoc{{name: "condition", typ: "string", optional: true}}
	keyed := func(flags keyFlags, c *command) *command {
		c.group, c.since = "string", "0.1.0"
		c.keySpecs = []keySpec{keyRange(flags, 1, 0, 1)}
		if c.complexity == "" {
			c.complexity = "O(1)"
		}
		return c
	}
	register(
		keyed(keyRO|keyAccess, &command{name: "get", arity: 2, flags: flagReadOnly | flagFast, run: cmdGet,
			summary: "Returns the string value of a key.", arguments: []argDoc{key}}),
		keyNotes("RW and ACCESS due to the optional `GET` argument", keyed(keyRW|keyAccess|keyUpdate|keyVariableFlags, &command{name: "set", arity: -3, flags: flagWrite, run: cmdSet, getKeys: setKeys,
			summary: "Sets a key's string value, with an optional expiry and condition.",
			arguments: []argDoc{key, {name: "value", typ: "string"},
				{name: "condition", typ: "string", optional: true},
				{name: "get", typ: "pure-token", token: "GET", optional: true},
				{name: "expiration", typ: "string", optional: true}}})),
		keyed(keyRW|keyAccess|keyUpdate, &command{name: "incr", arity: 2, flags: flagWrite | flagFast, run: cmdIncr,
			summary: "Increments the integer value of a key by one.", arguments: []argDoc{key}}),
		keyed(keyRW|keyAccess|keyUpdate, &command{name: "incrby", arity: 3, flags: flagWrite | flagFast, run: cmdIncr,
			summary:   "Increments the integer value of a key by a number.",
			arguments: []argDoc{key, {name: "increment", typ: "integer"}}}),
		keyed(keyRW|keyAccess|keyUpdate, &command{name: "decr", arity: 2, flags: flagWrite | flagFast, run: cmdIncr,
			summary: "Decrements the integer value of a key by one.", arguments: []argDoc{key}}),
		keyed(keyRW|keyAccess|keyUpdate, &command{name: "decrby", arity: 3, flags: flagWrite | flagFast, run: cmdIncr,
			summary:   "Decrements the integer value of a key by a number.",
			arguments: []argDoc{key, {name: "decrement", typ: "integer"}}}),
		keyed(keyRW|keyUpdate, &command{name: "expire", arity: -3, maxArgs: 4, flags: flagWrite | flagFast, run: cmdExpire,
			summary:   "Sets a string key's time to live in seconds (WRONGTYPE on a limiter's state).",
			arguments: append([]argDoc{key, {name: "seconds", typ: "integer"}}, expireOpts...)}),
		keyed(keyOW|keyUpdate, &command{name: "setex", arity: 4, flags: flagWrite, run: cmdStr1,
			summary:   "Sets a key's string value and its time to live in seconds.",
			arguments: []argDoc{key, {name: "seconds", typ: "integer"}, {name: "value", typ: "string"}}}),
		keyed(keyOW|keyUpdate, &command{name: "psetex", arity: 4, flags: flagWrite, run: cmdStr1,
			summary:   "Sets a key's string value and its time to live in milliseconds.",
			arguments: []argDoc{key, {name: "milliseconds", typ: "integer"}, {name: "value", typ: "string"}}}),
		keyed(keyOW|keyInsert, &command{name: "setnx", arity: 3, flags: flagWrite | flagFast, run: cmdStr1,
			summary: "Sets a key's string value only if the key does not exist.", arguments: []argDoc{key, {name: "value", typ: "string"}}}),
		keyed(keyRW|keyAccess|keyDelete, &command{name: "getdel", arity: 2, flags: flagWrite | flagFast, run: cmdStr1,
			summary: "Returns the string value of a key and deletes the key.", arguments: []argDoc{key}}),
		allKeys(keyed(keyRO|keyAccess, &command{name: "mget", arity: -2, flags: flagReadOnly | flagFast, run: cmdMget,
			summary:    "Returns the string values of keys, atomically (a null for a key that holds no string).",
			complexity: "O(N) for N keys", arguments: []argDoc{{name: "key", typ: "key", multiple: true}}})),
		keyed(keyRO, &command{name: "strlen", arity: 2, flags: flagReadOnly | flagFast, run: cmdStrlen,
			summary: "Returns the length of a key's string value (0 if the key is absent).", arguments: []argDoc{key}}),
		keyed(keyRW|keyUpdate, &command{name: "pexpire", arity: -3, maxArgs: 4, flags: flagWrite | flagFast, run: cmdExpire,
			summary:   "Sets a string key's time to live in milliseconds (WRONGTYPE on a limiter's state).",
			arguments: append([]argDoc{key, {name: "milliseconds", typ: "integer"}}, expireOpts...)}),
	)
}

// keyNotes gives c's key spec its notes.
func keyNotes(notes string, c *command) *command {
	c.keySpecs[0].notes = notes
	return c
}

// setKeys is SET's getKeys, for its variable flags: with GET it reads the
// old value (RW access update), without it overwrites (OW update), as
// Redis's setGetKeys.
func setKeys(args [][]byte, out []keyRef) ([]keyRef, bool) {
	flags := keyOW | keyUpdate
	for _, a := range args[min(3, len(args)):] {
		if equalFold(a, "get") {
			flags = keyRW | keyAccess | keyUpdate
			break
		}
	}
	if len(args) < 2 {
		return out, false
	}
	return append(out, keyRef{pos: 1, flags: flags}), true
}

// allKeys makes every argument of c a key.
func allKeys(c *command) *command {
	c.keySpecs[0].lastKey = -1
	return c
}

// oneArg is INCR's and DECR's delta; nothing writes to it.
var oneArg = [][]byte{[]byte("1")}

func cmdGet(s *session, args [][]byte) { s.exec1(getOp(args)) }

// cmdStrlen: STRLEN key. GET's lookup, answering the value's length: 0 for
// an absent key, GET's WRONGTYPE for a limiter's state (redis-cli
// --bigkeys sizes strings with it).
func cmdStrlen(s *session, args [][]byte) {
	if s.call == nil {
		s.call = new(compat.Call)
	}
	c := s.call
	c.Argv = nil
	s.h.ks.Exec(s.conn.Now(), compat.Op{Cmd: compat.CmdGet}, args[1:2], c)
	switch c.Reply.Type {
	case compat.Error:
		s.errors++
		s.conn.Out = c.Reply.AppendRESP(s.conn.Out, s.resp3.Load())
	case compat.Bulk:
		s.writeInt(int64(len(c.Reply.Bytes())))
	default:
		s.writeInt(0)
	}
	clear(c.Keys)
}

func cmdSet(s *session, args [][]byte) { s.exec1(setOp(args)) }

func cmdIncr(s *session, args [][]byte) { s.exec1(incrOp(args)) }

func cmdExpire(s *session, args [][]byte) { s.exec1(expireOp(args)) }

func cmdStr1(s *session, args [][]byte) { s.exec1(str1Op(args)) }

// str1Op: SETEX key seconds value, PSETEX key ms value, SETNX key value,
// GETDEL key.
func str1Op(args [][]byte) (compat.Op, [][]byte, [][]byte) {
	cmd := compat.CmdGetdel
	switch {
	case equalFold(args[0], "setex"):
		cmd = compat.CmdSetex
	case equalFold(args[0], "psetex"):
		cmd = compat.CmdPsetex
	case equalFold(args[0], "setnx"):
		cmd = compat.CmdSetnx
	}
	return compat.Op{Cmd: cmd}, args[1:2], args[2:]
}

// The string commands as Ops on their key with the arguments after it:
// what they run alone (exec1) and inside EXEC (a compat.TxOp).

func getOp(args [][]byte) (compat.Op, [][]byte, [][]byte) {
	return compat.Op{Cmd: compat.CmdGet}, args[1:2], nil
}

// setOp: SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL].
// The options are read where the command runs (compat), so that a
// replicated group's log carries the command as it came.
func setOp(args [][]byte) (compat.Op, [][]byte, [][]byte) {
	return compat.Op{Cmd: compat.CmdSet}, args[1:2], args[2:]
}

// incrOp: INCR key, INCRBY key n, DECR key, DECRBY key n.
func incrOp(args [][]byte) (compat.Op, [][]byte, [][]byte) {
	op := compat.Op{Cmd: compat.CmdIncrBy}
	if args[0][0]|0x20 == 'd' {
		op.Cmd = compat.CmdDecrBy
	}
	argv := args[2:]
	if len(args) == 2 {
		argv = oneArg
	}
	return op, args[1:2], argv
}

// expireOp: EXPIRE key seconds [NX|XX|GT|LT], PEXPIRE key ms [NX|XX|GT|LT].
func expireOp(args [][]byte) (compat.Op, [][]byte, [][]byte) {
	op := compat.Op{Cmd: compat.CmdPexpire}
	if args[0][0]|0x20 == 'e' {
		op.Cmd = compat.CmdExpire
	}
	return op, args[1:2], args[2:]
}

// cmdMget: MGET key [key ...]. The keys are read together, under their
// locks at one instant (one Transact of reads; one log entry in a
// replicated group).
func cmdMget(s *session, args [][]byte) {
	ops := mgetOps(nil, args, 0)
	if _, err := s.h.ks.Transact(s.conn.Now(), nil, nil, nil, ops); err != nil {
		s.writeError(err)
		return
	}
	s.writeMget(ops)
}

// mgetOps appends to ops MGET's reads, one per key of args, each before
// the request at index before.
func mgetOps(ops []compat.TxOp, args [][]byte, before int) []compat.TxOp {
	for i := 1; i < len(args); i++ {
		ops = append(ops, compat.TxOp{Before: before, Op: compat.Op{Cmd: compat.CmdMget}, Keys: args[i : i+1]})
	}
	return ops
}

// writeMget writes MGET's array from its reads' replies.
func (s *session) writeMget(ops []compat.TxOp) {
	s.writeArray(len(ops))
	for i := range ops {
		s.conn.Out = ops[i].Reply.AppendRESP(s.conn.Out, s.resp3.Load())
	}
}
