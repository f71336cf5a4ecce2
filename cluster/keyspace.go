package cluster

import (
	"errors"
	"time"

	"github.com/hashicorp/raft"
	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/compat"
	"github.com/sluice-rl/sluice/internal/replyerr"
)

// The commands package's Keyspace, replicated: every operation is carried
// out by the leader through the log, at the leader's time. A follower
// forwards; a leader that is not ready (its first barrier has not applied)
// waits up to LeaderWait, then answers CLUSTERDOWN.

// Decide carries out reqs through the log and writes their outcomes.
func (n *Node) Decide(now int64, reqs []algorithms.Request, out []algorithms.Outcome) {
	ops := make([]op, len(reqs))
	for i := range reqs {
		ops[i] = op{code: opDecide, req: reqs[i]}
	}
	rs, err := n.submit(now, ops)
	fillOutcomes(out[:len(reqs)], rs, err)
}

// DecideAsync is Decide without waiting (commands.AsyncDecider): on the
// ready leader the decisions join the batcher's next entry, which is told
// the client they came from (gather), and on a follower they are forwarded
// to the leader over a connection of the forwarding pool that is up and
// free; done is called as the entry is applied or the leader's reply
// arrives. Anywhere else (no leader yet, a full queue, no free connection
// to the leader) and after an error that says nothing was applied (a
// leader that lost its leadership, a leader not ready), a goroutine runs
// Decide, with its forwarding and retries, and then calls done.
func (n *Node) DecideAsync(now, client int64, reqs []algorithms.Request, out []algorithms.Outcome, done func()) {
	finish := func(rs []result, err error) {
		if err != nil && retryable(err) {
			go func() { n.Decide(now, reqs, out); done() }()
			return
		}
		fillOutcomes(out[:len(reqs)], rs, err)
		done()
	}
	switch leaderAddr, leaderID := n.raft.LeaderWithID(); {
	case n.ready.Load():
		if n.batcher.submitDecisions(now, client, reqs, func(rs []result, err error) {
			if err == nil {
				n.settle(rs)
			}
			finish(rs, err)
		}) {
			return
		}
	case leaderAddr != "" && leaderID != raft.ServerID(n.cfg.ID):
		if addr := n.fsm.Member(string(leaderID)); addr != "" && n.forwardAsync(addr, now, reqs, finish) {
			return
		}
	}
	go func() { n.Decide(now, reqs, out); done() }()
}

// forwardAsync sends decisions to the leader at addr without waiting, if a
// connection to it is up and free, and reports whether it did; finish
// gets the leader's results, once, from the goroutine that read them.
func (n *Node) forwardAsync(addr string, now int64, reqs []algorithms.Request, finish func([]result, error)) bool {
	pc := n.fwd.live(addr)
	if pc == nil {
		return false
	}
	sent := pc.callAsync([][]byte{[]byte(n.command("FORWARD")), appendDecisions(nil, now, reqs)}, func(reply []byte, err error) {
		var rs []result
		if err == nil {
			rs, err = decodeResults(reply)
		}
		finish(rs, err)
	})
	if sent {
		n.batcher.metrics.forwarded.Add(1)
		n.batcher.metrics.forwardedOps.Add(int64(len(reqs)))
	}
	return sent
}

// fillOutcomes writes each decision's outcome: its result, or err.
func fillOutcomes(out []algorithms.Outcome, rs []result, err error) {
	for i := range out {
		switch {
		case err != nil:
			out[i] = algorithms.Outcome{Err: err}
		case i < len(rs):
			out[i] = rs[i].out
		default:
			out[i] = algorithms.Outcome{Err: errUnknown("the leader's reply was short")}
		}
	}
}

func (n *Node) one(now int64, o op) (int64, error) {
	rs, err := n.submit(now, []op{o})
	if err != nil {
		return 0, err
	}
	if len(rs) != 1 {
		return 0, errUnknown("the leader's reply was short")
	}
	return rs[0].n, rs[0].out.Err
}

// Delete removes keys through the log.
func (n *Node) Delete(now int64, keys [][]byte) (int64, error) {
	return n.one(now, op{code: opDelete, keys: keys})
}

// Exists counts live keys, linearizably (through the log).
func (n *Node) Exists(now int64, keys [][]byte) (int64, error) {
	return n.one(now, op{code: opExists, keys: keys})
}

// Type returns the algorithm of key's state, linearizably.
func (n *Node) Type(now int64, key []byte) (algorithms.Algo, error) {
	v, err := n.one(now, op{code: opType, keys: [][]byte{key}})
	return algorithms.Algo(v), err
}

// TTL returns the time until key's state expires (-1 if absent), as of the
// applied time.
func (n *Node) TTL(now int64, key []byte) (int64, error) {
	return n.one(now, op{code: opTTL, keys: [][]byte{key}})
}

// Version returns key's state version (WATCH), linearizably (through the
// log).
func (n *Node) Version(now int64, key []byte) (uint64, error) {
	v, err := n.one(now, op{code: opVersion, keys: [][]byte{key}})
	return uint64(v), err
}

