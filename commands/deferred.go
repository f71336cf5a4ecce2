package commands

import "github.com/sluice-rl/sluice/algorithms"

// The work a batch defers. Decisions (RL.*, CL.THROTTLE, RL.ALL) are not
// carried out as they are parsed: they are queued, and the queue is carried
// out in one call to the keyspace, so that a pipeline's decisions share
// their shard locks and overlap their cache misses (in a replicated group,
// their log entry). A follower's forwarded submissions (RAFT.FORWARD) are
// queued the same way and handed to the leader's batcher together.

// deferClass says how a command's work runs: at once, or queued with the
// work of the same class.
type deferClass uint8

const (
	classNone     deferClass = iota // runs at once; the queue is empty while it runs
	classDecision                   // queued as requests for Keyspace.Decide
	classForward                    // queued as submissions for Cluster.Forward
	classScript                     // queued as script calls for BatchScripter.ExecBatch (cmd_scripts.go)
)

// deferKind says what a queued item is and how its reply is written.
type deferKind uint8

const (
	kindDecision       deferKind = iota // the five fields of every RL.* decision
	kindThrottle                        // CL.THROTTLE: redis-cell's five integers, in seconds
	kindRelease                         // RL.RELEASE: 1 if a lease was released, else 0
	kindAll                             // the first request of an RL.ALL group: the whole group's reply
	kindAllMember                       // the group's other requests, answered with the first
	kindForward                         // a forwarded submission: its encoded results, or its error
	kindCheck                           // RL.CHECK: the five fields, after its policy's mode (checks)
	kindCheckAll                        // the first request of an RL.CHECK of several pairs: the whole reply
	kindCheckAllMember                  // its other requests, answered with the first
	kindScript                          // a script call: its reply (cmd_scripts.go)
	kindTake                            // RL.TAKE: the five fields and granted (cmd_take.go)
)

// deferred is one queue of deferred work, tagged by kind.
//
// The invariant that keeps replies in command order: the queue only ever
// holds items of one class, and every command that writes a reply of its
// own, or whose work is of another class, first has the queue carried out
// (session.exec, rejectDecision), which writes the queued items' replies in
// the order they were queued. So at any moment every reply already in the
// output precedes every queued item's, and each queued item's precedes the
// replies of the commands that follow it. The transport's EndBatch carries
// the queue out before the batch's replies are written, and before the
// memory that queued arguments point into is reused.
//
// kinds is the queue: one entry per item, in command order. The items'
// payloads sit in reqs (the decisions' requests, one per decision item, in
// the same order) or blobs (the forwards', one per forward item), so that
// a whole run goes to the keyspace as one slice without copying.
type deferred struct {
	class deferClass
	kinds []deferKind
	cmds  []uint16 // the command that queued each decision (its index plus one; 0: none), for its figures
	reqs  []algorithms.Request
	outs  []algorithms.Outcome // Decide's scratch, kept between batches
	blobs [][]byte
	// chk is RL.CHECK's part of the queue, made at the first RL.CHECK
	// (cmd_check.go).
	chk *checkState
	// scr is the script calls' part of the queue, made at the first
	// deferred script call (cmd_scripts.go).
	scr *scriptQueue
	// fl is the decisions in flight (decideAsync).
	fl flight
}

// flight is what the queue handed the keyspace to decide without waiting
// (AsyncDecider): the requests, their outcomes to be, and, when
// resolveChecks refused some, where in the queue each one's outcome goes.
type flight struct {
	now   int64
	reqs  []algorithms.Request
	out   []algorithms.Outcome
	split bool  // at holds the queue's index of each
	at    []int // for split
}

// queueDecision adds a decision to the queue.
func (s *session) queueDecision(req algorithms.Request, kind deferKind) {
	q := &s.queue
	q.class = classDecision
	q.kinds = append(q.kinds, kind)
	q.cmds = append(q.cmds, uint16(s.curCmd))
	q.reqs = append(q.reqs, req)
}

