package commands

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/sluice-rl/sluice/server"
	"github.com/sluice-rl/sluice/store"
)

// Benchmarks of the whole command path without a socket: a loopback
// connection (server.Conn.Feed) is handed a pipeline as one read; the
// transport's reader parses it from the read buffer, the Handler queues the
// decisions, carries them out in one Keyspace.Decide call at EndBatch and
// writes the replies. ns/op and allocs/op are per command; the steady state
// must not allocate.

const benchBatch = 16

// frame encodes one command in RESP.
func frame(args ...string) string {
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	return b.String()
}

// loopback returns a loopback connection of a server whose Handler runs
// against a store of 16 shards, on the real clock.
func loopback(tb testing.TB) *server.Conn {
	_, c := loopbackOn(tb, DefaultConfig(), store.New(16))
	return c
}

// loopbackOn returns a Handler with cfg against ks, served by a server
// with no listener, and a loopback connection of it: the handler path on
// bytes, without a socket.
func loopbackOn(tb testing.TB, cfg Config, ks Keyspace) (*Handler, *server.Conn) {
	tb.Helper()
	quiet := slog.New(slog.DiscardHandler)
	cfg.Logger = quiet
	h, err := New(cfg, ks, NewClock())
	if err != nil {
		tb.Fatal(err)
	}
	scfg := server.DefaultConfig()
	scfg.EventLoops, scfg.Clock, scfg.Logger = 0, h.Clock(), quiet
	srv, err := server.New(scfg, h)
	if err != nil {
		tb.Fatal(err)
	}
	h.Attach(srv)
	c, err := srv.Loopback()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Hangup)
	return h, c
}

// feed runs one batch through c and fails on an error reply.
func feed(tb testing.TB, c *server.Conn, batch []byte) {
	out, closed := c.Feed(batch)
	if closed || len(out) == 0 || out[0] == '-' {
		tb.Fatalf("the batch failed: %.200q", out)
	}
}

// benchPipeline runs b.N commands, benchBatch per batch, the batch made by
// mk(i) for i in [0, benchBatch).
func benchPipeline(b *testing.B, mk func(i int) []string) {
	c := loopback(b)
	var batch strings.Builder
	for i := 0; i < benchBatch; i++ {
		batch.WriteString(frame(mk(i)...))
	}
	in := []byte(batch.String())
	for i := 0; i < 64; i++ { // warm up: keys, rings, buffers
		feed(b, c, in)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += benchBatch {
		feed(b, c, in)
	}
}

func key(i int) string { return "user:" + strconv.Itoa(i) }

func BenchmarkCmdToken(b *testing.B) {
	benchPipeline(b, func(i int) []string { return []string{"RL.TOKEN", key(i), "1000/s", "100000"} })
}

func BenchmarkCmdLeaky(b *testing.B) {
	benchPipeline(b, func(i int) []string { return []string{"RL.LEAKY", key(i), "1000/s", "100000"} })
}

func BenchmarkCmdFixed(b *testing.B) {
	benchPipeline(b, func(i int) []string { return []string{"RL.FIXED", key(i), "100000000", "1h"} })
}

func BenchmarkCmdSliding(b *testing.B) {
	benchPipeline(b, func(i int) []string { return []string{"RL.SLIDING", key(i), "100000000", "1h"} })
}

func BenchmarkCmdLog(b *testing.B) {
	benchPipeline(b, func(i int) []string { return []string{"RL.LOG", key(i), "1000", "1s"} })
}

func BenchmarkCmdThrottle(b *testing.B) {
	benchPipeline(b, func(i int) []string { return []string{"CL.THROTTLE", key(i), "100", "1000", "1"} })
}

func BenchmarkCmdAllOfThree(b *testing.B) {
	benchPipeline(b, func(i int) []string {
		return []string{"RL.ALL", "1", "TOKEN", key(i), "1000/s", "100000", "FIXED", key(i) + ":day", "100000000", "1d",
			"SLIDING", "api", "100000000", "1h"}
	})
}

func BenchmarkCmdAcquireRelease(b *testing.B) {
	benchPipeline(b, func(i int) []string {
		switch {
		case i == 0: // a holder that stays, so that the key does too
			return []string{"RL.ACQUIRE", "jobs", "1000", "1h", "keeper"}
		case i%2 == 0:
			return []string{"RL.ACQUIRE", "jobs", "1000", "1h", "worker-" + strconv.Itoa(i)}
		default:
			return []string{"RL.RELEASE", "jobs", "worker-" + strconv.Itoa(i-1)}
		}
	})
}

// pipeline is depth commands, RL.TOKEN on keys of 1000 or PING.
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

// benchHandler runs b.N commands through the handler path, in batches of
// depth commands.
func benchHandler(b *testing.B, depth int, cmd string) {
	c := loopback(b)
	batch := pipeline(depth, 1000, cmd)
	feed(b, c, batch)
	b.ReportAllocs()
	b.SetBytes(int64(len(batch) / depth))
	b.ResetTimer()
	for i := 0; i < b.N; i += depth {
		feed(b, c, batch)
	}
}

func BenchmarkHandlerTokenP1(b *testing.B)  { benchHandler(b, 1, "RL.TOKEN") }
func BenchmarkHandlerTokenP16(b *testing.B) { benchHandler(b, 16, "RL.TOKEN") }
func BenchmarkHandlerPingP16(b *testing.B)  { benchHandler(b, 16, "PING") }

// TestHandlerDoesNotAllocate holds the handler path to zero heap
// allocations per decision once the connection's buffers have grown.
func TestHandlerDoesNotAllocate(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation count is measured in full runs")
	}
	c := loopback(t)
	batch := pipeline(16, 16, "RL.TOKEN")
	run := func() { feed(t, c, batch) }
	run() // warm up: the buffers and the keys' entries exist after this
	if allocs := testing.AllocsPerRun(200, run); allocs != 0 {
		t.Fatalf("a batch of 16 RL.TOKEN allocates %.1f times; want 0", allocs)
	}
}

// TestConnectionFootprint pins what one connection holds: a new client's
// session within the bytes the transport counts for it before its first
// batch (server.SessionEstimate, in its baseFootprint, which maxmemory-clients starts
// from), and, after a pipeline of 16 RL.TOKEN, the whole connection (the
// transport's Conn and buffers, and the session with its deferred queue)
// within its 16 KiB read buffer and 8 KiB besides.
func TestConnectionFootprint(t *testing.T) {
	c := loopback(t)
	s := c.Session().(*session)
	if fp := s.footprint(); fp > server.SessionEstimate {
		t.Errorf("a new session holds %d bytes (the struct: %d); the transport counts %d", fp, unsafe.Sizeof(session{}), server.SessionEstimate)
	}
	feed(t, c, pipeline(16, 16, "RL.TOKEN"))
	feed(t, c, pipeline(16, 16, "RL.TOKEN"))
	if m := c.Info().Memory; m > 16<<10+8<<10 {
		t.Errorf("after pipelines of 16 RL.TOKEN a connection holds %d bytes; want at most 24 KiB", m)
	}
	t.Logf("server.Conn %d bytes, session %d (deferred queue %d); after P16 RL.TOKEN: session %d, connection %d",
		unsafe.Sizeof(server.Conn{}), unsafe.Sizeof(session{}), unsafe.Sizeof(deferred{}), s.footprint(), c.Info().Memory)
}
