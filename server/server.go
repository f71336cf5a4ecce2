package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluice-rl/sluice/internal/replyerr"
)

// Server accepts Redis-protocol clients and runs their commands through a
// Handler. Each client is served by an event loop (Config.EventLoops) or by
// its own goroutine; either reads whatever bytes have arrived, runs every
// complete command in them at one instant, and writes the replies once. A
// client that breaks the protocol or a limit gets an error and is closed; a
// panic while serving a client is recovered and closes that client only.
//
// Concurrency: every method is safe for concurrent use.
type Server struct {
	cfg   Config
	h     Handler
	clock Clock
	log   *slog.Logger

	mu     sync.Mutex
	lns    []net.Listener // as served (a TLS listener wraps its socket's)
	socks  []net.Listener // the sockets under lns, index for index
	deaf   bool           // StopListening ran: an accept error ends Serve quietly
	conns  map[int64]*Conn
	joins  int // connections admitted and not yet registered: they hold a place under maxclients
	closed bool
	wg     sync.WaitGroup
	loops  []*eventLoop // started by the first Serve, stopped by Shutdown

	// The clients' footprints (memory.go): the total, changed under mu and
	// read by anyone, and the part of it held by clients chosen for
	// eviction and not yet closed, guarded by mu.
	clientMem   atomic.Int64
	evictingMem int64

	nextID atomic.Int64
	stats  serverStats
	live   liveSettings // what CONFIG SET changes (live.go)
}

type serverStats struct {
	connections    atomic.Int64 // accepted connections
	rejected       atomic.Int64 // refused at maxclients
	protoErrors    atomic.Int64
	panics         atomic.Int64
	evictedClients atomic.Int64 // closed for maxmemory-clients
	// Bytes, reads and writes of connections that have left; Stats adds
	// the live ones'.
	netIn, netOut atomic.Int64
	reads, writes atomic.Int64
}

// errTooManyFiles is accept's error when the process is out of descriptors:
// a reason to back off and retry rather than stop serving.
var errTooManyFiles = syscall.EMFILE

// New returns a server that runs its clients' commands through h. It
// refuses a Config that Validate refuses. A Handler that may block
// (Blocker) is served with a goroutine per client.
func New(cfg Config, h Handler) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if h == nil {
		return nil, errNoHandler
	}
	if b, ok := h.(Blocker); ok && b.MayBlock() || !loopsSupported {
		cfg.EventLoops = 0
	}
	if cfg.Clock == nil {
		cfg.Clock = wallClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if idle := int64(cfg.MaxClients) * baseFootprint; cfg.MaxMemoryClients > 0 && idle > cfg.MaxMemoryClients {
		cfg.Logger.Warn("maxclients idle clients would hold more than maxmemory-clients: clients will be evicted before maxclients is reached",
			"maxclients", cfg.MaxClients, "idle_clients_memory", idle, "maxmemory_clients", cfg.MaxMemoryClients)
	}
	s := &Server{cfg: cfg, h: h, clock: cfg.Clock, log: cfg.Logger, conns: make(map[int64]*Conn)}
	s.live.init(&cfg)
	return s, nil
}

// EventLoops returns how many event loops serve the clients; 0 means a
// goroutine per client.
func (s *Server) EventLoops() int { return s.cfg.EventLoops }

// Serve accepts clients on ln until Shutdown. It returns nil after
// Shutdown and the accept error otherwise. It may be called for several
// listeners; they share the event loops.
func (s *Server) Serve(ln net.Listener) error { return s.serve(ln, ln) }

// serve is Serve for ln, whose socket is sock (ln itself, or the listener
// a TLS listener wraps).
func (s *Server) serve(ln, sock net.Listener) error {
	s.mu.Lock()
	if s.closed || s.deaf {
		s.mu.Unlock()
		return net.ErrClosed
	}
	s.lns = append(s.lns, ln)
	s.socks = append(s.socks, sock)
	if n := s.cfg.EventLoops; n > 0 && s.loops == nil {
		loops, err := startLoops(s, n)
		if err != nil {
			s.mu.Unlock()
			return err
		}
		s.loops = loops
	}
	s.mu.Unlock()

	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.isClosed() {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, errTooManyFiles) {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.log.Warn("accept failed; retrying", "err", err, "in", delay)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		s.accept(nc)
	}
}