// queueForward adds a forwarded submission to the queue.
func (s *session) queueForward(blob []byte) {
	q := &s.queue
	q.class = classForward
	q.kinds = append(q.kinds, kindForward)
	q.blobs = append(q.blobs, blob)
}

// unqueue drops the items queued after the first mark ones (an RL.ALL
// whose arguments turned out wrong). The queue holds decisions.
func (s *session) unqueue(mark int) {
	q := &s.queue
	clear(q.reqs[mark:])
	q.reqs, q.kinds, q.cmds = q.reqs[:mark], q.kinds[:mark], q.cmds[:mark]
}

// runDeferred carries out the queued work and writes its replies, in
// order, then empties the queue. On an event loop of a node whose
// decisions wait for the log, it starts the queued decisions instead and
// leaves s.inFlight set, the connection suspended (server.Conn.Suspend):
// the caller returns at once, and the next call, EndBatch once the
// decisions are in, writes their replies.
func (s *session) runDeferred() {
	q := &s.queue
	if s.tx.active {
		return // the queue holds the transaction's decisions until EXEC (cmd_tx.go)
	}
	if len(q.kinds) == 0 {
		q.class = classNone
		return
	}
	quiet := s.quiet
	s.quiet = false // the queue's work logs for the commands that queued it
	switch q.class {
	case classDecision:
		switch {
		case s.inFlight:
			s.landDecisions()
		case s.h.async != nil && !s.conn.MayWait():
			if s.decideAsync() {
				s.quiet = quiet
				return
			}
		default:
			s.runDecisions()
		}
	case classForward:
		s.runForwards()
	case classScript:
		s.runScripts()
	}
	s.quiet = quiet
	q.reset()
}

// reset empties the queue, keeping its memory.
func (q *deferred) reset() {
	clear(q.reqs) // drop references into the input buffer
	clear(q.blobs)
	q.kinds, q.reqs, q.blobs, q.cmds = q.kinds[:0], q.reqs[:0], q.blobs[:0], q.cmds[:0]
	if q.chk != nil {
		q.chk.reset()
	}
	if q.scr != nil {
		q.scr.reset()
	}
	q.class = classNone
}

// runDecisions carries out the queued decisions in one call to the
// keyspace and writes their replies.
func (s *session) runDecisions() {
	q := &s.queue
	out := s.outcomes(len(q.reqs))
	if c := q.chk; c != nil && len(c.pending) > 0 && s.resolveChecks() {
		s.decideResolved(out)
	} else {
		s.decide(q.reqs, out)
	}
	s.writeOutcomes(q.kinds, q.cmds, q.reqs, out)
}

// decideAsync hands the queued decisions to the keyspace without waiting
// and suspends the connection until they are decided (landDecisions
// writes their replies). It reports false, having written the replies, if
// nothing was left to decide: resolveChecks refused every one. When an
// RL.CHECK's policy is missing on a sharded node, catching the meta
// replica up (syncMeta) waits: a goroutine resolves the checks and
// decides instead.
func (s *session) decideAsync() bool {
	if s.resume == nil {
		s.resume = s.conn.Resume
	}
	if c := s.queue.chk; c != nil && len(c.pending) > 0 && s.h.cfg.MetaSync != nil && s.checksMiss() {
		s.inFlight = true
		s.conn.Suspend() // the goroutine owns the session until Resume
		go func() {
			if f := &s.queue.fl; s.prepareFlight() {
				s.h.ks.Decide(f.now, f.reqs, f.out)
			}
			s.resume()
		}()
		return true
	}
	if !s.prepareFlight() {
		q := &s.queue
		s.writeOutcomes(q.kinds, q.cmds, q.reqs, q.outs[:len(q.reqs)])
		return false
	}
	f := &s.queue.fl
	s.inFlight = true
	s.conn.Suspend() // before the keyspace can call done
	s.h.async.DecideAsync(f.now, s.conn.ID(), f.reqs, f.out, s.resume)
	return true
}

