//go:build linux

package commands

import (
	"bytes"
	"net"
	"runtime"
	"testing"

	"github.com/sluice-rl/sluice/store"
)

// loopSocket is one client of a server with one event loop, over loopback,
// that writes a pipeline and reads back its replies without allocating.
type loopSocket struct {
	nc    net.Conn
	batch []byte
	buf   []byte
	lines int // reply lines per batch
}

func newLoopSocket(tb testing.TB, depth int, cmd string) *loopSocket {
	tb.Helper()
	ts := startServer(tb, testConfig{EventLoops: 1, Keyspace: store.New(4)})
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { nc.Close() })
	lines := depth // +PONG
	if cmd != "PING" {
		lines = 6 * depth // *5 and five integers
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

// TestEventLoopDoesNotAllocate holds the whole server path, socket to
// socket through an event loop, to no heap allocation per decision.
func TestEventLoopDoesNotAllocate(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation count is measured in full runs")
	}
	s := newLoopSocket(t, 16, "RL.TOKEN")
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
	t.Logf("%d allocations in the process for %d decisions", after.Mallocs-before.Mallocs, rounds*16)
	if perDecision > 0.01 { // the runtime's own timers may allocate now and then
		t.Fatalf("%.3f allocations per decision; want 0", perDecision)
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
func BenchmarkEventLoopTokenP1(b *testing.B)  { benchEventLoop(b, 1, "RL.TOKEN") }
func BenchmarkEventLoopTokenP16(b *testing.B) { benchEventLoop(b, 16, "RL.TOKEN") }
func BenchmarkEventLoopPingP16(b *testing.B)  { benchEventLoop(b, 16, "PING") }
