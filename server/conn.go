package server

import (
	"net"
	"sync/atomic"
	"syscall"
	"time"
)

// Conn is one client connection: its socket, its buffers and the batch
// being run. A Handler gets what it needs through Out and the methods
// below; everything else is the transport's.
//
// Only the connection's owner (its event loop or its goroutine, and the
// Handler calls they make) touches Out, the batch and the buffers. The
// methods that say so may be called from any goroutine.
type Conn struct {
	// Out holds the replies of the batch being run. The Handler appends to
	// it (redcon's Append functions, or its own); the transport writes it
	// after EndBatch and empties it. A Handler never shortens it.
	Out []byte

	srv     *Server
	id      int64
	now     int64 // the batch's instant, read once per batch
	session any   // the Handler's, set by Open
	closing bool  // close once the replies are written
	unauth  bool  // the reader's strict limits, for clients that have not authenticated

	// The socket: conn for a goroutine's client; fd, loop and the write
	// state for an event loop's; neither for a loopback one (loopback.go).
	conn     net.Conn
	fd       int
	loop     *eventLoop
	lane     int         // the index of its event loop, -1 for a goroutine's or a loopback client
	outOff   int         // the part of Out already written, while waiting
	waiting  bool        // the rest of Out waits for room in the socket
	unsent   bool        // an event loop holds it in its list of replies to write at the end of the wake-up (loop_linux.go)
	lastIO   int64       // the loop's clock at the last byte read or written
	panicked bool        // the handler panicked: write the error and close
	hungUp   bool        // a loopback connection after Hangup
	killed   atomic.Bool // CLIENT KILL or Shutdown: close after the batch in hand
	sink     []byte      // a loopback connection's written replies

	addr, laddr string
	listFD      int // the socket's descriptor for CLIENT LIST, -1 if none; set before the client is listed
	created     time.Time
	local       bool // connected over loopback

	// Input: the read buffer and the part of it not yet run, the parsed
	// arguments, and a multibulk command still arriving.
	in         []byte
	start, end int
	args       [][]byte
	rs         readState
	scratch    []byte

	lastBatch     atomic.Int64 // the instant of the last batch, for CLIENT LIST idle=
	netIn, netOut atomic.Int64 // bytes read and written
	reads, writes atomic.Int64 // reads and writes that moved bytes (INFO total_reads_processed, total_writes_processed)

	// Memory accounting (memory.go): the session's bytes as the Handler
	// last reported them (owner only); the footprint, query buffer and
	// output buffer as last accounted, written by the owner with srv.mu
	// held and read by anyone; CLIENT NO-EVICT; and whether
	// maxmemory-clients chose the connection (guarded by srv.mu).
	sessionBytes       int64
	mem, memIn, memOut atomic.Int64
	noEvict            atomic.Bool
	evicted            bool

	push   pushState // bytes other goroutines hand it to write (push.go)
	parked bool      // the Handler parked the command in hand (park.go); owner only

	// Waiting without blocking a loop (suspend.go); owner only but
	// loopWaits and resumed.
	inCommand bool          // a Command call is running
	rewind    bool          // the command in hand was not run: read it again
	suspended bool          // the batch waits for Resume
	handOff   bool          // the Handler asked for a goroutine that may wait
	handedOff bool          // an event loop's connection whose batch runs on a goroutine of its own
	disarmed  bool          // the loop turned the descriptor's events off while the batch waits
	pushLater bool          // pushes arrived while the batch waited: deliver them at Resume
	loopWaits atomic.Bool   // Resume goes to the event loop (else to resumed)
	resumed   chan struct{} // Resume of a connection that waits where it is
}

// Lane returns the index of the event loop that serves the connection
// (0 ≤ Lane < Stats().EventLoops), or -1 if it has a goroutine of its own
// (for the batch, during a HandOff). A Handler can keep per-loop figures in plain memory indexed by it: the
// calls for one lane never run concurrently.
func (c *Conn) Lane() int {
	if c.handedOff {
		return -1 // its calls run beside the loop's (HandOff)
	}
	return c.lane
}

// ID returns the connection's id, unique for the server's life (CLIENT ID).
// Any goroutine.
func (c *Conn) ID() int64 { return c.id }

// Now returns the instant of the batch being run, in unix nanoseconds: the
// Clock read once for the whole batch.
func (c *Conn) Now() int64 { return c.now }

// SetNow changes the batch's instant for the commands after this one (DEBUG
// CLOCK: the rest of the batch runs at the clock just set).
func (c *Conn) SetNow(ns int64) { c.now = ns }