// prepareFlight sets the flight up from the queue, resolving its
// RL.CHECKs, and reports whether any decision is left to make: false when
// resolveChecks refused every one (their errors are in the queue's
// outcomes, which landDecisions writes).
func (s *session) prepareFlight() bool {
	q := &s.queue
	out := s.outcomes(len(q.reqs))
	f := &q.fl
	f.now, f.reqs, f.out, f.split, f.at = s.conn.Now(), q.reqs, out, false, f.at[:0]
	if c := q.chk; c != nil && len(c.pending) > 0 && s.resolveChecks() {
		refused := make([]bool, len(q.reqs))
		for _, pc := range c.pending {
			if pc.err != nil {
				refused[pc.at] = true
				out[pc.at] = algorithms.Outcome{Err: pc.err}
			}
		}
		f.reqs, f.split = nil, true
		for i := range q.reqs {
			if !refused[i] {
				f.reqs = append(f.reqs, q.reqs[i])
				f.at = append(f.at, i)
			}
		}
		if len(f.reqs) == 0 {
			return false
		}
		f.out = make([]algorithms.Outcome, len(f.reqs))
	}
	return true
}

// landDecisions writes the replies of the decisions decideAsync handed
// over, now decided.
func (s *session) landDecisions() {
	q := &s.queue
	f := &q.fl
	s.inFlight = false
	out := q.outs[:len(q.reqs)]
	if f.split {
		for j, i := range f.at {
			out[i] = f.out[j]
		}
	}
	s.h.top.record(s, f.now, f.reqs, f.out)
	s.writeOutcomes(q.kinds, q.cmds, q.reqs, out)
	f.reqs, f.out = nil, nil
}

// decideResolved carries out the queued decisions but those of the
// RL.CHECKs resolveChecks refused, which answer their errors instead. Not
// the hot path: it copies the queue.
func (s *session) decideResolved(out []algorithms.Outcome) {
	q := &s.queue
	refused := make([]bool, len(q.reqs))
	for _, pc := range q.chk.pending {
		if pc.err != nil {
			refused[pc.at] = true
			out[pc.at] = algorithms.Outcome{Err: pc.err}
		}
	}
	var reqs []algorithms.Request
	var at []int
	for i := range q.reqs {
		if !refused[i] {
			reqs = append(reqs, q.reqs[i])
			at = append(at, i)
		}
	}
	if len(reqs) == 0 {
		return
	}
	decided := make([]algorithms.Outcome, len(reqs))
	s.decide(reqs, decided)
	for j, i := range at {
		out[i] = decided[j]
	}
}

// outcomes returns the queue's scratch for n outcomes.
func (s *session) outcomes(n int) []algorithms.Outcome {
	q := &s.queue
	if cap(q.outs) < n {
		q.outs = make([]algorithms.Outcome, n, 2*n)
	}
	return q.outs[:n]
}

// writeOutcomes writes the replies of decision items of these kinds,
// queued by these commands (queue.cmds), whose requests are reqs and
// outcomes out: one reply per item, one for a whole RL.ALL group. Each
// item's decision and error count for the command that queued it. With the
// append-only log on, a reply that acknowledges a change is noted (ack) so
// that the batch's syncLog can take it back if the change cannot be made
// durable.
func (s *session) writeOutcomes(kinds []deferKind, cmds []uint16, reqs []algorithms.Request, out []algorithms.Outcome) {
	running := s.curCmd // a command that carries the queue out before its own work
	logged := s.h.cfg.AppendOnly != nil
	for i := 0; i < len(kinds); {
		s.cur = 0
		if c := cmds[i]; c != 0 {
			s.cur = s.slotFor(statList[c-1]) + 1
		}
		at := len(s.conn.Out)
		j := s.writeItem(kinds, out, i)
		if logged && changed(reqs[i:j], out[i:j]) {
			s.ack(at)
		}
		i = j
	}
	s.restoreSlot(running)
}

