package commands

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/sluice-rl/sluice/acl"
	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/compat"
	"github.com/sluice-rl/sluice/server"
)

const maxNameSize = 1 << 10 // CLIENT SETNAME, SETINFO

// session is one connection as the commands see it: who the client is, how
// it speaks, and the work its batch has deferred. Only the connection's
// owner touches it, except the fields that CLIENT LIST and INFO read from
// other goroutines: those are atomics or guarded by mu.
type session struct {
	h    *Handler
	conn *server.Conn

	mu sync.Mutex // guards name, libName, libVer, and user's changes

	name    string
	libName string
	libVer  string

	resp3    atomic.Bool
	authed   bool
	refused  bool                    // protected mode refuses the connection (acl_wiring.go)
	user     *acl.User               // the ACL user the connection runs as (acl_wiring.go); written under mu
	readonly bool                    // READONLY: peeks answered from this node's own state
	onMeta   bool                    // a META.* command runs: cluster() is the meta group's (cmd_meta.go)
	proxied  bool                    // CLUSTER PROXIED: a --cluster-proxy node's connection, never proxied again (route.go)
	prevCmd  *command                // the command run last, looked up first
	ran      *command                // the statList entry of the command run last (its subcommand's)
	shown    atomic.Pointer[command] // ran as of the last batch's end, for CLIENT LIST's cmd=

	// The last rate parsed and its interval (see rate).
	lastRate   []byte
	lastRateNS int64

	queue    deferred // the batch's deferred work (deferred.go)
	inFlight bool     // the queue's decisions are with the keyspace (decideAsync)
	resume   func()   // conn.Resume, made once
	// replay says that the command the transport reads next was logged
	// (MONITOR, ACL LOG) before it was read again (readAgain); quiet, that
	// the one in hand was, so that logging it again is skipped.
	replay, quiet bool
	acks          []ackSpan    // the batch's replies that acknowledge a change (durable.go)
	tx            txState      // MULTI's queue and WATCH's keys (cmd_tx.go)
	call          *compat.Call // scratch of EVAL and the string commands, made at the first (cmd_scripts.go)

	lastScript *compat.Script // the script EVALSHA found last, tried first
	named      bool           // CLIENT NAMED-REPLY ON: decisions answer with named fields
	monitoring bool           // MONITOR: the others' commands are pushed to it (owner only; h.mon lists it)
	group      int32          // the last RL.ALL group number handed out

	// Counters of the batch being run, added to totals once per batch.
	cmds, errors, allowed, denied int64
	totals                        totals

	// The batch's per-command counters (cmdstats.go): its slots, the one
	// of the command running (nil while none is), and when the batch
	// began (Clock.batchStart, 0 before its first command).
	slots      [statSlots]cmdSlot
	nslots     int
	cur        int // the running command's slot, plus one (0: none)
	last       int // the slot found last, tried first, plus one
	curCmd     int // the running command's index in statList, plus one
	batchStart int64
}

// totals are a session's counters (and, summed, the Handler's), read by
// INFO from other goroutines.
type totals struct {
	cmds, errors, allowed, denied atomic.Int64
}

func (t *totals) add(o *totals) {
	t.cmds.Add(o.cmds.Load())
	t.errors.Add(o.errors.Load())
	t.allowed.Add(o.allowed.Load())
	t.denied.Add(o.denied.Load())
}

func newSession(h *Handler, c *server.Conn) *session {
	return &session{
		h:        h,
		conn:     c,
		authed:   !h.acl.users.NeedsAuth(),
		user:     h.acl.users.Default(),
		lastRate: make([]byte, 0, 32),
	}
}

// exec runs one command: lookup, arity and authentication checks, then the
// handler. A command that cannot join the deferred work queued so far
// first has that work carried out, so replies keep their order (see
// deferred).
func (s *session) exec(args [][]byte) {
	s.cmds++
	if s.refused {
		s.refuse()
		return
	}
	if s.batchStart == 0 {
		s.batchStart = s.h.clock.batchStart(s.conn.Now())
	}
	cmd := s.lookup(args[0])
	if s.h.pause.until.Load() != 0 && s.h.pause.parks(cmd) {
		s.cmds--
		s.conn.Park() // read again once the pause ends (client_pause.go)
		return
	}
	if s.h.waits && !s.conn.MayWait() && !s.decidesOnLoop(cmd) {
		s.cmds--
		s.conn.HandOff() // read again on a goroutine that may wait for the log
		return
	}
	s.quiet, s.replay = s.replay, false
	if cmd != nil && s.h.mon.n.Load() != 0 && !s.quiet {
		s.h.feedMonitors(s, cmd, args) // cmd_monitor.go
	}
	if s.tx.active {
		s.queueTx(cmd, args)
		return
	}
	if cmd == nil {
		s.runDeferred()
		s.writeError(errUnknownCommand(args))
		return
	}
	stat := cmd.statFor(args)
	s.ran = stat
	var reject error
	switch {
	case !s.authed && cmd.flags&flagNoAuth == 0:
		reject = errNoAuth
	case !cmd.arityOK(len(args)):
		reject = errWrongArgs(cmd.name)
	default:
		reject = s.permError(cmd, args, acl.Toplevel) // nil at once for a user allowed everything
	}
	if reject == nil && cmd.flags&flagWrite != 0 && cmd.class != classDecision {
		reject = s.h.writeRefusal() // a decision's refusal is the keyspace's, for its peeks to answer
	}
	proxySlot := -1
	if reject == nil && s.h.cfg.Router != nil {
		proxySlot, reject = s.route(cmd, args) // route.go
	}
	if reject != nil || s.queue.class != cmd.class {
		if s.runDeferred(); s.inFlight {
			s.readAgain() // once the queue's replies are in (server.Conn.Suspend)
			return
		}
	}
	if proxySlot >= 0 && !s.conn.MayWait() {
		s.readAgain()
		s.conn.HandOff() // the slot's owner answers over the network
		return
	}
	sl := s.slotFor(stat) // after runDeferred, which may flush the slots
	if proxySlot >= 0 {
		s.slots[sl].calls++
		s.proxy(cmd, proxySlot, args)
		return
	}
	if reject != nil {
		s.slots[sl].rejected++
		s.writeError(reject)
		return
	}
	s.cur, s.curCmd = sl+1, stat.idx+1
	s.slots[sl].calls++
	at := len(s.conn.Out)
	cmd.run(s, args)
	if cmd.flags&flagWrite != 0 && cmd.class == classNone && s.h.cfg.AppendOnly != nil {
		s.ack(at) // its one reply, written now (the queue is empty: see deferred)
	}
	s.cur, s.curCmd = 0, 0
}

