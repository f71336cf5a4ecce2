package commands

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/glob"

	"github.com/sluice-rl/sluice/compat"
	"github.com/sluice-rl/sluice/internal/parse"
)

// The scripting commands. sluice runs no Lua: a script is recognised by the
// SHA1 of its exact text among the known limiter scripts (compat.Known), and
// run natively and atomically at the batch's instant. A known SHA1 needs no
// SCRIPT LOAD, and is never answered NOSCRIPT, after a restart or ever.

func init() {
	evalArgs := []argDoc{
		{name: "script", typ: "string"},
		{name: "numkeys", typ: "integer"},
		{name: "key", typ: "key", optional: true, multiple: true},
		{name: "arg", typ: "string", optional: true, multiple: true},
	}
	shaArgs := append([]argDoc{{name: "sha1", typ: "string"}}, evalArgs[1:]...)
	// Redis's: numkeys after the script, then that many keys.
	rw := []keySpec{keyCount(keyRW|keyAccess|keyUpdate, 2, 0, 1, 1)}
	ro := []keySpec{keyCount(keyRO|keyAccess, 2, 0, 1, 1)}
	evalRW := []keySpec{rw[0]}
	evalRW[0].notes = "We cannot tell how the keys will be used so we assume the worst, RW and UPDATE"
	evalRO := []keySpec{ro[0]}
	evalRO[0].notes = "We cannot tell how the keys will be used so we assume the worst, RO and ACCESS"
	register(
		&command{name: "eval", arity: -3, flags: flagWrite | flagNoMandatoryKeys, keySpecs: evalRW, run: cmdEval, group: "scripting", since: "0.1.0",
			summary: "Runs a known limiter script natively, recognised by its text.", complexity: "O(number of keys)",
			arguments: evalArgs},
		&command{name: "evalsha", arity: -3, flags: flagWrite | flagNoMandatoryKeys, keySpecs: rw, run: cmdEval, group: "scripting", since: "0.1.0",
			summary: "Runs a known limiter script natively, named by its SHA1.", complexity: "O(number of keys)",
			arguments: shaArgs},
		&command{name: "eval_ro", arity: -3, flags: flagReadOnly | flagNoMandatoryKeys, keySpecs: evalRO, run: cmdEval, group: "scripting", since: "0.1.0",
			summary: "Runs a known limiter script natively; its first write fails.", complexity: "O(number of keys)",
			arguments: evalArgs},
		&command{name: "evalsha_ro", arity: -3, flags: flagReadOnly | flagNoMandatoryKeys, keySpecs: ro, run: cmdEval, group: "scripting", since: "0.1.0",
			summary:    "Runs a known limiter script natively, named by its SHA1; its first write fails.",
			complexity: "O(number of keys)", arguments: shaArgs},
		&command{name: "script", arity: -2, run: cmdScript, group: "scripting", since: "0.1.0",
			summary:    "Loads known limiter scripts, tells which are known, flushes (LOAD, EXISTS, FLUSH, KILL, HELP).",
			complexity: "Depends on subcommand.", subs: []string{"load", "exists", "flush", "kill", "help"}},
	)
	for _, name := range []string{"eval", "evalsha", "eval_ro", "evalsha_ro"} {
		commandTable[name].class = classScript // cmd_scripts.go
	}
}

// cmdEval: EVAL script numkeys [key ...] [arg ...], EVALSHA sha1 …, and
// their _RO forms.
func cmdEval(s *session, args [][]byte) {
	op, keys, argv, err := s.evalOp(args)
	if err != nil {
		s.runDeferred() // the calls queued before it answer first
		s.writeError(err)
		return
	}
	if op.Script.ClearKeys {
		s.runDeferred()
		s.clearKeys(op, keys)
		return
	}
	s.queueScript(op, keys, argv)
}

