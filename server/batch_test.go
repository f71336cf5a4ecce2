package server

import (
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/testutil"
)

// The Handler contract, over real sockets with the fakeHandler: one clock
// read per batch, arguments valid until EndBatch, the strict limits before
// authentication, Open and Close once each, and a panicking handler.

// TestOneClockReadPerBatch: every command between two EndBatch calls sees
// the same instant, on the real clock.
func TestOneClockReadPerBatch(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		h := &fakeHandler{record: true}
		_, addr := startServer(t, Config{EventLoops: loops}, h)
		c := testutil.Dial(t, addr)
		const n = 2000
		c.Send(strings.Repeat("*1\r\n$3\r\nNOW\r\n", n))
		for range n {
			c.Reply()
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		batches, nows, last := 0, 0, int64(-1)
		for i, v := range h.nows {
			switch {
			case v == -1:
				last = -1
			case last == -1:
				batches, nows, last = batches+1, nows+1, v
			case v != last:
				t.Fatalf("event %d: a command at %d after one at %d in the same batch", i, v, last)
			default:
				nows++
			}
		}
		t.Logf("%d commands in %d batches", nows, batches)
		if nows != n || batches < 1 {
			t.Fatalf("%d commands in %d batches; want %d", nows, batches, n)
		}
	})
}

// TestArgsStayValidUntilEndBatch: DEFER keeps its argument until EndBatch
// and echoes it there, so a transport that reused an argument's bytes
// before EndBatch (inline lines share one scratch buffer; replies past 64
// KiB are written early; an unfinished command is moved to the front of
// the buffer) would answer with the wrong bytes. Replies keep their order.
func TestArgsStayValidUntilEndBatch(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		_, addr := startServer(t, Config{EventLoops: loops}, nil)
		c := testutil.Dial(t, addr)
		var req strings.Builder
		var want []string
		big := strings.Repeat("b", 20_000)
		for i := range 200 {
			s := "arg-" + strconv.Itoa(i)
			switch i % 4 {
			case 0: // inline
				req.WriteString("DEFER " + s + "\r\n")
				want = append(want, "[:1 $"+s+"]")
			case 1: // multibulk
				req.WriteString("*2\r\n$5\r\nDEFER\r\n$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n")
				want = append(want, "[:1 $"+s+"]")
			case 2: // a large reply: several of them pass 64 KiB
				req.WriteString("*2\r\n$4\r\nECHO\r\n$" + strconv.Itoa(len(big)) + "\r\n" + big + "\r\n")
				want = append(want, "$"+big)
			case 3:
				req.WriteString("ECHO " + s + "\r\n")
				want = append(want, "$"+s)
			}
		}
		whole := req.String()
		for from := 0; from < len(whole); from += 7001 { // pieces that end mid-command
			c.Send(whole[from:min(from+7001, len(whole))])
			time.Sleep(time.Millisecond)
		}
		for i, w := range want {
			if got := c.Reply(); got != w {
				t.Fatalf("reply %d = %q; want %q", i, testutil.Clip(got), testutil.Clip(w))
			}
		}
	})
}

