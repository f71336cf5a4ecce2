package commands

import (
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluice-rl/sluice/algorithms"
)

const (
	initialIn   = 16 << 10 // a client's read buffer to begin with, and to shrink back to
	flushAtOut  = 64 << 10 // flush replies early past this many bytes, to bound memory
	maxKeptOut  = 1 << 20  // output buffers larger than this are dropped after a flush
	maxNameSize = 1 << 10
	maxKeptArgs = 1 << 10 // argument tables larger than this are dropped after their batch
)

// Client is one connection and its session state. Only its own goroutine
// touches the buffers; the fields that CLIENT LIST and INFO read from other
// goroutines are atomics or guarded by mu.
type Client struct {
	srv  *Server
	conn net.Conn // nil when an event loop serves the client
	id   int64

	// Served by an event loop (Linux): the descriptor, the loop, the part of
	// out already written, whether the rest waits for room in the socket,
	// and the loop's clock at the last byte read or written.
	fd      int
	loop    *eventLoop
	outOff  int
	waiting bool
	lastIO  int64

	addr, laddr string
	listFD      int // the socket's descriptor for CLIENT LIST, -1 if it has none; set before the client is listed
	created     time.Time
	local       bool // connected over loopback

	mu      sync.Mutex // guards name, libName, libVer
	name    string
	libName string
	libVer  string

	resp3    atomic.Bool
	authed   bool
	closing  bool     // QUIT or a protocol error: close after this batch's flush
	inline   bool     // the command being run came as an inline line
	readonly bool     // READONLY: peeks answered from this node's own state
	prevCmd  *command // the command run last, looked up first

	// The last rate parsed and its interval (see rate).
	lastRate   []byte
	lastRateNS int64

	// One batch: input, arguments, the instant read for it, replies.
	in         []byte
	start, end int
	args       [][]byte
	rs         readState // a multibulk command still arriving
	scratch    []byte
	now        int64
	out        []byte

	// Forwarded submissions of this batch not yet carried out (RAFT.FORWARD).
	forwards [][]byte

	// Decisions of this batch not yet carried out, with how to reply.
	pending  []algorithms.Request
	replies  []replyShape
	outcomes []algorithms.Outcome
	group    int32 // the last RL.ALL group number handed out

	// Counters of the batch being run, added to the totals once per batch.
	errors, allowed, denied int64
	totals                  clientTotals
	lastCmd                 atomic.Int64 // unix ns of the last batch, for CLIENT LIST idle=

	// Memory accounting (client_memory.go): the footprint, query buffer and
	// output buffer as last accounted. Written by the client's owner with
	// srv.mu held, read by anyone.
	mem, memIn, memOut atomic.Int64
	noEvict            atomic.Bool // CLIENT NO-EVICT on
	evicted            bool        // chosen by maxmemory-clients; guarded by srv.mu
}

// clientTotals are a client's counters, read by INFO from other goroutines.
type clientTotals struct {
	cmds, errors, allowed, denied atomic.Int64
	netIn, netOut                 atomic.Int64 // bytes read and written
}

// replyShape says how a pending decision's outcome is written.
type replyShape uint8

const (
	shapeDecision  replyShape = iota // the five fields of every RL.* decision
	shapeThrottle                    // CL.THROTTLE: redis-cell's five integers, in seconds
	shapeRelease                     // RL.RELEASE: 1 if a lease was released, else 0
	shapeAll                         // the first request of an RL.ALL: the whole group's reply
	shapeAllMember                   // the group's other requests, answered with the first
)

// connFD returns the descriptor of nc's socket, or -1 if it has none (a
// test's fake connection).
func connFD(nc net.Conn) int {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return -1
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1
	}
	fd := -1
	if rc.Control(func(f uintptr) { fd = int(f) }) != nil {
		return -1
	}
	return fd
}

func newClient(s *Server, nc net.Conn, id int64) *Client {
	c := &Client{
		srv:      s,
		conn:     nc,
		fd:       -1,
		id:       id,
		addr:     nc.RemoteAddr().String(),
		laddr:    nc.LocalAddr().String(),
		listFD:   connFD(nc),
		created:  time.Now(),
		authed:   s.cfg.Password == "",
		in:       make([]byte, initialIn),
		lastRate: make([]byte, 0, 32),
	}
	if ta, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		c.local = ta.IP.IsLoopback()
	} else if nc.RemoteAddr().Network() == "unix" {
		c.local = true
	}
	c.lastCmd.Store(time.Now().UnixNano())
	return c
}