// Transact carries out a transaction (EXEC) as one operation of one log
// entry: the leader's FSM checks the watched versions and carries out reqs
// and xops in one store.Transact call, at the entry's instant, on every
// replica. The ops after the tx op are its commands in order: a decide op
// per request, an exec op per xop.
func (n *Node) Transact(now int64, watches []algorithms.Watch, reqs []algorithms.Request, out []algorithms.Outcome, xops []compat.TxOp) (bool, error) {
	ops := make([]op, 1, 1+len(reqs)+len(xops))
	ops[0] = op{code: opTx, watches: watches, count: len(reqs) + len(xops)}
	next := 0
	for i := range xops {
		for ; next < xops[i].Before && next < len(reqs); next++ {
			ops = append(ops, op{code: opDecide, req: reqs[next]})
		}
		ops = append(ops, op{code: opExec, xop: xops[i].Op, keys: xops[i].Keys, argv: xops[i].Argv})
	}
	for ; next < len(reqs); next++ {
		ops = append(ops, op{code: opDecide, req: reqs[next]})
	}
	rs, err := n.submit(now, ops)
	if err != nil {
		return false, err
	}
	if len(rs) != len(ops) {
		return false, errUnknown("the leader's reply was short")
	}
	if rs[0].out.Err != nil || rs[0].n != 1 {
		return false, rs[0].out.Err
	}
	r, x := 0, 0
	for _, res := range rs[1:] {
		if res.exec {
			if x < len(xops) {
				xops[x].Reply = *res.reply
			}
			x++
			continue
		}
		if r < len(reqs) {
			out[r] = res.out
		}
		r++
	}
	return true, nil
}

// Info returns key's state for RL.INFO, linearizably (through the log).
func (n *Node) Info(now int64, key []byte) (algorithms.KeyInfo, error) {
	rs, err := n.submit(now, []op{{code: opInfo, keys: [][]byte{key}}})
	if err != nil {
		return algorithms.KeyInfo{}, err
	}
	if len(rs) != 1 {
		return algorithms.KeyInfo{}, errUnknown("the leader's reply was short")
	}
	if rs[0].info == nil {
		return algorithms.KeyInfo{}, rs[0].out.Err
	}
	return *rs[0].info, rs[0].out.Err
}

// Exec carries out a known script or a string command through the log
// (commands.Scripter) and leaves its reply in c.Reply.
func (n *Node) Exec(now int64, xop compat.Op, keys [][]byte, c *compat.Call) {
	rs, err := n.submit(now, []op{{code: opExec, xop: xop, keys: keys, argv: c.Argv}})
	switch {
	case err != nil:
		c.Reply = compat.ErrorReply(err)
	case len(rs) != 1 || !rs[0].exec:
		c.Reply = compat.ErrorReply(errUnknown("the leader's reply was short"))
	default:
		c.Reply = *rs[0].reply
	}
}

// ExecBatch carries out a pipeline's script calls and string commands
// through the log as one submission (commands.BatchScripter), leaving each
// reply in its Reply.
func (n *Node) ExecBatch(now int64, xops []compat.TxOp, c *compat.Call) {
	ops := make([]op, len(xops))
	for i := range xops {
		ops[i] = op{code: opExec, xop: xops[i].Op, keys: xops[i].Keys, argv: xops[i].Argv}
	}
	rs, err := n.submit(now, ops)
	for i := range xops {
		switch {
		case err != nil:
			xops[i].Reply = compat.ErrorReply(err)
		case len(rs) != len(ops) || !rs[i].exec:
			xops[i].Reply = compat.ErrorReply(errUnknown("the leader's reply was short"))
		default:
			xops[i].Reply = *rs[i].reply
		}
	}
}

// LocalInfo returns key's state from this node's own replica, as of its
// applied time (RL.INFO on a READONLY connection).
func (n *Node) LocalInfo(key []byte) (algorithms.KeyInfo, error) {
	return n.st.Info(n.fsm.AppliedTime(), key)
}

// DBSize counts live keys, linearizably.
func (n *Node) DBSize(now int64) (int64, error) {
	return n.one(now, op{code: opDBSize})
}

// Flush removes every key through the log.
func (n *Node) Flush(now int64) error {
	_, err := n.one(now, op{code: opFlush})
	return err
}

// Scan iterates over this node's own state, as of its applied time (as
// SCAN on a Redis replica does).
func (n *Node) Scan(now int64, cursor uint64, count int, fn func(key []byte, algo algorithms.Algo) bool) (uint64, error) {
	return n.st.Scan(n.fsm.AppliedTime(), cursor, count, fn)
}

// Sweep expires entries at the applied time, never at this node's clock, so
// that no replica forgets state that the log has not yet made absent.
func (n *Node) Sweep(now int64) { n.st.Sweep(n.fsm.AppliedTime()) }

