package commands

import (
	"bytes"
	"slices"

	"github.com/sluice-rl/sluice/acl"

	"github.com/sluice-rl/sluice/compat"

	"github.com/sluice-rl/sluice/algorithms"
)

// Transactions: MULTI, EXEC, DISCARD, WATCH and UNWATCH, with Redis's
// semantics and wording. Between MULTI and EXEC a command is checked
// (known, authenticated, arity, and a decision's arguments parsed) and
// answered +QUEUED, or answered with its error, which makes EXEC answer
// EXECABORT and apply nothing. EXEC hands the queued decisions to the
// keyspace in one Transactor.Transact call: one instant, the locks of all
// their keys held together, one log entry in a replicated group. The
// watched keys are compared inside that call; if one changed, EXEC answers
// a null array and nothing is applied.
//
// While a transaction is open the session's deferred queue (deferred.go)
// holds its decisions, and runDeferred leaves them there until EXEC.

func init() {
	tx := []string{"transaction"}
	register(
		&command{name: "multi", arity: 1, flags: flagFast, run: cmdMulti, group: "transactions", since: "0.2.0", categories: tx,
			summary: "Starts a transaction.", complexity: "O(1)"},
		&command{name: "exec", arity: 1, flags: flagWrite, run: cmdExec, group: "transactions", since: "0.2.0", categories: tx,
			summary:    "Carries out the queued commands as one atomic unit at one instant.",
			complexity: "O(N) for N queued decisions"},
		&command{name: "discard", arity: 1, flags: flagFast, run: cmdDiscard, group: "transactions", since: "0.2.0", categories: tx,
			summary: "Drops the queued commands.", complexity: "O(N) for N queued commands"},
		&command{name: "watch", arity: -2, flags: flagFast, run: cmdWatch, group: "transactions", since: "0.2.0", categories: tx,
			summary:    "Makes the next EXEC fail if a watched key's state changes before it.",
			complexity: "O(1) per key", arguments: []argDoc{{name: "key", typ: "key", multiple: true}},
			keySpecs: []keySpec{keyRange(keyRO, 1, -1, 1)}},
		&command{name: "unwatch", arity: 1, flags: flagFast, run: cmdUnwatch, group: "transactions", since: "0.2.0", categories: tx,
			summary: "Forgets the watched keys.", complexity: "O(1)"},
	)
}

// txState is a session's transaction: whether MULTI is open, whether a
// queueing error doomed it, the queued commands, and the watched keys.
// Only the connection's owner touches it.
type txState struct {
	active bool
	dirty  bool
	cmds   []queuedCmd
	ops    []compat.TxOp // the TxOps of cmds, built at EXEC (tx_ops.go)
	// watches are the keys WATCH named, with their versions then; they
	// last until EXEC, DISCARD or UNWATCH.
	watches []algorithms.Watch
	bytes   int64 // the copies held (args, keys), for the session's footprint
	slot    int   // 1 + the slot of the keys queued so far in a sharded cluster (route.go), 0 before any
}

// queuedCmd is one command between MULTI and EXEC. A decision's items are
// kinds[first:end] of the session's queue; any other command runs at EXEC.
type queuedCmd struct {
	cmd        *command
	args       [][]byte // owned copies: the input buffer is reused between batches
	first, end int
	// op is 1 + the index of its TxOp in txState.ops, or 0; opErr is the
	// error it answers instead of running, if its arguments failed.
	op    int
	opErr error
	// permErr is the NOPERM element it answers instead of running: the
	// user's rules changed since it was queued (recheckPerms).
	permErr error
}

// txImmediate are the commands that run at once inside MULTI, as in Redis.
// txQueued are the commands a transaction may hold besides the decisions
// and the commands on keys of tx_ops.go (txOpBuilders), queued and run at
// EXEC as in Redis: they read or change no key, so running them in order
// around the keyspace's part is the same as running them between. Every
// other command (RL.RESET, SCAN, FLUSHALL …) is refused inside MULTI,
// which aborts the transaction: it would have to see or change keys
// outside the one atomic call.
var (
	txImmediate = map[string]bool{"multi": true, "exec": true, "discard": true, "watch": true, "quit": true}
	txQueued    = map[string]bool{"ping": true, "echo": true, "time": true, "select": true, "unwatch": true,
		"auth": true, "hello": true, "client": true, "command": true, "info": true, "config": true}
)

