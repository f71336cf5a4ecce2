package commands

import (
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/internal/testutil"
	"github.com/sluice-rl/sluice/store"
)

// Sessions over real sockets: inline commands and QUIT, pipelines, the
// one clock read per batch, panics recovered per connection, AUTH and its
// limits. The helpers are startServer (fixture_test.go) and testutil.Dial.
func TestInlineCommandsAndQuit(t *testing.T) {
	c := testutil.Dial(t, startServer(t, testConfig{}).addr)
	for _, b := range "PING\r\n" { // typed one key at a time
		c.Send(string(b))
	}
	if got := c.Reply(); got != "+PONG" {
		t.Errorf("typed PING = %q", got)
	}
	if got := c.Do("RL.TOKEN k 10/s 20\r\n"); got != "[:1 :20 :19 :0 :100]" {
		t.Errorf("inline RL.TOKEN = %q; want [:1 :20 :19 :0 :100]", got)
	}
	c.Send("ECHO \"a b\\x21\"\nECHO 'it\\'s'\n")
	if a, b := c.Reply(), c.Reply(); a != "$a b!" || b != "$it's" {
		t.Errorf("inline ECHO with quotes = %q, %q; want $a b!, $it's", a, b)
	}
	if got := c.Do("QUIT\r\n"); got != "+OK" {
		t.Errorf("QUIT = %q; want +OK", got)
	}
	c.Closed()
}

func TestPipelineOfThousandInOrder(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		c := testutil.Dial(t, startServer(t, testConfig{EventLoops: loops}).addr)
		var b strings.Builder
		for i := range 1000 {
			s := strconv.Itoa(i)
			switch i % 3 {
			case 0:
				b.WriteString("*2\r\n$4\r\nECHO\r\n$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n")
			case 1:
				b.WriteString("RL.TOKEN p" + s + " 10/s 20 " + strconv.Itoa(i%7) + "\r\n")
			case 2:
				b.WriteString("ECHO " + s + "\r\n")
			}
		}
		c.Send(b.String())
		for i := range 1000 {
			want := "$" + strconv.Itoa(i)
			if i%3 == 1 {
				n := i % 7
				want = "[:1 :20 :" + strconv.Itoa(20-n) + " :0 :" + strconv.Itoa(100*n) + "]"
			}
			if got := c.Reply(); got != want {
				t.Fatalf("reply %d = %q; want %q", i, got, want)
			}
		}
	})
}

// clockProbe records, in order, each read of a connection and the instant
// each keyspace call was given, to show that a batch reads the clock once.
type clockProbe struct {
	Keyspace
	mu     sync.Mutex
	events []int64 // -1: a read returned bytes; otherwise the now of a call
}

func (p *clockProbe) record(v int64) {
	p.mu.Lock()
	p.events = append(p.events, v)
	p.mu.Unlock()
}

func (p *clockProbe) Decide(now int64, reqs []algorithms.Request, out []algorithms.Outcome) {
	p.record(now)
	p.Keyspace.Decide(now, reqs, out)
}

func (p *clockProbe) Exists(now int64, keys [][]byte) (int64, error) {
	p.record(now)
	return p.Keyspace.Exists(now, keys)
}

type probeListener struct {
	net.Listener
	p *clockProbe
}

func (l probeListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return probeConn{nc, l.p}, nil
}

type probeConn struct {
	net.Conn
	p *clockProbe
}

func (c probeConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.p.record(-1)
	}
	return n, err
}