// Session returns what the Handler's Open stored. Any goroutine: it is set
// before the connection is listed and never changes.
func (c *Conn) Session() any { return c.session }

// SetSession stores the Handler's state for the connection; call it in Open.
func (c *Conn) SetSession(s any) { c.session = s }

// RemoteAddr and LocalAddr return the client's and the server's address of
// the connection, as host:port. Any goroutine.
func (c *Conn) RemoteAddr() string { return c.addr }
func (c *Conn) LocalAddr() string  { return c.laddr }

// Loopback reports whether the client connected over a loopback address (or
// a unix socket). Any goroutine.
func (c *Conn) Loopback() bool { return c.local }

// CloseAfterReply has the connection closed once the replies so far are
// written; the commands of the batch that follow are not run.
func (c *Conn) CloseAfterReply() { c.closing = true }

// SetUnauthenticated turns the reader's strict limits on or off: Redis
// allows a client that has not authenticated at most 10 arguments and
// bulks of 16 KiB. The Handler turns them on in Open when a password is
// required and off when the client authenticates; they apply from the
// next command.
func (c *Conn) SetUnauthenticated(on bool) { c.unauth = on }

// SetSessionBytes tells the transport how many bytes the Handler holds for
// the connection, so that they count towards maxmemory-clients with the
// connection's own buffers. The Handler calls it in Open and EndBatch; it
// is accounted after the batch.
func (c *Conn) SetSessionBytes(n int64) { c.sessionBytes = n }

// SetNoEvict exempts the connection from maxmemory-clients, or makes it
// evictable again (CLIENT NO-EVICT). Turned off, the connection may be
// chosen at once if the clients are over the cap; it is then closed after
// this batch's replies.
func (c *Conn) SetNoEvict(on bool) {
	c.noEvict.Store(on)
	if !on && c.srv.evictNow(c) {
		c.closing = true
	}
}

// ConnInfo is what CLIENT LIST and CLIENT INFO show of a connection's
// transport side.
type ConnInfo struct {
	ID           int64
	Addr, LAddr  string
	FD           int       // the socket's descriptor, -1 if none
	Created      time.Time // when it was accepted
	LastBatch    int64     // the Clock's instant of its last batch, unix ns
	QueryBuffer  int64     // bytes of its read buffer, as last accounted
	OutputBuffer int64     // bytes of its reply buffer, as last accounted
	Memory       int64     // its whole footprint, session included
	NoEvict      bool      // CLIENT NO-EVICT on
}

// Info returns the connection's ConnInfo. Any goroutine.
func (c *Conn) Info() ConnInfo {
	return ConnInfo{
		ID: c.id, Addr: c.addr, LAddr: c.laddr, FD: c.listFD, Created: c.created,
		LastBatch: c.lastBatch.Load(), QueryBuffer: c.memIn.Load(), OutputBuffer: c.memOut.Load(),
		Memory: c.mem.Load(), NoEvict: c.noEvict.Load(),
	}
}

// newConn returns the state of a connection accepted as nc; the caller
// hands it to a loop or a goroutine.
func newConn(s *Server, nc net.Conn, id int64) *Conn {
	c := &Conn{
		srv:     s,
		conn:    nc,
		fd:      -1,
		lane:    -1,
		id:      id,
		listFD:  -1,
		created: time.Now(),
		in:      make([]byte, initialIn),
	}
	if nc != nil {
		c.addr, c.laddr, c.listFD = nc.RemoteAddr().String(), nc.LocalAddr().String(), connFD(underlying(nc))
		if ta, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
			c.local = ta.IP.IsLoopback()
		} else if nc.RemoteAddr().Network() == "unix" {
			c.local = true
		}
	}
	c.lastBatch.Store(s.clock.Now())
	return c
}

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

// kill closes c, from any goroutine, once the batch it may be running is
// done (CLIENT KILL, Shutdown).
func (c *Conn) kill() {
	c.killed.Store(true) // a goroutine's client checks it before each read, a loopback one in Feed
	switch {
	case c.loop != nil:
		c.loop.kill(c)
	case c.conn != nil:
		c.conn.SetReadDeadline(time.Now()) // a read in progress returns
	}
}

// evict closes c from any goroutine, dropping whatever it was doing: an
// evicted client gets no reply, as in Redis.
func (c *Conn) evict() {
	switch {
	case c.loop != nil:
		c.loop.kill(c)
	case c.conn != nil:
		c.conn.Close() // its goroutine's read or write fails, and it leaves
	default:
		c.killed.Store(true)
	}
}
