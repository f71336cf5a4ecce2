package server

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/redcon"
)

// The transport's tests run a fakeHandler: a few commands with Redis's
// replies, enough to drive every path of the transport without the
// commands package.
//
//	PING [msg]          +PONG, or msg
//	ECHO msg            msg
//	QUIT                +OK, then the connection closes
//	AUTH password       +OK (strict reader limits off) or -WRONGPASS
//	EXISTS key …        :0
//	CLIENT ID           :id
//	CLIENT KILL ID n    :1 or :0 (Server.Kill), and closes itself after the reply
//	NO-EVICT on|off     +OK (Conn.SetNoEvict)
//	NOW                 :the batch's instant
//	DEFER x             deferred to EndBatch: [:1 $x]
//	LATER x             deferred and carried out on another goroutine
//	                    (Conn.Suspend), released by the gate: $later:x
//	BLOCK               waits 1 ms, handed to a goroutine on an event
//	                    loop (Conn.HandOff): +blocked lane=Conn.Lane
//	PANIC               panics
//	SLEEP ms            holds the connection's loop or goroutine for ms, then +OK
//	WRITTEN             :bytes the server has written to every client so far
//
// With a password, every command but AUTH and QUIT answers NOAUTH until
// AUTH succeeds.
type fakeHandler struct {
	srv      *Server
	password string

	opened, closed atomic.Int64
	mu             sync.Mutex
	nows           []int64 // with record: the instant of every NOW, -1 for every EndBatch
	record         bool
	// gate, if set, holds LATER's work until a value is sent (or it is
	// closed); interleaved counts commands run while a connection's
	// LATER work was out.
	gate        chan struct{}
	interleaved atomic.Int64
	// suspended, if set, is sent a value each time a batch is suspended
	// for LATER's work (it must have room, or startLater waits).
	suspended chan struct{}
}

// fakeSession is a fakeHandler's per-connection state.
type fakeSession struct {
	authed   bool
	deferred [][]byte // DEFER's arguments, pointing into the transport's buffers until EndBatch
	later    [][]byte // LATER's arguments, as deferred
	out      atomic.Bool
}

// startLater suspends c and carries LATER's work out on another
// goroutine, which resumes c once the gate lets it.
func (h *fakeHandler) startLater(c *Conn, s *fakeSession) {
	s.out.Store(true)
	c.Suspend()
	if h.suspended != nil {
		h.suspended <- struct{}{}
	}
	go func() {
		if h.gate != nil {
			<-h.gate
		}
		c.Resume()
	}()
}

// landLater writes the replies of LATER's work, done.
func (h *fakeHandler) landLater(c *Conn, s *fakeSession) {
	for _, x := range s.later {
		c.Out = redcon.AppendBulkString(c.Out, "later:"+string(x))
	}
	s.later = s.later[:0]
	s.out.Store(false)
}

func (h *fakeHandler) Open(c *Conn) {
	h.opened.Add(1)
	s := &fakeSession{authed: h.password == ""}
	c.SetSession(s)
	c.SetUnauthenticated(!s.authed)
}

func (h *fakeHandler) Close(c *Conn) { h.closed.Add(1) }

func (h *fakeHandler) EndBatch(c *Conn) {
	s := c.Session().(*fakeSession)
	switch {
	case s.out.Load():
		h.landLater(c, s)
	case len(s.later) > 0:
		h.startLater(c, s)
		return
	}
	h.flush(c)
	if h.record {
		h.mu.Lock()
		h.nows = append(h.nows, -1)
		h.mu.Unlock()
	}
}

// flush writes the deferred replies.
func (h *fakeHandler) flush(c *Conn) {
	s := c.Session().(*fakeSession)
	for _, x := range s.deferred {
		c.Out = redcon.AppendArray(c.Out, 2)
		c.Out = redcon.AppendInt(c.Out, 1)
		c.Out = redcon.AppendBulk(c.Out, x)
	}
	s.deferred = s.deferred[:0]
}

