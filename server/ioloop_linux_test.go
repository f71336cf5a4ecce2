//go:build linux

package server

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// loopSocket is one client of a server with one event loop and a
// fakeHandler, over loopback, that writes a pipeline and reads back its
// replies without allocating.
type loopSocket struct {
	nc    net.Conn
	batch []byte
	buf   []byte
	lines int // reply lines per batch
}

func newLoopSocket(tb testing.TB, depth int, cmd string) *loopSocket {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	h := &fakeHandler{}
	srv, err := New(testConfig(Config{EventLoops: 1}), h)
	if err != nil {
		tb.Fatal(err)
	}
	h.srv = srv
	go srv.Serve(ln)
	tb.Cleanup(func() { srv.Shutdown(tb.Context()) })
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { nc.Close() })
	lines := depth // +PONG
	if cmd != "PING" {
		lines = 4 * depth // *2, :1 and a bulk of two lines
	}
	return &loopSocket{nc: nc, batch: pipeline(depth, 1000, cmd), buf: make([]byte, 64<<10), lines: lines}
}

// round writes the pipeline and reads until every reply line is in.
func (s *loopSocket) round(tb testing.TB) {
	if _, err := s.nc.Write(s.batch); err != nil {
		tb.Fatal(err)
	}
	for seen := 0; seen < s.lines; {
		n, err := s.nc.Read(s.buf)
		if err != nil {
			tb.Fatal(err)
		}
		if bytes.IndexByte(s.buf[:n], '-') >= 0 {
			tb.Fatalf("error reply: %q", s.buf[:n])
		}
		seen += bytes.Count(s.buf[:n], []byte{'\n'})
	}
}

// TestEventLoopDoesNotAllocate holds the transport's path, socket to socket
// through an event loop, to no heap allocation per command.
func TestEventLoopDoesNotAllocate(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation count is measured in full runs")
	}
	s := newLoopSocket(t, 16, "DEFER")
	for range 100 {
		s.round(t) // warm up: buffers and the keys' entries exist after this
	}
	const rounds = 2000
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range rounds {
		s.round(t)
	}
	runtime.ReadMemStats(&after)
	perDecision := float64(after.Mallocs-before.Mallocs) / (rounds * 16)
	t.Logf("%d allocations in the process for %d commands", after.Mallocs-before.Mallocs, rounds*16)
	if perDecision > 0.01 { // the runtime's own timers may allocate now and then
		t.Fatalf("%.3f allocations per command; want 0", perDecision)
	}
}