// submit gets ops applied: by this node's batcher if it is the ready
// leader, by forwarding to the leader otherwise. While there is no leader,
// or the request never reached one (errNotApplied), it retries until
// LeaderWait has passed.
func (n *Node) submit(now int64, ops []op) ([]result, error) {
	deadline := time.Now().Add(n.cfg.LeaderWait)
	var blob []byte
	for {
		var rs []result
		var err error
		switch leaderAddr, leaderID := n.raft.LeaderWithID(); {
		case n.ready.Load():
			if rs, err = n.batcher.submit(now, ops); err == nil {
				n.settle(rs)
			}
		case leaderID == raft.ServerID(n.cfg.ID):
			err = errNotReady
		case leaderAddr == "":
			err = errNoLeader
		default:
			addr := n.fsm.Member(string(leaderID))
			if addr == "" {
				err = errNoLeader
				break
			}
			if blob == nil {
				blob = appendBatch(nil, now, ops)
			}
			n.batcher.metrics.forwarded.Add(1)
			n.batcher.metrics.forwardedOps.Add(int64(len(ops)))
			rs, err = n.forward(addr, blob)
		}
		if err == nil || !retryable(err) {
			return rs, err
		}
		if time.Now().After(deadline) {
			if errors.Is(err, errNotApplied) {
				err = errNoLeader
			}
			return nil, err
		}
		select {
		case <-n.stop:
			return nil, errNoLeader
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// retryable reports whether err says that nothing was applied.
func retryable(err error) bool {
	var ce replyerr.Error
	if errors.As(err, &ce) {
		return ce == errNoLeader || ce == errNotReady || ce == errNotLeader
	}
	var re replyError
	if errors.As(err, &re) {
		return len(re) >= 11 && re[:11] == "CLUSTERDOWN"
	}
	return errors.Is(err, errNotApplied)
}

// forward sends an encoded submission to the leader at addr.
func (n *Node) forward(addr string, blob []byte) ([]result, error) {
	reply, err := n.fwd.call(addr, []byte(n.command("FORWARD")), blob)
	if err != nil {
		return nil, err
	}
	return decodeResults(reply)
}

// Forward runs the submissions a follower forwarded (RAFT.FORWARD), all
// stamped with this leader's clock, and returns each one's encoded results.
// It never forwards again: a node that is not the ready leader answers
// CLUSTERDOWN, and the follower retries.
func (n *Node) Forward(now int64, blobs [][]byte) ([][]byte, []error) {
	replies := make([][]byte, len(blobs))
	errs := make([]error, len(blobs))
	subs := make([]*submission, 0, len(blobs))
	idx := make([]int, 0, len(blobs))
	for i, blob := range blobs {
		_, ops, err := decodeBatch(blob)
		switch {
		case err != nil:
			errs[i] = errCorruptForward
		case !n.forwardable(ops):
			errs[i] = errLeaderOnlyForward
		case !n.ready.Load():
			errs[i] = errNotLeader
		default:
			subs = append(subs, &submission{now: now, ops: ops, done: make(chan struct{})})
			idx = append(idx, i)
		}
	}
	results, subErrs := n.batcher.submitAll(subs)
	for j := range subs {
		i := idx[j]
		switch err := subErrs[j]; {
		case errors.Is(err, errNotApplied):
			errs[i] = errNotLeader
		case err != nil:
			errs[i] = err
		default:
			n.settle(results[j])
			replies[i] = appendResults(nil, results[j])
		}
	}
	return replies, errs
}

// forwardable reports whether a follower may forward ops. The entries
// that say where the group's members are (opMember) and which slots a
// data group serves (opOwn) are appended only by a leader for itself
// (admin.go, node.go, shard.go); the slot table and the data groups'
// records (opSlots, opGroup) and the migration records (opMigration) are
// the meta group's, which data leaders forward to; of a migration's steps
// only those one group's leader sends to another's log cross (opFence). A forwarded submission carrying any other is refused, not
// applied: crafted by a client, an opOwn of every slot would make its
// group serve the other groups' slots too.
func (n *Node) forwardable(ops []op) bool {
	for i := range ops {
		switch ops[i].code {
		case opMember, opOwn:
			return false
		case opSlots, opGroup, opMigration:
			if !n.cfg.Meta {
				return false
			}
		case opFence:
			// A source's leader ships an install (in parts) or a refuse
			// to the target's log; a seal, drop, unseal or state is a
			// group's own leader's (mover.go).
			switch ops[i].fence {
			case fenceInstall, fencePart, fenceRefuse:
			default:
				return false
			}
			if n.cfg.Meta {
				return false
			}
		}
	}
	return true
}

// LocalDecide answers peeks from this node's own state at its applied time
// (READONLY). Anything but a peek is refused: it would change state outside
// the log.
func (n *Node) LocalDecide(reqs []algorithms.Request, out []algorithms.Outcome) {
	at := n.fsm.AppliedTime()
	for i := range reqs {
		if reqs[i].N != 0 {
			out[i] = algorithms.Outcome{Err: errReadonlyWrite}
			continue
		}
		n.st.Decide(at, reqs[i:i+1], out[i:i+1])
	}
}