// TestStrictLimitsUntilAuthenticated: a handler that requires a password
// keeps Redis's pre-authentication limits on the reader (10 arguments,
// 16 KiB bulks) until it says the client authenticated.
func TestStrictLimitsUntilAuthenticated(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		_, addr := startServer(t, Config{EventLoops: loops}, &fakeHandler{password: "s3cret"})
		c := testutil.Dial(t, addr)
		for _, step := range []struct{ send, want string }{
			{"PING\r\n", "-NOAUTH Authentication required."},
			{"AUTH wrong\r\n", "-WRONGPASS invalid username-password pair or user is disabled."},
			{"*2\r\n$4\r\nAUTH\r\n$6\r\ns3cret\r\n", "+OK"},
			{"*11\r\n$6\r\nEXISTS\r\n" + strings.Repeat("$1\r\na\r\n", 10), ":0"},
			{"*2\r\n$4\r\nECHO\r\n$16385\r\n" + strings.Repeat("e", 16385) + "\r\n", "$" + strings.Repeat("e", 16385)},
		} {
			if got := c.Do(step.send); got != step.want {
				t.Errorf("%q: got %q; want %q", testutil.Clip(step.send), testutil.Clip(got), step.want)
			}
		}
		for _, tc := range []struct{ frame, want string }{
			{"*11\r\n", "-ERR Protocol error: unauthenticated multibulk length"},
			{"*2\r\n$4\r\nECHO\r\n$16385\r\n", "-ERR Protocol error: unauthenticated bulk length"},
		} {
			c := testutil.Dial(t, addr)
			if got := c.Do(tc.frame); got != tc.want {
				t.Errorf("before AUTH, %q: got %q; want %q", tc.frame, got, tc.want)
			}
			c.Closed()
		}
	})
}

// TestPanicIsRecoveredPerConnection: a panic in the handler answers its
// connection with an internal error and closes it; the handler's Close
// still runs, and everyone else is served.
func TestPanicIsRecoveredPerConnection(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		h := &fakeHandler{}
		srv, addr := startServer(t, Config{EventLoops: loops}, h)
		other := testutil.Dial(t, addr)
		if got := other.Do("PING\r\n"); got != "+PONG" {
			t.Fatalf("PING = %q", got)
		}
		bad := testutil.Dial(t, addr)
		if got := bad.Do("DEFER x\r\n"); got != "[:1 $x]" {
			t.Errorf("DEFER x = %q", got)
		}
		if got := bad.Do("PANIC\r\n"); !strings.HasPrefix(got, "-ERR internal error") {
			t.Errorf("the panicking command got %q; want an internal error", got)
		}
		bad.Closed()
		if got := other.Do("ECHO fine\r\n"); got != "$fine" {
			t.Errorf("another client after the panic: %q", got)
		}
		testutil.PingsOnNewConn(t, addr)
		if n := srv.Stats().Panics; n != 1 {
			t.Errorf("panics = %d; want 1", n)
		}
		waitFor(t, "Close for every connection that left", func() bool { return h.closed.Load() >= 2 })
	})
}

// TestOpenAndCloseOncePerConnection: the handler sees Open before the
// first command and Close after the last, once each, whoever closes.
func TestOpenAndCloseOncePerConnection(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		h := &fakeHandler{}
		srv, addr := startServer(t, Config{EventLoops: loops}, h)
		conns := testutil.DialAnswering(t, addr, 5)
		conns[0].NC.Close()               // the client leaves
		conns[1].Do("QUIT\r\n")           // it asks to leave
		conns[2].Send("*1\r\n$-5\r\n")    // it breaks the protocol
		srv.Kill(srv.connID(t, conns[3])) // CLIENT KILL
		waitFor(t, "four connections closed", func() bool { return h.closed.Load() == 4 })
		if h.opened.Load() != 5 {
			t.Errorf("Open ran %d times for 5 connections", h.opened.Load())
		}
		if got := conns[4].Do("PING\r\n"); got != "+PONG" {
			t.Errorf("the last client: %q", got)
		}
	})
}

// connID asks c for its id.
func (s *Server) connID(t *testing.T, c *testutil.Conn) int64 {
	t.Helper()
	id, err := strconv.ParseInt(strings.TrimPrefix(c.Do("CLIENT ID\r\n"), ":"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// waitFor waits up to 5 s for cond.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5 s", what)
		}
	}
}

