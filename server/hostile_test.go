package server

import (
	"io"
	"net"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/redcon"

	"github.com/sluice-rl/sluice/internal/testutil"
)

// Hostile clients over real sockets: broken frames, endless bulks, too many
// clients, idle clients, panics. Each test ends by checking that the server
// still answers a new connection. The fixture and the fakeHandler are in
// fake_test.go.

func TestHostileFramesAnswerAndClose(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		srv, addr := startServer(t, Config{EventLoops: loops}, nil)
		for _, tc := range []struct{ frame, want string }{
			{"*3000000000\r\n", "-ERR Protocol error: invalid multibulk length"},
			{"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$-10\r\n", "-ERR Protocol error: invalid bulk length"},
			{"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$2000000000\r\n", "-ERR Protocol error: invalid bulk length"},
			{"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$blabla\r\n", "-ERR Protocol error: invalid bulk length"},
			{"*1\r\nfoo\r\n", "-ERR Protocol error: expected '$', got 'f'"},
			{"*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n", "-ERR Protocol error: expected '$', got 'f'"},
			{"set \"\"\"test-key\"\"\" test-value\r\nping\r\n", "-ERR Protocol error: unbalanced quotes in request"},
			{"*1\r\n$9223372036854775807\r\nx\r\n", "-ERR Protocol error: invalid bulk length"},
			{"*2\r\n$4\r\nECHO\r\n$2147483648\r\n", "-ERR Protocol error: invalid bulk length"},
		} {
			c := testutil.Dial(t, addr)
			if got := c.Do(tc.frame); got != tc.want {
				t.Errorf("%q: got %q; want %q", tc.frame, got, tc.want)
			}
			c.Closed()
			testutil.PingsOnNewConn(t, addr)
		}
		if n := srv.stats.panics.Load(); n != 0 {
			t.Errorf("the server recovered %d panics", n)
		}
		// Redis ignores a negative multibulk count and goes on.
		c := testutil.Dial(t, addr)
		if got := c.Do("*-10\r\nPING\r\n"); got != "+PONG" {
			t.Errorf("*-10 then PING: got %q; want +PONG", got)
		}
	})
}

// streamUntilCut writes head, then body(0), body(1), … until the server
// cuts the connection, 1 GiB is sent, or 10 s pass. It returns what the
// server said, the bytes sent, and the peak growth of the heap while it ran.
func streamUntilCut(t *testing.T, addr, head string, body func(i int) []byte) (reply string, sent int64, peak uint64) {
	t.Helper()
	runtime.GC()
	base := heapObjectBytes()
	stop, sampled := make(chan struct{}), make(chan uint64)
	go func() {
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		var top uint64
		for {
			top = max(top, heapObjectBytes())
			select {
			case <-stop:
				sampled <- top
				return
			case <-tick.C:
			}
		}
	}()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	got := make(chan string, 1)
	go func() {
		nc.SetReadDeadline(time.Now().Add(15 * time.Second))
		b, _ := io.ReadAll(io.LimitReader(nc, 1<<16)) // until EOF or reset
		got <- string(b)
	}()
	write := func(b []byte) bool {
		nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
		n, err := nc.Write(b)
		sent += int64(n)
		return err == nil
	}
	deadline := time.Now().Add(10 * time.Second)
	replied := false
	ok := write([]byte(head))
	for i := 0; ok && !replied && sent < 1<<30 && time.Now().Before(deadline); i++ {
		select {
		case reply = <-got:
			replied = true
		default:
			ok = write(body(i))
		}
	}
	if !replied {
		select {
		case reply = <-got:
		case <-time.After(10 * time.Second):
			t.Fatalf("the server never closed the connection (%d bytes sent)", sent)
		}
	}
	close(stop)
	if top := <-sampled; top > base {
		peak = top - base
	}
	return reply, sent, peak
}

func heapObjectBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func TestEndlessBulkIsCutWithBoundedMemory(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		const budget = 64 << 20
		chunk := []byte(strings.Repeat("x", 256<<10))
		data := func(int) []byte { return chunk }
		almost := strings.Repeat("y", 1<<20-1) // MaxBulk-1 bytes
		arg := []byte("$" + strconv.Itoa(len(almost)) + "\r\n" + almost + "\r\n")
		for _, tc := range []struct {
			name, head string
			cfg        Config
			body       func(int) []byte
			want       string
			minSent    int64
		}{
			{"2 GB bulk, default limits", "*2\r\n$4\r\nECHO\r\n$2147483648\r\n", Config{EventLoops: loops}, data,
				"-ERR Protocol error: invalid bulk length\r\n", 0},
			{"2 GB bulk within MaxBulk", "*2\r\n$4\r\nECHO\r\n$2147483647\r\n",
				Config{Limits: ReaderLimits{MaxBulk: 1<<31 - 1}}, data,
				"-ERR Protocol error: client query buffer limit reached\r\n", 8 << 20},
			{"many bulks just under MaxBulk", "*1000\r\n$4\r\nECHO\r\n", Config{}, func(int) []byte { return arg },
				"-ERR Protocol error: client query buffer limit reached\r\n", 8 << 20},
		} {
			t.Run(tc.name, func(t *testing.T) {
				srv, addr := startServer(t, tc.cfg, nil)
				reply, sent, peak := streamUntilCut(t, addr, tc.head, tc.body)
				t.Logf("sent %.1f MB before the cut; heap grew by at most %.1f MB", float64(sent)/1e6, float64(peak)/1e6)
				if reply != tc.want {
					t.Errorf("reply %q; want %q", reply, tc.want)
				}
				if sent < tc.minSent || sent >= 1<<30 {
					t.Errorf("cut after %d bytes; want between %d and 1 GiB", sent, tc.minSent)
				}
				if peak > budget {
					t.Errorf("heap grew by %d bytes while streaming; want under %d", peak, budget)
				}
				testutil.PingsOnNewConn(t, addr)
				if n := srv.stats.panics.Load(); n != 0 {
					t.Errorf("the server recovered %d panics", n)
				}
			})
		}
	})
}

// TestProtocolDesyncRegression is Redis's test of that name: a NUL, "*" NUL
// or "$" NUL then an endless stream without a newline is cut after the
// 64 KB limit of an inline line or a count line.
func TestProtocolDesyncRegression(t *testing.T) {
	_, addr := startServer(t, Config{}, nil)
	payload := []byte(strings.Repeat("payload", 1024))
	for _, tc := range []struct{ seq, want string }{
		{"\x00", "-ERR Protocol error: too big inline request\r\n"},
		{"*\x00", "-ERR Protocol error: too big mbulk count string\r\n"},
		{"$\x00", "-ERR Protocol error: too big inline request\r\n"},
	} {
		reply, sent, _ := streamUntilCut(t, addr, tc.seq, func(int) []byte { return payload })
		if reply != tc.want || sent <= maxCountLine || sent > 64<<20 {
			t.Errorf("%q then payload: %q after %d bytes; want %q after 64 KB", tc.seq, reply, sent, tc.want)
		}
		testutil.PingsOnNewConn(t, addr)
	}
}

func TestMaxClients(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		srv, addr := startServer(t, Config{EventLoops: loops, MaxClients: 3}, nil)
		conns := testutil.DialAnswering(t, addr, 3)
		fourth := testutil.Dial(t, addr)
		if got := fourth.Reply(); got != "-ERR max number of clients reached" {
			t.Fatalf("4th connection read %q; want the maxclients error", got)
		}
		fourth.Closed()
		for i, c := range conns {
			if got := c.Do("PING\r\n"); got != "+PONG" {
				t.Fatalf("client %d after the refusal: PING = %q", i, got)
			}
		}
		conns[0].NC.Close()
		deadline := time.Now().Add(3 * time.Second)
		for {
			c := testutil.Dial(t, addr)
			got := c.Do("PING\r\n")
			if got == "+PONG" {
				break
			}
			if got != "-ERR max number of clients reached" || time.Now().After(deadline) {
				t.Fatalf("after a client left, a new one got %q", got)
			}
			c.NC.Close()
			time.Sleep(10 * time.Millisecond)
		}
		if n := srv.stats.rejected.Load(); n < 1 {
			t.Errorf("rejected = %d; want at least 1", n)
		}
	})
}