// queueTx answers a command sent while MULTI is open: it runs MULTI, EXEC,
// DISCARD, WATCH and QUIT at once, and otherwise queues the command or
// answers its error and dooms the transaction.
func (s *session) queueTx(cmd *command, args [][]byte) {
	var err error
	switch {
	case cmd == nil:
		err = errUnknownCommand(args)
	case !s.authed && cmd.flags&flagNoAuth == 0:
		err = errNoAuth
	case s.deniedInMulti(cmd, args, &err): // the ACL, as Redis checks it when it queues
	case !cmd.arityOK(len(args)):
		err = errWrongArgs(cmd.name)
	case txImmediate[cmd.name]:
		cmd.run(s, args)
		return
	case cmd.class != classDecision && !txQueued[cmd.name] && !txOpCommand(cmd.name):
		err = errNotInMulti
	default:
		err = s.routeTx(cmd, args)
	}
	if err != nil {
		s.tx.dirty = true
		s.writeError(err)
		return
	}
	owned := s.own(args)
	q := queuedCmd{cmd: cmd, args: owned, first: len(s.queue.kinds)}
	if cmd.class == classDecision {
		errs := s.errors
		s.curCmd = cmd.idx + 1 // its items' decisions count for it at EXEC
		cmd.run(s, owned)      // parses and queues its items, or writes its error
		s.curCmd = 0
		if s.errors != errs {
			s.tx.dirty = true
			return
		}
	}
	q.end = len(s.queue.kinds)
	s.tx.cmds = append(s.tx.cmds, q)
	s.writeSimple("QUEUED")
}

// own copies args into one allocation the transaction keeps, and counts
// what the copy and its slice headers take from the allocator.
func (s *session) own(args [][]byte) [][]byte {
	n := 0
	for _, a := range args {
		n += len(a)
	}
	buf := make([]byte, 0, n)
	owned := make([][]byte, len(args))
	for i, a := range args {
		buf = append(buf, a...)
		owned[i] = buf[len(buf)-len(a):]
	}
	s.tx.bytes += allocSize(int64(n)) + allocSize(int64(len(args))*sliceSize)
	return owned
}

// writes reports whether the transaction holds a command that may change
// state.
func (t *txState) writes() bool {
	for _, c := range t.cmds {
		if c.cmd.flags&flagWrite != 0 {
			return true
		}
	}
	return false
}

// endTx closes the transaction and forgets the watched keys.
func (s *session) endTx() {
	clear(s.tx.cmds)
	clear(s.tx.watches)
	clear(s.tx.ops)
	s.tx = txState{cmds: s.tx.cmds[:0], watches: s.tx.watches[:0], ops: s.tx.ops[:0]}
	s.queue.reset()
}

func cmdMulti(s *session, args [][]byte) {
	if s.tx.active {
		s.writeError(errNestedMulti) // as in Redis, this does not doom the transaction
		return
	}
	s.tx.active = true
	s.writeOK()
}

func cmdDiscard(s *session, args [][]byte) {
	if !s.tx.active {
		s.writeError(errDiscardNoMulti)
		return
	}
	s.endTx()
	s.writeOK()
}

func cmdWatch(s *session, args [][]byte) {
	// arguments
	if s.tx.active {
		s.writeError(errWatchInMulti) // as in Redis, this does not doom the transaction
		return
	}
	// operation: remember each key's version now, once per key
	now := s.conn.Now()
	for _, key := range args[1:] {
		if s.watching(key) {
			continue
		}
		v, err := s.h.ks.Version(now, key)
		if err != nil {
			s.writeError(err)
			return
		}
		k := bytes.Clone(key)
		s.tx.watches = append(s.tx.watches, algorithms.Watch{Key: k, Version: v})
		s.tx.bytes += allocSize(int64(len(k))) + sliceSize + 8
	}
	// reply
	s.writeOK()
}

func (s *session) watching(key []byte) bool {
	for i := range s.tx.watches {
		if bytes.Equal(s.tx.watches[i].Key, key) {
			return true
		}
	}
	return false
}

func cmdUnwatch(s *session, args [][]byte) {
	if !s.tx.active { // inside EXEC it is a no-op: EXEC forgets the keys itself
		clear(s.tx.watches)
		s.tx.watches = s.tx.watches[:0]
	}
	s.writeOK()
}