// TestOneClockReadPerBatch runs a pipeline on the real clock. Every keyspace
// call between two reads of the connection gets the same instant; and with
// one token every nanosecond, the bucket's remaining count falls by exactly
// n per call within a batch, which only a single instant per batch gives
// (a clock read per command would refill the bucket between calls).
func TestOneClockReadPerBatch(t *testing.T) {
	probe := &clockProbe{Keyspace: store.New(4)}
	ts := startServer(t, testConfig{Keyspace: probe, RealClock: true,
		Wrap: func(ln net.Listener) net.Listener { return probeListener{ln, probe} }})
	c := testutil.Dial(t, ts.addr)
	const calls = 100
	// Each call takes 0.1 s of refill (n = 10^8 at 10^9/s), so that the key
	// lives well past the batch: the active expiry, which reads the clock
	// on its own, never finds it full and removes it between two calls.
	const n = 100_000_000
	token := "*5\r\n$8\r\nRL.TOKEN\r\n$1\r\nk\r\n$12\r\n1000000000/s\r\n$13\r\n1000000000000\r\n$9\r\n100000000\r\n"
	c.Send(strings.Repeat(token+"*2\r\n$6\r\nEXISTS\r\n$1\r\nk\r\n", calls))
	var remaining []int64
	for range calls {
		f := strings.Fields(strings.Trim(c.Reply(), "[]"))
		n, _ := strconv.ParseInt(strings.TrimPrefix(f[2], ":"), 10, 64)
		remaining = append(remaining, n)
		if got := c.Reply(); got != ":1" && got != ":0" { // :0 if a read ended between the two
			t.Fatalf("EXISTS k = %q", got)
		}
	}
	probe.mu.Lock()
	events := append([]int64(nil), probe.events...)
	probe.mu.Unlock()
	reads, instants, last := 0, 0, int64(-1)
	for i, e := range events {
		switch {
		case e == -1:
			reads, last = reads+1, -1
		case last == -1:
			instants, last = instants+1, e
		case e != last:
			t.Fatalf("event %d: a keyspace call at %d after one at %d with no read between", i, e, last)
		}
	}
	restarts := 0
	for i := 1; i < len(remaining); i++ {
		if remaining[i] != remaining[i-1]-n {
			restarts++
		}
	}
	t.Logf("%d reads, %d instants, %d keyspace calls; remaining restarted %d times", reads, instants, len(events)-reads, restarts)
	if len(events)-reads != 2*calls || instants > reads || restarts > reads-1 {
		t.Errorf("%d keyspace calls with %d instants and %d restarts over %d reads; want %d calls, at most one instant per read",
			len(events)-reads, instants, restarts, reads, 2*calls)
	}
}

// panicKeyspace panics on a decision for the key "panic!", as a bug in a
// handler would.
type panicKeyspace struct{ Keyspace }

func (p panicKeyspace) Decide(now int64, reqs []algorithms.Request, out []algorithms.Outcome) {
	for _, r := range reqs {
		if string(r.Key) == "panic!" {
			panic("test: a bug while deciding")
		}
	}
	p.Keyspace.Decide(now, reqs, out)
}

func TestPanicIsRecoveredPerConnection(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		ts := startServer(t, testConfig{EventLoops: loops, Keyspace: panicKeyspace{store.New(4)}})
		addr := ts.addr
		other := testutil.Dial(t, addr)
		if got := other.Do("PING\r\n"); got != "+PONG" {
			t.Fatalf("PING = %q", got)
		}
		bad := testutil.Dial(t, addr)
		if got := bad.Do("RL.TOKEN panic! 10/s 20\r\n"); !strings.HasPrefix(got, "-ERR internal error") {
			t.Errorf("the panicking command got %q; want an internal error", got)
		}
		bad.Closed()
		if got := other.Do("RL.TOKEN fine 10/s 20\r\n"); got != "[:1 :20 :19 :0 :100]" {
			t.Errorf("another client after the panic: %q", got)
		}
		testutil.PingsOnNewConn(t, addr)
		if n := ts.srv.Stats().Panics; n != 1 {
			t.Errorf("panics = %d; want 1", n)
		}
	})
}

func TestAuthBeforeCommandsAndItsLimits(t *testing.T) {
	addr := startServer(t, testConfig{Password: "s3cret"}).addr
	c := testutil.Dial(t, addr)
	for _, step := range []struct{ send, want string }{
		{"PING\r\n", "-NOAUTH Authentication required."},
		{"RL.TOKEN k 10/s 20\r\n", "-NOAUTH Authentication required."},
		{"AUTH wrong\r\n", "-WRONGPASS invalid username-password pair or user is disabled."},
		{"*2\r\n$4\r\nAUTH\r\n$6\r\ns3cret\r\n", "+OK"},
		{"PING\r\n", "+PONG"},
		// 11 arguments are fine once authenticated
		{"EXISTS a b c d e f g h i j\r\n", ":0"},
		{"*11\r\n$6\r\nEXISTS\r\n" + strings.Repeat("$1\r\na\r\n", 10), ":0"},
	} {
		if got := c.Do(step.send); got != step.want {
			t.Errorf("%q: got %q; want %q", testutil.Clip(step.send), got, step.want)
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
}