// clearKeys carries out Python limits' clear_keys script (storage.reset()):
//
//	 1 local keys = redis.call('keys', KEYS[1])
//	 2 local res = 0
//	 3
//	 4 for i=1,#keys,5000 do
//	 5     res = res + redis.call(
//	 6         'del', unpack(keys, i, math.min(i+4999, #keys))
//	 7     )
//	 8 end
//	 9
//	10 return res
//
// as a scan of the keyspace for the keys that match the pattern KEYS[1],
// then DEL of them, 5,000 at a time. Unlike Redis's it is not atomic: a
// key written between the scan and the DEL is deleted or not.
func (s *session) clearKeys(op compat.Op, keys [][]byte) {
	where := " script: " + op.Script.SHA1 + ", on @user_script:"
	if len(keys) == 0 {
		s.errors++
		s.writeError(errors.New(compat.ErrArgs.Error() + where + "1."))
		return
	}
	pattern := keys[0]
	now := s.conn.Now()
	var found [][]byte
	tooComplex := false
	var cursor uint64
	for {
		next, err := s.h.ks.Scan(now, cursor, 1000, func(key []byte, _ algorithms.Algo) bool {
			m, decided, _ := glob.Match(pattern, key, false, glob.MaxStars, glob.StepLimit)
			if !decided {
				tooComplex = true
				return false
			}
			if m {
				found = append(found, append([]byte(nil), key...))
			}
			return true
		})
		if err == nil && tooComplex {
			err = errPatternTooComplex
		}
		if err != nil {
			s.errors++
			s.writeError(err)
			return
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	if len(found) > 0 && op.ReadOnly {
		s.errors++
		s.writeError(errors.New(compat.ErrReadOnly.Error() + where + "5."))
		return
	}
	var res int64
	for i := 0; i < len(found); i += 5000 {
		n, err := s.h.ks.Delete(now, found[i:min(i+5000, len(found))])
		if err != nil {
			s.errors++
			s.writeError(err)
			return
		}
		res += n
	}
	s.writeInt(res)
}

// evalOp reads EVAL's, EVALSHA's and their _RO forms' arguments: the
// script to run, its keys and its ARGV, or the command's error.
func (s *session) evalOp(args [][]byte) (op compat.Op, keys, argv [][]byte, err error) {
	name := args[0]
	bySHA := len(name) >= 7 && (name[4]|0x20) == 's' // evalsha, evalsha_ro
	readOnly := name[len(name)-1]|0x20 == 'o'        // eval_ro, evalsha_ro
	numKeys, ok := parse.Int(args[2])
	switch {
	case bySHA && len(args[1]) != 40: // Redis's evalShaCommand checks this first
		return op, nil, nil, errNoScript
	case !ok:
		return op, nil, nil, errNotInteger
	case numKeys < 0:
		return op, nil, nil, errNumKeysNegative
	case numKeys > int64(len(args)-3):
		return op, nil, nil, errNumKeysTooMany
	}
	var script *compat.Script
	if bySHA {
		// A connection mostly repeats one script: compare with the last
		// one's SHA1 before decoding the hex and hashing.
		if p := s.lastScript; p != nil && string(args[1]) == p.SHA1 {
			script = p
		} else if script = compat.Known.Lookup(args[1]); script != nil {
			s.lastScript = script
		}
		if script == nil {
			return op, nil, nil, errNoScript
		}
	} else if script = compat.Known.LookupText(args[1]); script == nil {
		return op, nil, nil, unknownScript(args[1])
	}
	op = compat.Op{Cmd: compat.CmdScript, Script: script, ReadOnly: readOnly}
	return op, args[3 : 3+numKeys], args[3+numKeys:], nil
}

// unknownScript is the error for a text that is no known script.
func unknownScript(text []byte) error {
	sum := sha1.Sum(text)
	return errUnknownScript(hex.EncodeToString(sum[:]), compat.Known.Suggest(text))
}

// exec1 carries out op on keys through the keyspace and writes its reply.
func (s *session) exec1(op compat.Op, keys, argv [][]byte) {
	if s.call == nil {
		s.call = new(compat.Call) // only the connections that run scripts pay for it
	}
	c := s.call
	c.Argv = argv
	s.h.ks.Exec(s.conn.Now(), op, keys, c)
	if c.Reply.Type == compat.Error {
		s.errors++
	}
	s.conn.Out = c.Reply.AppendRESP(s.conn.Out, s.resp3.Load())
	c.Argv = nil // drop references into the input buffer
	clear(c.Keys)
}

// cmdScript: SCRIPT LOAD script | EXISTS sha1 [sha1 ...] | FLUSH [ASYNC|SYNC]
// | KILL | HELP.
func cmdScript(s *session, args [][]byte) {
	sub := args[1]
	switch {
	case equalFold(sub, "load") && len(args) == 3:
		script := compat.Known.LookupText(args[2])
		if script == nil {
			s.writeError(unknownScript(args[2]))
			return
		}
		s.writeBulkString(script.SHA1)
	case equalFold(sub, "exists") && len(args) >= 3:
		s.writeArray(len(args) - 2)
		for _, sha := range args[2:] {
			if compat.Known.Lookup(sha) != nil {
				s.writeInt(1)
			} else {
				s.writeInt(0)
			}
		}
	case equalFold(sub, "flush") && len(args) <= 3:
		// The known scripts are always there: nothing to flush.
		if len(args) == 3 && !equalFold(args[2], "async") && !equalFold(args[2], "sync") {
			s.writeError(replyError("SCRIPT FLUSH only support SYNC|ASYNC option"))
			return
		}
		s.writeOK()
	case equalFold(sub, "kill") && len(args) == 2:
		s.writeError(errNotBusy)
	case equalFold(sub, "help") && len(args) == 2:
		lines := []string{
			"SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"EXISTS <sha1> [<sha1> ...]",
			"    Return 1 for each SHA1 of a known limiter script, else 0.",
			"FLUSH [ASYNC|SYNC]",
			"    Does nothing: the known scripts cannot be flushed.",
			"KILL",
			"    No script ever runs long: always NOTBUSY.",
			"LOAD <script>",
			"    Return the SHA1 of a known limiter script's text; any other text is refused.",
			"HELP",
			"    Print this help.",
		}
		s.writeArray(len(lines))
		for _, l := range lines {
			s.writeSimple(l)
		}
	case equalFold(sub, "load") || equalFold(sub, "exists") || equalFold(sub, "flush") ||
		equalFold(sub, "kill") || equalFold(sub, "help"):
		s.writeError(errWrongArgs("script|" + strings.ToLower(string(sub))))
	default:
		s.writeError(errUnknownSubcommand(sub, "SCRIPT"))
	}
}

// Deferred scripts. EVAL and EVALSHA of a known script (and their _RO
// forms) are queued like decisions (deferred.go), in a class of their own,
// when the keyspace carries out batches of them (BatchScripter): a
// pipeline of script calls is then one call to the keyspace, under one
// taking of its keys' shard locks, one frame of the append-only log, one
// entry of a replicated group's log. A call whose arguments are wrong
// (numkeys, an unknown SHA1) answers its error at once, after the calls
// queued before it.

// BatchScripter is the Keyspace's part that carries out a batch of ops at once:
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
	ops    []compat.TxOp
	args   [][]byte
	writes []bool // the call may change state (EVAL, not EVAL_RO)
}

// queueScript defers op on keys with argv to the batch's end.
func (s *session) queueScript(op compat.Op, keys, argv [][]byte) {
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
	sq.writes = append(sq.writes, s.curCmd != 0 && statList[s.curCmd-1].flags&flagWrite != 0)
}

// runScripts carries out the queued script calls in one ExecBatch and
// writes their replies.
func (s *session) runScripts() {
	ops := s.queue.scr.ops
	if s.call == nil {
		s.call = new(compat.Call)
	}
	s.h.ks.ExecBatch(s.conn.Now(), ops, s.call)
	clear(s.call.Keys)
	resp3 := s.resp3.Load()
	logged := s.h.cfg.AppendOnly != nil
	for i := range ops {
		r := &ops[i].Reply
		if r.Type == compat.Error {
			s.errors++
		}
		at := len(s.conn.Out)
		s.conn.Out = r.AppendRESP(s.conn.Out, resp3)
		if logged && s.queue.scr.writes[i] && r.Type != compat.Error {
			s.ack(at)
		}
	}
}

// reset empties the script queue, dropping its references into the input
// buffer.
func (sq *scriptQueue) reset() {
	clear(sq.ops)
	clear(sq.args)
	sq.ops, sq.args, sq.writes = sq.ops[:0], sq.args[:0], sq.writes[:0]
}
