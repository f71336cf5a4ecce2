package commands

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/store"
)

// fakeConn feeds the same pipeline to a client's loop batches times and
// discards the replies: the connection loop without a network.
type fakeConn struct {
	batch   []byte
	batches int
	written int64
}

func (f *fakeConn) Read(p []byte) (int, error) {
	if f.batches == 0 {
		return 0, io.EOF
	}
	f.batches--
	return copy(p, f.batch), nil
}

func (f *fakeConn) Write(p []byte) (int, error) { f.written += int64(len(p)); return len(p), nil }
func (f *fakeConn) Close() error                { return nil }
func (f *fakeConn) LocalAddr() net.Addr         { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 6380} }
func (f *fakeConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000}
}
func (f *fakeConn) SetDeadline(time.Time) error { return nil }
func (f *fakeConn) SetReadDeadline(time.Time) error {
	return nil
}
func (f *fakeConn) SetWriteDeadline(time.Time) error { return nil }

func pipeline(depth, keys int, cmd string) []byte {
	var b []byte
	for i := 0; i < depth; i++ {
		key := fmt.Sprintf("user:%06d", i%keys)
		switch cmd {
		case "PING":
			b = append(b, "*1\r\n$4\r\nPING\r\n"...)
		default:
			b = fmt.Appendf(b, "*4\r\n$8\r\nRL.TOKEN\r\n$%d\r\n%s\r\n$4\r\n10/s\r\n$3\r\n100\r\n", len(key), key)
		}
	}
	return b
}

// benchLoop runs b.N commands through one client's connection loop, in
// batches of depth commands.
func benchLoop(b *testing.B, depth int, cmd string) {
	srv := NewServer(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, store.New(16), NewClock())
	fc := &fakeConn{batch: pipeline(depth, 1000, cmd), batches: b.N/depth + 1}
	c := newClient(srv, fc, 1)
	srv.clients[c.id] = c
	srv.wg.Add(1)
	b.ReportAllocs()
	b.SetBytes(int64(len(fc.batch) / depth))
	b.ResetTimer()
	c.serve()
	b.StopTimer()
	if fc.written == 0 {
		b.Fatal("no replies written")
	}
}

func BenchmarkConnLoopTokenP1(b *testing.B)  { benchLoop(b, 1, "RL.TOKEN") }
func BenchmarkConnLoopTokenP16(b *testing.B) { benchLoop(b, 16, "RL.TOKEN") }
func BenchmarkConnLoopPingP16(b *testing.B)  { benchLoop(b, 16, "PING") }

// TestConnLoopDoesNotAllocate holds the hot path to zero heap allocations
// per decision once the client's buffers have grown.
func TestConnLoopDoesNotAllocate(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation count is measured in full runs")
	}
	srv := NewServer(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, store.New(16), NewClock())
	fc := &fakeConn{batch: pipeline(16, 16, "RL.TOKEN")}
	c := newClient(srv, fc, 1)
	c.in = c.in[:cap(c.in)]
	run := func() {
		n := copy(c.in[c.end:], fc.batch)
		c.end += n
		c.runBatch()
		c.flushOut()
	}
	run() // warm up: the buffers and the keys' entries exist after this
	if allocs := testing.AllocsPerRun(200, run); allocs != 0 {
		t.Fatalf("a batch of 16 RL.TOKEN allocates %.1f times; want 0", allocs)
	}
}