// serve is the client's goroutine: read, run the batch, flush, repeat.
func (c *Client) serve() {
	defer c.srv.removeClient(c)
	defer c.conn.Close()
	defer func() {
		if p := recover(); p != nil {
			c.srv.stats.panics.Add(1)
			c.srv.log.Error("panic while serving a client; closing it",
				"client", c.id, "addr", c.addr, "panic", p, "stack", string(debug.Stack()))
			c.out = append(c.out[:0], "-ERR internal error while running the command; closing the connection\r\n"...)
			c.conn.SetWriteDeadline(time.Now().Add(time.Second))
			c.conn.Write(c.out)
		}
	}()
	timeout := c.srv.cfg.IdleTimeout
	for !c.closing {
		if err := c.makeRoom(); err == errClientEvicted {
			return
		} else if err != nil {
			c.protocolError(err)
			c.flushOut()
			return
		}
		if timeout > 0 {
			c.conn.SetReadDeadline(time.Now().Add(timeout))
		}
		n, err := c.conn.Read(c.in[c.end:])
		if n > 0 {
			c.end += n
			c.totals.netIn.Add(int64(n))
			c.runBatch()
			if c.settle(0) == errClientEvicted || !c.flushOut() {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// kill closes the client once the batch it may be running is done.
func (c *Client) kill() {
	if c.loop != nil {
		c.loop.kill(c)
		return
	}
	c.conn.SetReadDeadline(time.Now()) // its goroutine finishes its batch and leaves
}

// makeRoom makes space to read into: it moves an unfinished command to the
// front of the buffer, grows the buffer up to the query buffer limit, and
// shrinks a buffer that an earlier large command left behind; and it
// accounts the client's memory (see settle). It returns
// errProtoQueryBufLimit if the unfinished command already fills the limit,
// and errClientEvicted if the client is to be closed for maxmemory-clients.
func (c *Client) makeRoom() error {
	if c.start == c.end {
		c.shrinkIn()
		return c.settle(0)
	}
	if c.end < len(c.in) {
		return c.settle(0)
	}
	c.rs.moved = true // the unfinished command is about to move
	if c.start > 0 {
		c.end = copy(c.in, c.in[c.start:c.end])
		c.start = 0
		return c.settle(0)
	}
	if len(c.in) >= c.srv.cfg.QueryBufferLimit {
		return errProtoQueryBufLimit
	}
	size := min(2*len(c.in), c.srv.cfg.QueryBufferLimit)
	if err := c.settle(int64(size - len(c.in))); err != nil {
		return err // accounted before it is allocated: the eviction runs first
	}
	grown := make([]byte, size)
	copy(grown, c.in[:c.end])
	c.in = grown
	return nil
}

// shrinkIn empties the query buffer, which must hold no unread input, and
// gives back one that a large command grew.
func (c *Client) shrinkIn() {
	c.start, c.end = 0, 0
	if len(c.in) > initialIn {
		c.in = make([]byte, initialIn)
		clear(c.args[:cap(c.args)]) // they point into the old buffer and would keep it alive
	}
}

// runBatch runs every complete command in the input with one clock read.
func (c *Client) runBatch() {
	c.now = c.srv.clock.Now()
	c.lastCmd.Store(c.now)
	lim := &c.srv.cfg.Limits
	var ran int64
	for c.start < c.end && !c.closing && !c.waiting {
		buf := c.in[c.start:c.end]
		args, used, err := readCommandFrom(buf, c.args, &c.scratch, lim, !c.authed, &c.rs)
		c.args = args
		if err != nil {
			c.protocolError(err)
			break
		}
		if used == 0 {
			break // the rest has not arrived yet
		}
		c.start += used
		if len(args) == 0 {
			continue
		}
		c.inline = buf[0] != '*'
		c.exec(args)
		ran++
		if c.inline {
			c.runPending() // inline arguments live in scratch, which the next line reuses
		}
		if len(c.out) > flushAtOut {
			c.runPending()
			if !c.flushOut() {
				c.closing = true
			}
		}
	}
	c.runPending()
	c.runForwards()
	c.addTotals(ran)
	if cap(c.args) > maxKeptArgs && c.rs.count == 0 {
		c.args, c.rs.offs = nil, nil // one huge command does not pin its argument table
	}
	if c.start == c.end {
		c.shrinkIn() // now, not at the next read: an event loop may not read this client again for long
	}
}

// addTotals publishes the batch's counters: a few uncontended atomic adds
// per batch rather than per command.
func (c *Client) addTotals(ran int64) {
	if ran > 0 {
		c.totals.cmds.Add(ran)
	}
	if c.errors > 0 {
		c.totals.errors.Add(c.errors)
		c.errors = 0
	}
	if c.allowed > 0 {
		c.totals.allowed.Add(c.allowed)
		c.allowed = 0
	}
	if c.denied > 0 {
		c.totals.denied.Add(c.denied)
		c.denied = 0
	}
}

// protocolError answers a broken frame as Redis does: the error, then the
// connection is closed once it is flushed.
func (c *Client) protocolError(err error) {
	c.runPending()
	c.runForwards()
	c.writeError(err)
	c.closing = true
	c.srv.stats.protoErrors.Add(1)
	c.srv.log.Debug("protocol error; closing client", "client", c.id, "addr", c.addr, "err", err)
}

// exec runs one command: lookup, arity and authentication checks, then the
// handler. Decisions are queued and carried out together by runPending;
// every other command first lets the queued ones finish, so replies keep
// their order.
func (c *Client) exec(args [][]byte) {
	cmd := c.lookup(args[0])
	if cmd == nil || cmd.flags&flagForward == 0 {
		c.runForwards()
	}
	if cmd == nil {
		c.runPending()
		c.writeError(errUnknownCommand(args))
		return
	}
	if !c.authed && cmd.flags&flagNoAuth == 0 {
		c.runPending()
		c.writeError(errNoAuth)
		return
	}
	if !cmd.arityOK(len(args)) {
		c.runPending()
		c.writeError(errWrongArgs(cmd.name))
		return
	}
	if cmd.flags&flagDecision == 0 {
		c.runPending()
	}
	cmd.run(c, args)
}

// lookup finds a command, trying first the one the client ran last: a
// pipeline mostly repeats one command.
func (c *Client) lookup(name []byte) *command {
	if p := c.prevCmd; p != nil && equalFold(name, p.name) {
		return p
	}
	cmd := lookupCommand(name)
	if cmd != nil {
		c.prevCmd = cmd
	}
	return cmd
}

// queue adds a decision to the batch's pending ones.
func (c *Client) queue(req algorithms.Request, shape replyShape) {
	c.pending = append(c.pending, req)
	c.replies = append(c.replies, shape)
}

// nextGroup returns a group number for an RL.ALL, never 0 and never the
// previous one.
func (c *Client) nextGroup() int32 {
	c.group++
	if c.group <= 0 {
		c.group = 1
	}
	return c.group
}

// runPending carries out the queued decisions in one call to the keyspace
// and writes their replies.
func (c *Client) runPending() {
	n := len(c.pending)
	if n == 0 {
		return
	}
	if cap(c.outcomes) < n {
		c.outcomes = make([]algorithms.Outcome, n, 2*n)
	}
	out := c.outcomes[:n]
	c.decide(out)
	for i := 0; i < n; i++ {
		shape := c.replies[i]
		if shape == shapeAll {
			j := i + 1
			for j < n && c.replies[j] == shapeAllMember {
				j++
			}
			c.writeAll(out[i:j])
			i = j - 1
			continue
		}
		if out[i].Err != nil {
			c.writeError(out[i].Err)
			continue
		}
		if shape == shapeRelease {
			c.writeReleased(out[i].Result.Allowed)
			continue
		}
		if out[i].Result.Allowed {
			c.allowed++
		} else {
			c.denied++
		}
		if shape == shapeThrottle {
			c.writeThrottle(&out[i].Result)
		} else {
			c.writeDecision(&out[i].Result)
		}
	}
	clear(c.pending) // drop references into the input buffer
	c.pending = c.pending[:0]
	c.replies = c.replies[:0]
}

// flushOut writes the replies. It reports false if the connection is gone.
// On an event loop it writes what the socket takes and leaves the rest
// waiting (see writeOut).
func (c *Client) flushOut() bool {
	if c.loop != nil {
		return c.writeOut()
	}
	if len(c.out) == 0 {
		return true
	}
	if t := c.srv.cfg.IdleTimeout; t > 0 {
		c.conn.SetWriteDeadline(time.Now().Add(t)) // a client that reads no replies is idle too
	}
	n, err := c.conn.Write(c.out)
	c.totals.netOut.Add(int64(n))
	if cap(c.out) > maxKeptOut {
		c.out = nil
	} else {
		c.out = c.out[:0]
	}
	return err == nil
}