func benchEventLoop(b *testing.B, depth int, cmd string) {
	s := newLoopSocket(b, depth, cmd)
	s.round(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += depth {
		s.round(b)
	}
}

// Socket to socket through one event loop, with the client in the same
// process: a round trip per batch.
func BenchmarkEventLoopDeferP1(b *testing.B)  { benchEventLoop(b, 1, "DEFER") }
func BenchmarkEventLoopDeferP16(b *testing.B) { benchEventLoop(b, 16, "DEFER") }
func BenchmarkEventLoopPingP16(b *testing.B)  { benchEventLoop(b, 16, "PING") }

// pipeline is depth commands: PING, or DEFER of a key among keys.
func pipeline(depth, keys int, cmd string) []byte {
	var b []byte
	for i := 0; i < depth; i++ {
		key := fmt.Sprintf("user:%06d", i%keys)
		switch cmd {
		case "PING":
			b = append(b, "*1\r\n$4\r\nPING\r\n"...)
		default:
			b = fmt.Appendf(b, "*2\r\n$5\r\nDEFER\r\n$%d\r\n%s\r\n", len(key), key)
		}
	}
	return b
}

// An idle event loop waits as a parked goroutine, not in a thread blocked
// in epoll_wait on its epoll descriptor: a thread blocked in a system call
// has its P handed to another thread by sysmon, and at partial load those
// hand-offs cost more CPU than the requests. The threads' system calls are
// read from /proc/self/task/*/syscall (number, then the arguments in hex).
func TestIdleLoopsHoldNoThreadInEpollWait(t *testing.T) {
	srv, addr := startServer(t, Config{EventLoops: 4}, nil)
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	buf := make([]byte, 64)
	for range 4 { // the client's loop has served a batch and waits again
		if _, err := nc.Write([]byte("PING\r\n")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadAtLeast(nc, buf, len("+PONG\r\n")); err != nil {
			t.Fatal(err)
		}
	}
	waits := map[string]bool{fmt.Sprint(unix.SYS_EPOLL_PWAIT): true, fmt.Sprint(unix.SYS_EPOLL_PWAIT2): true}
	if runtime.GOARCH == "amd64" {
		waits["232"] = true // epoll_wait
	}
	loopFD := map[string]int{}
	srv.mu.Lock()
	loops := srv.loops
	srv.mu.Unlock()
	for i, l := range loops {
		loopFD[fmt.Sprintf("0x%x", l.epfd)] = i
	}
	const samples = 20
	seen := make([]int, len(loops))
	for range samples {
		time.Sleep(10 * time.Millisecond)
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			t.Skipf("no /proc: %v", err)
		}
		for _, task := range tasks {
			b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/syscall")
			if err != nil {
				continue // the thread ended
			}
			f := strings.Fields(string(b))
			if len(f) > 1 && waits[f[0]] {
				if i, ok := loopFD[f[1]]; ok {
					seen[i]++
				}
			}
		}
	}
	for i, n := range seen {
		if n > samples/2 {
			t.Errorf("event loop %d: a thread blocked in epoll_wait on its descriptor in %d of %d samples; want the idle loop parked in the runtime's poller", i, n, samples)
		}
	}
}

// loopClients starts a server with one event loop and connects n clients
// to it, each answered once (so registered with the loop) before it
// returns them.
func loopClients(t *testing.T, n int) []*net.TCPConn {
	t.Helper()
	_, addr := startServer(t, Config{EventLoops: 1}, nil)
	var cs []*net.TCPConn
	for range n {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		nc.Write([]byte("PING\r\n"))
		readReply(t, nc, "+PONG\r\n")
		cs = append(cs, nc.(*net.TCPConn))
	}
	return cs
}

// readReply reads len(want) bytes from nc and fails unless they are want.
func readReply(t *testing.T, nc net.Conn, want string) {
	t.Helper()
	buf := make([]byte, len(want))
	if _, err := io.ReadFull(nc, buf); err != nil {
		t.Fatal(err)
	}
	if string(buf) != want {
		t.Fatalf("reply %q, want %q", buf, want)
	}
}

// TestRepliesOfAWakeUpLeaveTogether: the replies of the clients an event
// loop finds ready at one wake-up are written after all of them have run,
// so they leave in one burst, as Redis writes its replies before it sleeps.
// SLEEP holds the loop while B and then C send, so one wake-up finds both;
// when C's WRITTEN runs, B's reply must still be unwritten: the server has
// written A's +OK alone.
func TestRepliesOfAWakeUpLeaveTogether(t *testing.T) {
	cs := loopClients(t, 3)
	a, b, c := cs[0], cs[1], cs[2]
	before := int64(3 * len("+PONG\r\n"))
	a.Write([]byte("SLEEP 300\r\n"))
	time.Sleep(50 * time.Millisecond)
	b.Write([]byte("PING\r\n"))
	time.Sleep(50 * time.Millisecond)
	c.Write([]byte("WRITTEN\r\n"))
	readReply(t, a, "+OK\r\n")
	readReply(t, b, "+PONG\r\n")
	readReply(t, c, fmt.Sprintf(":%d\r\n", before+int64(len("+OK\r\n"))))
}

// A client whose last command and end of input (shutdown) arrive together,
// while its loop is busy, gets its reply and then its connection closed:
// the loop reads it again to find the end, for which no new event comes.
func TestLoopClosesAClientWhoseEndCameWithItsLastCommand(t *testing.T) {
	cs := loopClients(t, 2)
	a, b := cs[0], cs[1]
	a.Write([]byte("SLEEP 200\r\n")) // holds the loop
	time.Sleep(50 * time.Millisecond)
	b.Write([]byte("PING\r\n"))
	b.CloseWrite() // input and its end wait together for the loop
	b.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(b)
	if err != nil {
		t.Fatalf("after %q: %v; want the reply, then the server's close", got, err)
	}
	if string(got) != "+PONG\r\n" {
		t.Fatalf("read %q until the close; want +PONG", got)
	}
}

// A pipeline larger than a client's input buffer, all waiting when its
// loop comes to it, is read to its end: a read that fills the buffer is
// followed by another, for which no new event comes.
func TestLoopReadsAWaitingPipelineLargerThanItsBuffer(t *testing.T) {
	cs := loopClients(t, 2)
	a, b := cs[0], cs[1]
	const n = 20_000                 // 120 KB of input
	a.Write([]byte("SLEEP 200\r\n")) // holds the loop
	time.Sleep(50 * time.Millisecond)
	if _, err := b.Write(bytes.Repeat([]byte("PING\r\n"), n)); err != nil {
		t.Fatal(err)
	}
	b.SetReadDeadline(time.Now().Add(10 * time.Second))
	got := make([]byte, n*len("+PONG\r\n"))
	if k, err := io.ReadFull(b, got); err != nil {
		t.Fatalf("%d of %d replies, then %v", k/len("+PONG\r\n"), n, err)
	}
	if !bytes.Equal(got, bytes.Repeat([]byte("+PONG\r\n"), n)) {
		t.Fatal("the replies are not every PING's +PONG, in order")
	}
}