func (h *fakeHandler) Command(c *Conn, args [][]byte) {
	s := c.Session().(*fakeSession)
	if s.out.Load() {
		h.interleaved.Add(1)
	}
	name := strings.ToUpper(string(args[0]))
	if name == "LATER" && len(args) == 2 {
		h.flush(c)
		s.later = append(s.later, args[1])
		return
	}
	if len(s.later) > 0 { // the LATER work first: this command is read again after it
		h.startLater(c, s)
		return
	}
	if name != "DEFER" {
		h.flush(c) // replies in order: the deferred ones first
	}
	if !s.authed && name != "AUTH" && name != "QUIT" {
		c.Out = redcon.AppendError(c.Out, "NOAUTH Authentication required.")
		return
	}
	switch {
	case name == "PING" && len(args) == 1:
		c.Out = redcon.AppendString(c.Out, "PONG")
	case name == "PING" || name == "ECHO":
		c.Out = redcon.AppendBulk(c.Out, args[len(args)-1])
	case name == "QUIT":
		c.Out = redcon.AppendOK(c.Out)
		c.CloseAfterReply()
	case name == "AUTH" && len(args) == 2:
		if string(args[1]) != h.password {
			c.Out = redcon.AppendError(c.Out, "WRONGPASS invalid username-password pair or user is disabled.")
			return
		}
		s.authed = true
		c.SetUnauthenticated(false)
		c.Out = redcon.AppendOK(c.Out)
	case name == "EXISTS":
		c.Out = redcon.AppendInt(c.Out, 0)
	case name == "CLIENT" && len(args) == 2 && strings.EqualFold(string(args[1]), "id"):
		c.Out = redcon.AppendInt(c.Out, c.ID())
	case name == "CLIENT" && len(args) == 4 && strings.EqualFold(string(args[1]), "kill"):
		id, _ := strconv.ParseInt(string(args[3]), 10, 64)
		n := h.srv.Kill(id)
		if id == c.ID() {
			c.CloseAfterReply()
		}
		c.Out = redcon.AppendInt(c.Out, int64(n))
	case name == "NO-EVICT" && len(args) == 2:
		c.SetNoEvict(strings.EqualFold(string(args[1]), "on"))
		c.Out = redcon.AppendOK(c.Out)
	case name == "NOW":
		if h.record {
			h.mu.Lock()
			h.nows = append(h.nows, c.Now())
			h.mu.Unlock()
		}
		c.Out = redcon.AppendInt(c.Out, c.Now())
	case name == "DEFER" && len(args) == 2:
		s.deferred = append(s.deferred, args[1])
	case name == "BLOCK":
		if !c.MayWait() {
			c.HandOff()
			return
		}
		time.Sleep(time.Millisecond)
		c.Out = redcon.AppendString(c.Out, "blocked lane="+strconv.Itoa(c.Lane()))
	case name == "PANIC":
		panic("test: a bug in a handler")
	case name == "SLEEP" && len(args) == 2:
		ms, _ := strconv.Atoi(string(args[1]))
		time.Sleep(time.Duration(ms) * time.Millisecond)
		c.Out = redcon.AppendOK(c.Out)
	case name == "WRITTEN":
		c.Out = redcon.AppendInt(c.Out, h.srv.Stats().NetOut)
	default:
		c.Out = redcon.AppendError(c.Out, "ERR unknown command '"+string(args[0])+"'")
	}
}

// goroutines in Config.EventLoops asks a test fixture for a goroutine per
// client; the fixture otherwise serves clients from two event loops.
const goroutines = -1

// testConfig is DefaultConfig overlaid with over's nonzero fields, with two
// event loops unless over says otherwise (goroutines: none).
func testConfig(over Config) Config {
	cfg := DefaultConfig()
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.EventLoops = 2
	switch {
	case over.EventLoops == goroutines:
		cfg.EventLoops = 0
	case over.EventLoops > 0:
		cfg.EventLoops = over.EventLoops
	}
	if over.MaxClients > 0 {
		cfg.MaxClients = over.MaxClients
	}
	if over.IdleTimeout > 0 {
		cfg.IdleTimeout = over.IdleTimeout
	}
	if over.Limits.MaxBulk > 0 {
		cfg.Limits.MaxBulk = over.Limits.MaxBulk
	}
	if over.QueryBufferLimit > 0 {
		cfg.QueryBufferLimit = over.QueryBufferLimit
	}
	if over.MaxMemoryClients != 0 {
		cfg.MaxMemoryClients = max(over.MaxMemoryClients, 0)
	}
	if over.Clock != nil {
		cfg.Clock = over.Clock
	}
	if over.Logger != nil {
		cfg.Logger = over.Logger
	}
	return cfg
}

// startServer runs a Server with testConfig(over) and h (nil: a fresh
// fakeHandler) on 127.0.0.1:0 and shuts it down when the test ends. It
// returns the server and its address.
func startServer(t *testing.T, over Config, h *fakeHandler) (*Server, string) {
	t.Helper()
	if h == nil {
		h = &fakeHandler{}
	}
	srv, err := New(testConfig(over), h)
	if err != nil {
		t.Fatal(err)
	}
	h.srv = srv
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return srv, ln.Addr().String()
}

// ioModels runs fn once with event loops and once with a goroutine per
// client, for the behaviour the two carry out differently (writes that do
// not fit, idle clients, kills, panics, shutdown).
func ioModels(t *testing.T, fn func(t *testing.T, loops int)) {
	t.Run("loops", func(t *testing.T) { fn(t, 2) })
	t.Run("goroutines", func(t *testing.T) { fn(t, goroutines) })
}