// decidesOnLoop reports whether cmd runs on an event loop of a node whose
// commands wait: a decision, when the keyspace decides without waiting
// (AsyncDecider) and the connection is not READONLY (whose peeks are
// answered here, around the log), outside MULTI (whose queued RL.CHECK
// looks its policy up at once, which may wait for the meta group). Every
// other command is handed to a goroutine.
func (s *session) decidesOnLoop(cmd *command) bool {
	return cmd != nil && cmd.class == classDecision && s.h.async != nil && !s.readonly && !s.tx.active
}

// readAgain takes back the count of the command in hand, which the
// transport reads again after a Suspend or a HandOff during Command. It
// has been logged (MONITOR, ACL LOG) already: read again, it is not
// (s.replay).
func (s *session) readAgain() {
	s.cmds--
	if s.cur != 0 {
		s.slots[s.cur-1].calls--
	}
	s.replay = true
}

// lookup finds a command, trying first the one the client ran last: a
// pipeline mostly repeats one command.
func (s *session) lookup(name []byte) *command {
	if p := s.prevCmd; p != nil && equalFold(name, p.name) {
		return p
	}
	cmd := s.h.lookupCommand(name)
	if cmd != nil {
		s.prevCmd = cmd
	}
	return cmd
}

// endBatch carries out the deferred work, publishes the batch's counters
// and tells the transport what the session holds.
func (s *session) endBatch() {
	if s.runDeferred(); s.inFlight {
		return // the transport calls again once the decisions are in
	}
	s.syncLog()
	s.flushStats() // after the log's sync: a batch's time includes it
	if p := s.ran; p != nil && p != s.shown.Load() {
		s.shown.Store(p)
	}
	s.publish()
	s.conn.SetSessionBytes(s.footprint())
}

// publish adds the batch's counters to the totals: a few uncontended
// atomic adds per batch rather than per command.
func (s *session) publish() {
	if s.cmds > 0 {
		s.totals.cmds.Add(s.cmds)
		s.cmds = 0
	}
	if s.errors > 0 {
		s.totals.errors.Add(s.errors)
		s.errors = 0
	}
	if s.allowed > 0 {
		s.totals.allowed.Add(s.allowed)
		s.allowed = 0
	}
	if s.denied > 0 {
		s.totals.denied.Add(s.denied)
		s.denied = 0
	}
}

// The sizes of a session and of the elements of its tables.
const (
	sessionSize = int64(unsafe.Sizeof(session{}))
	sliceSize   = int64(unsafe.Sizeof([]byte(nil)))
	requestSize = int64(unsafe.Sizeof(algorithms.Request{}))
	outcomeSize = int64(unsafe.Sizeof(algorithms.Outcome{}))
	queuedSize  = int64(unsafe.Sizeof(queuedCmd{}))
)

// footprint is the bytes the session holds, for maxmemory-clients.
func (s *session) footprint() int64 {
	q := &s.queue
	return sessionSize + int64(cap(s.lastRate)+cap(q.kinds)) + int64(cap(q.blobs))*sliceSize +
		int64(cap(q.reqs))*requestSize + int64(cap(q.cmds))*2 + int64(cap(q.outs))*outcomeSize +
		s.tx.bytes + int64(cap(s.tx.cmds))*queuedSize + s.callSize() + q.chk.size()
}

// callSize is what the scratch of scripts holds, once made.
func (s *session) callSize() int64 {
	if s.call == nil {
		return 0
	}
	return int64(unsafe.Sizeof(compat.Call{})) + int64(cap(s.call.Keys))*int64(unsafe.Sizeof(compat.Key{})) +
		int64(cap(s.call.Argv))*sliceSize
}
