package commands

import (
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/store"
)

// Benchmarks of the whole command path inside the server: parse a pipeline
// of 16 commands from the read buffer, queue the decisions, carry them out
// in one Keyspace.Decide call, write the replies. ns/op and allocs/op are per
// command; the steady state must not allocate.

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

// benchPipeline runs b.N commands, benchBatch per batch, the batch made by
// mk(i) for i in [0, benchBatch).
func benchPipeline(b *testing.B, mk func(i int) []string) {
	srv := NewServer(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, store.New(16), NewClock())
	nc, peer := net.Pipe()
	defer nc.Close()
	defer peer.Close()
	c := newClient(srv, nc, 1)
	var batch strings.Builder
	for i := 0; i < benchBatch; i++ {
		batch.WriteString(frame(mk(i)...))
	}
	in := []byte(batch.String())
	run := func() {
		c.in, c.start, c.end = in, 0, len(in)
		c.runBatch()
		if c.errors != 0 || len(c.out) == 0 || c.out[0] == '-' {
			b.Fatalf("the batch failed: %.200q", c.out)
		}
		c.out = c.out[:0]
	}
	for i := 0; i < 64; i++ { // warm up: keys, rings, buffers
		run()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += benchBatch {
		run()
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