func (s *Server) accept(nc net.Conn) {
	s.stats.connections.Add(1)
	if tc, ok := underlying(nc).(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	if !s.admit(nc) {
		nc.Close()
		return
	}
	c := newConn(s, nc, s.nextID.Add(1))
	if !c.open() {
		s.mu.Lock()
		s.joins--
		s.mu.Unlock()
		nc.Close()
		s.wg.Done()
		return
	}
	if len(s.loops) > 0 && !c.TLS() { // loops: set once, before the first accept
		if fd, err := detach(nc); err == nil {
			c.conn, c.fd, c.listFD = nil, fd, fd
			c.lane = int(c.id % int64(len(s.loops)))
			c.loop = s.loops[c.lane]
		} else {
			s.log.Warn("cannot hand the connection to an event loop; serving it from its own goroutine",
				"client", c.id, "err", err)
		}
	}
	victims := s.register(c, func() {
		if c.loop != nil {
			// Handed over under s.mu, so that Shutdown and CLIENT KILL find
			// the client either not yet listed or already queued on its loop.
			c.loop.add(c)
		}
	})
	s.closeEvicted(nil, victims)
	if c.loop == nil {
		go c.serve()
	}
}

// admit takes a place for a new client under maxclients, or answers nc
// that there is none. On true the caller registers the client (which
// releases the place for its entry in the list) and owes s.wg.Done, done
// by removeConn.
func (s *Server) admit(nc net.Conn) bool {
	s.mu.Lock()
	if s.closed || int64(len(s.conns)+s.joins) >= s.live.maxClients.Load() {
		closed := s.closed
		s.mu.Unlock()
		if !closed {
			s.stats.rejected.Add(1)
			nc.SetWriteDeadline(time.Now().Add(time.Second))
			nc.Write(replyerr.Append(nil, errMaxClients))
		}
		return false
	}
	s.joins++
	s.wg.Add(1)
	s.mu.Unlock()
	return true
}

// open runs the Handler's Open for c; false if it panicked.
func (c *Conn) open() (ok bool) {
	defer c.recoverHandler()
	c.srv.h.Open(c)
	return true
}

// register lists c, accounts its memory and runs then, all under s.mu. It
// returns the clients to evict for the memory c brings.
func (s *Server) register(c *Conn, then func()) []*Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.joins--
	s.conns[c.id] = c
	c.mem.Store(c.footprint())
	c.memIn.Store(int64(len(c.in)))
	s.clientMem.Add(c.mem.Load())
	victims := s.evictLocked()
	then()
	if s.closed { // Shutdown ran after admit: it did not see c
		c.kill()
	}
	return victims
}

// removeConn takes c off the list once its owner has closed it, publishes
// its byte counts and tells the Handler.
func (s *Server) removeConn(c *Conn) {
	s.mu.Lock()
	delete(s.conns, c.id)
	s.clientMem.Add(-c.mem.Load())
	if c.evicted {
		s.evictingMem -= c.mem.Load()
	}
	s.mu.Unlock()
	s.stats.netIn.Add(c.netIn.Load())
	s.stats.netOut.Add(c.netOut.Load())
	s.stats.reads.Add(c.reads.Load())
	s.stats.writes.Add(c.writes.Load())
	c.close()
	s.wg.Done()
}

// close runs the Handler's Close for c.
func (c *Conn) close() {
	defer c.recoverHandler()
	c.srv.h.Close(c)
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed || s.deaf
}

// StopListening closes the listeners, and returns once the kernel refuses
// new connections on their ports; the clients already connected go on
// being served. A process that leaves without Shutdown (after its final
// save) calls it first: otherwise the kernel may close a client's socket
// before the listener's, and a client that reconnects at once lands in the
// dying listener's backlog and is reset mid-handshake instead of being
// refused (node-redis 5.9.0 then reports ready on the reset socket and
// never answers again). A listener's Close alone is not enough: while a
// goroutine waits in Accept, the runtime defers the socket's close(2).
func (s *Server) StopListening() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deaf = true
	s.closeListenersLocked()
}

// closeListenersLocked takes every listening socket out of listening at
// once (refuseNew) and closes its listener. It requires s.mu.
func (s *Server) closeListenersLocked() {
	for i, ln := range s.lns {
		refuseNew(s.socks[i])
		ln.Close()
	}
}

// Shutdown stops accepting, lets every client finish the batch it is
// running, closes their connections and waits for their goroutines, or for
// ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.closeListenersLocked()
	for _, c := range s.conns {
		c.kill() // the batch in hand completes
	}
	loops := s.loops
	s.mu.Unlock()
	defer func() { // a loop closes the clients it still holds as it ends
		for _, l := range loops {
			l.shutdown()
			select {
			case <-l.done:
			case <-ctx.Done():
			}
		}
	}()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for _, c := range s.conns {
			if c.conn != nil {
				c.conn.Close()
			}
		}
		s.mu.Unlock()
		return ctx.Err()
	}
}

// Conns calls fn for every connection being served, in no set order, with
// no lock held. Only fn's use of the Conn's any-goroutine methods is safe.
func (s *Server) Conns(fn func(c *Conn)) {
	s.mu.Lock()
	list := make([]*Conn, 0, len(s.conns))
	for _, c := range s.conns {
		list = append(list, c)
	}
	s.mu.Unlock()
	for _, c := range list {
		fn(c)
	}
}

// Kill closes the connections with this id once the batch each may be
// running is done (CLIENT KILL ID), and returns how many there were. A
// connection that kills itself still gets its replies: its Handler also
// calls CloseAfterReply.
func (s *Server) Kill(id int64) int {
	s.mu.Lock()
	c := s.conns[id]
	s.mu.Unlock()
	if c == nil {
		return 0
	}
	c.kill()
	return 1
}

// port returns the port of the first listener, "0" before Serve.
func (s *Server) port() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.lns) == 0 {
		return "0"
	}
	addr := s.lns[0].Addr().String()
	return addr[strings.LastIndexByte(addr, ':')+1:]
}