func cmdExec(s *session, args [][]byte) {
	if !s.tx.active {
		s.writeError(errExecNoMulti)
		return
	}
	defer s.endTx()
	if s.tx.dirty {
		s.writeError(errExecAbort)
		return
	}
	if err := s.h.writeRefusal(); err != nil && s.tx.writes() {
		s.writeError(err) // and the transaction is discarded, as Redis does
		return
	}
	// operation: every queued decision still allowed in one call, under
	// the watches
	s.recheckPerms()
	q := &s.queue
	out := s.outcomes(len(q.reqs))
	ops := s.txOps()
	ok := true
	if len(q.reqs) > 0 || len(s.tx.watches) > 0 || len(ops) > 0 {
		var err error
		if ok, err = s.h.ks.Transact(s.conn.Now(), s.tx.watches, q.reqs, out, ops); err != nil {
			s.writeError(err)
			return
		}
		if ok {
			s.h.top.record(s, s.conn.Now(), q.reqs, out)
		}
	}
	// reply: a null array when a watched key changed, else one reply per
	// queued command, in order
	if !ok {
		s.writeNullArray()
		return
	}
	s.tx.active = false // the commands run now, not queued
	at, acks := len(s.conn.Out), len(s.acks)
	if s.h.cfg.AppendOnly != nil && s.tx.writes() {
		defer func() { s.acks = append(s.acks[:acks], ackSpan{at, len(s.conn.Out)}) }() // the whole reply is one ack
	}
	s.writeArray(len(s.tx.cmds))
	for _, c := range s.tx.cmds {
		if c.permErr != nil {
			s.writeError(c.permErr)
			continue
		}
		if c.cmd.class == classDecision {
			s.writeOutcomes(q.kinds[c.first:c.end], q.cmds[c.first:c.end], q.reqs[c.first:c.end], out[c.first:c.end])
			continue
		}
		if c.op != 0 || c.opErr != nil {
			s.writeTxOp(&c)
			continue
		}
		c.cmd.run(s, c.args)
	}
}

// recheckPerms checks every queued command again against the user's rules
// as they are now, as Redis's EXEC does: rules changed on another
// connection since MULTI may deny some. A denied command gets its permErr,
// logged in ACL LOG with context multi, and its decisions leave the queue;
// the others run. A decision whose keys are derived (RL.CHECK's pol: keys)
// has those checked as when it was queued. A user allowed everything pays
// one branch.
func (s *session) recheckPerms() {
	p := s.user.Perms()
	if p.AllowsAll() {
		return
	}
	q := &s.queue
	for i := range s.tx.cmds {
		c := &s.tx.cmds[i]
		d, _, object := s.permDenial(c.cmd, c.args)
		if d.Reason == acl.Allowed && c.cmd.class == classDecision && derivesKeys(c.cmd) && !p.AllowsAllKeys() {
			for j := c.first; j < c.end; j++ {
				if key := q.reqs[j].Key; !p.CheckKey(key, acl.Read|acl.Write) {
					d, object = acl.Denial{Reason: acl.DeniedKey}, string(key)
					break
				}
			}
		}
		if d.Reason == acl.Allowed {
			continue
		}
		s.logDenial(d.Reason, acl.Multi, object)
		c.permErr = errPermChanged(d.Reason)
		s.dropQueued(i)
	}
}

// dropQueued takes the decisions of queued command i out of the queue
// (with RL.CHECK's items for them) and moves the later commands' places
// in the queue back.
func (s *session) dropQueued(i int) {
	c := &s.tx.cmds[i]
	n := c.end - c.first
	if n == 0 {
		return
	}
	q := &s.queue
	if q.chk != nil {
		before, own := checkItems(q.kinds[:c.first]), checkItems(q.kinds[c.first:c.end])
		q.chk.items = slices.Delete(q.chk.items, before, before+own)
	}
	q.kinds = slices.Delete(q.kinds, c.first, c.end)
	q.cmds = slices.Delete(q.cmds, c.first, c.end)
	q.reqs = slices.Delete(q.reqs, c.first, c.end)
	c.end = c.first
	for j := i + 1; j < len(s.tx.cmds); j++ {
		s.tx.cmds[j].first -= n
		s.tx.cmds[j].end -= n
	}
}

// checkItems counts the items of kinds that hold an RL.CHECK item
// (checkState.items).
func checkItems(kinds []deferKind) int {
	n := 0
	for _, k := range kinds {
		if k == kindCheck || k == kindCheckAll || k == kindCheckAllMember {
			n++
		}
	}
	return n
}