// TestLoopbackRunsTheBatchPath: Feed runs bytes as a socket's input (an
// unfinished command waits for the next Feed), QUIT and Server.Kill close
// the connection, and Hangup runs Close once.
func TestLoopbackRunsTheBatchPath(t *testing.T) {
	h := &fakeHandler{}
	srv, err := New(testConfig(Config{}), h)
	if err != nil {
		t.Fatal(err)
	}
	h.srv = srv
	c, err := srv.Loopback()
	if err != nil {
		t.Fatal(err)
	}
	if out, closed := c.Feed([]byte("PING\r\n*2\r\n$5\r\nDEFER\r\n$3\r\nab")); string(out) != "+PONG\r\n" || closed {
		t.Fatalf("Feed = %q, %v; want +PONG and the DEFER waiting", out, closed)
	}
	if out, _ := c.Feed([]byte("c\r\nECHO z\r\n")); string(out) != "*2\r\n:1\r\n$3\r\nabc\r\n$1\r\nz\r\n" {
		t.Fatalf("Feed = %q; want the DEFER's and the ECHO's replies", out)
	}
	if srv.Stats().Clients != 1 {
		t.Errorf("a loopback connection is not counted among the clients")
	}
	if out, closed := c.Feed([]byte("QUIT\r\nPING\r\n")); string(out) != "+OK\r\n" || !closed {
		t.Fatalf("QUIT = %q, %v; want +OK and closed", out, closed)
	}
	c.Hangup()
	c.Hangup()
	if h.closed.Load() != 1 || srv.Stats().Clients != 0 {
		t.Fatalf("after Hangup: Close ran %d times, %d clients", h.closed.Load(), srv.Stats().Clients)
	}
	k, err := srv.Loopback()
	if err != nil {
		t.Fatal(err)
	}
	defer k.Hangup()
	if n := srv.Kill(k.ID()); n != 1 {
		t.Fatalf("Kill = %d", n)
	}
	if out, closed := k.Feed([]byte("PING\r\n")); len(out) != 0 || !closed {
		t.Fatalf("a killed loopback connection answered %q, %v", out, closed)
	}
}

// TestSteadyClientNeverTakesTheServerLock: once a pipelining client's
// buffers have their size, its batches account nothing, so they run while
// another goroutine holds the server's lock (which every accounting
// change takes): the hot path shares no lock and no counter.
func TestSteadyClientNeverTakesTheServerLock(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		srv, addr := startServer(t, Config{EventLoops: loops}, nil)
		c := testutil.Dial(t, addr)
		batch := string(pipeline(16, 1000, "DEFER"))
		round := func() {
			c.Send(batch)
			for range 16 {
				if got := c.Reply(); !strings.HasPrefix(got, "[:") {
					t.Fatalf("DEFER = %q", got)
				}
			}
		}
		for range 100 {
			round() // warm up: the buffers reach their size
		}
		srv.mu.Lock()
		locked := true
		t.Cleanup(func() {
			if locked { // a reply did not come within its 5 s deadline
				t.Error("a steady client's batch waited for the server's lock")
				srv.mu.Unlock()
			}
		})
		for range 100 {
			round()
		}
		locked = false
		srv.mu.Unlock()
	})
}

// TestWarnsWhenMaxclientsOutgrowMaxmemoryClients: a cap that the idle
// buffers of maxclients clients would pass is logged at start, and the
// defaults are not.
func TestWarnsWhenMaxclientsOutgrowMaxmemoryClients(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		warn bool
	}{
		{Config{}, false},
		{Config{MaxClients: 100_000}, true},
		{Config{MaxClients: 100_000, MaxMemoryClients: -1}, false},
		{Config{MaxClients: 1000, MaxMemoryClients: 16 << 20}, true},
	} {
		var log strings.Builder
		tc.cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
		if _, err := New(testConfig(tc.cfg), &fakeHandler{}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(log.String(), "maxmemory-clients"); got != tc.warn {
			t.Errorf("maxclients %d, maxmemory-clients %d: warned %v; want %v (log %q)",
				tc.cfg.MaxClients, tc.cfg.MaxMemoryClients, got, tc.warn, log.String())
		}
	}
}