func TestIdleTimeout(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		_, addr := startServer(t, Config{EventLoops: loops, IdleTimeout: time.Second}, nil)
		idle, active := testutil.Dial(t, addr), testutil.Dial(t, addr)
		start := time.Now()
		idleGone := make(chan time.Duration, 1)
		go func() {
			idle.NC.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err := idle.R.ReadByte() // the server says nothing; it closes
			if err == io.EOF {
				idleGone <- time.Since(start)
			} else {
				idleGone <- -1
			}
		}()
		for time.Since(start) < 1800*time.Millisecond {
			if got := active.Do("PING\r\n"); got != "+PONG" {
				t.Fatalf("active client at %v: PING = %q", time.Since(start), got)
			}
			time.Sleep(200 * time.Millisecond)
		}
		if d := <-idleGone; d < 900*time.Millisecond || d > 2500*time.Millisecond {
			t.Errorf("idle client closed after %v (-1: not by EOF); want about 1 s", d)
		}
		if got := active.Do("PING\r\n"); got != "+PONG" {
			t.Errorf("active client after the idle one was closed: PING = %q", got)
		}
	})
}

// TestClientThatNeverReadsIsClosed: a client that pipelines and never reads
// its replies is idle too; with --timeout it is closed rather than holding
// its goroutine and its place under maxclients forever.
func TestClientThatNeverReadsIsClosed(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		srv, addr := startServer(t, Config{EventLoops: loops, IdleTimeout: time.Second}, nil)
		c := testutil.Dial(t, addr)
		c.NC.(*net.TCPConn).SetReadBuffer(4096)
		pings := []byte(strings.Repeat("PING\r\n", 10000))
		for start := time.Now(); time.Since(start) < 5*time.Second; {
			c.NC.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
			if _, err := c.NC.Write(pings); err != nil {
				break // the server has stopped reading: it is blocked writing replies
			}
		}
		blocked := time.Now()
		for {
			srv.mu.Lock()
			n := len(srv.conns)
			srv.mu.Unlock()
			if n == 0 {
				break
			}
			if time.Since(blocked) > 4*time.Second {
				t.Fatalf("a client that reads nothing is still connected %v after the server blocked on it", time.Since(blocked))
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Logf("closed %v after its replies stopped flowing", time.Since(blocked).Round(time.Millisecond))
		testutil.PingsOnNewConn(t, addr)
	})
}

// TestRedconReaderStillPanics documents why sluice reads requests itself:
// redcon v1.6.2's parser panics on this frame (its bulk length overflows
// an int), which in a stock redcon server kills the process. If an upgrade
// fixes it, this test says so.
func TestRedconReaderStillPanics(t *testing.T) {
	panicked := func() (p bool) {
		defer func() { p = recover() != nil }()
		redcon.Parse([]byte("*1\r\n$9223372036854775807\r\nx\r\n"))
		return false
	}()
	if !panicked {
		t.Log("redcon.Parse no longer panics on the overflow frame; the reason for sluice's own reader may be gone")
	}
	// sluice's reader answers it with a protocol error.
	lim := DefaultConfig().Limits
	var scratch []byte
	if _, _, err := readCommand([]byte("*1\r\n$9223372036854775807\r\nx\r\n"), nil, &scratch, &lim, false); err != errProtoBulkLen {
		t.Fatalf("sluice's reader: %v; want %v", err, errProtoBulkLen)
	}
}