// changed reports whether a decision item with these requests and outcomes
// changed state: every request admitted (a group is all or nothing), at
// least one not a peek.
func changed(reqs []algorithms.Request, out []algorithms.Outcome) bool {
	taken := false
	for k := range reqs {
		if out[k].Err != nil || !out[k].Result.Allowed {
			return false
		}
		taken = taken || reqs[k].N != 0
	}
	return taken
}

// writeItem writes the reply of the decision item at i of kinds (with the
// members of an RL.ALL group or a several-pair RL.CHECK) and returns the
// index of the next item.
func (s *session) writeItem(kinds []deferKind, out []algorithms.Outcome, i int) int {
	n := len(kinds)
	switch kind := kinds[i]; kind {
	case kindAll:
		j := i + 1
		for j < n && kinds[j] == kindAllMember {
			j++
		}
		s.writeAll(out[i:j])
		return j
	case kindCheckAll:
		j := i + 1
		for j < n && kinds[j] == kindCheckAllMember {
			j++
		}
		c := s.queue.chk
		s.writeCheckAll(out[i:j], c.items[c.next:c.next+j-i])
		c.next += j - i
		return j
	case kindCheck:
		c := s.queue.chk
		item := &c.items[c.next]
		c.next++
		if out[i].Err != nil {
			s.writeError(out[i].Err)
		} else {
			s.writeCheck(item, &out[i].Result)
		}
	case kindRelease:
		if out[i].Err != nil {
			s.writeError(out[i].Err)
		} else {
			s.writeReleased(out[i].Result.Allowed)
		}
	default:
		if out[i].Err != nil {
			s.writeError(out[i].Err)
			break
		}
		s.countDecision(out[i].Result.Allowed)
		switch kind {
		case kindThrottle:
			s.writeThrottle(&out[i].Result)
		case kindTake:
			s.writeTake(&out[i].Result)
		default:
			s.writeDecision(&out[i].Result)
		}
	}
	return i + 1
}

// decide carries out reqs: through the keyspace, except that a READONLY
// connection's peeks are answered from this node's own state.
func (s *session) decide(reqs []algorithms.Request, out []algorithms.Outcome) {
	cl := s.h.cfg.Cluster
	now := s.conn.Now()
	if !s.readonly || cl == nil {
		s.h.ks.Decide(now, reqs, out)
		s.h.top.record(s, now, reqs, out)
		return
	}
	var rest []algorithms.Request
	var restIdx []int
	for i := range reqs {
		r := &reqs[i]
		if r.N == 0 && r.Group == 0 {
			cl.LocalDecide(reqs[i:i+1], out[i:i+1])
			continue
		}
		rest = append(rest, *r)
		restIdx = append(restIdx, i)
	}
	if len(rest) == 0 {
		return
	}
	restOut := make([]algorithms.Outcome, len(rest))
	s.h.ks.Decide(now, rest, restOut)
	for j, i := range restIdx {
		out[i] = restOut[j]
	}
	s.h.top.record(s, now, rest, restOut)
}

// runForwards carries out the queued forwards through the cluster and
// writes their replies.
func (s *session) runForwards() {
	q := &s.queue
	replies, errs := s.h.cfg.Cluster.Forward(s.conn.Now(), q.blobs)
	for i := range q.blobs {
		if errs[i] != nil {
			s.writeError(errs[i])
			continue
		}
		s.writeBulk(replies[i])
	}
}

// nextGroup returns a group number for an RL.ALL, never 0 and never the
// previous one.
func (s *session) nextGroup() int32 {
	s.group++
	if s.group <= 0 {
		s.group = 1
	}
	return s.group
}

// rejectDecision answers a decision whose arguments are wrong, after the
// work queued before it.
func (s *session) rejectDecision(err error) {
	if s.runDeferred(); s.inFlight {
		s.readAgain() // once the queue's replies are in
		return
	}
	s.writeError(err)
}
