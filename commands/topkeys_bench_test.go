package commands

import (
	"fmt"
	"testing"

	"github.com/sluice-rl/sluice/server"
	"github.com/sluice-rl/sluice/store"
)

// The heavy-hitters sketches' cost on the decision path: pipelines of 16
// RL.TOKEN on keys that cycle through 4096, so that nearly every decision
// replaces a sketch's least counted key (the sketches' worst case), with
// top keys on (64 counters) and off.

// cyclingBatches returns n batches of 16 RL.TOKEN on keys user:0 …
// user:<16n-1>, each batch on keys of its own.
func cyclingBatches(n int) [][]byte {
	out := make([][]byte, n)
	for j := range out {
		var b []byte
		for i := 0; i < 16; i++ {
			key := fmt.Sprintf("user:%06d", j*16+i)
			b = fmt.Appendf(b, "*4\r\n$8\r\nRL.TOKEN\r\n$%d\r\n%s\r\n$4\r\n10/s\r\n$3\r\n100\r\n", len(key), key)
		}
		out[j] = b
	}
	return out
}

func topKeysConn(tb testing.TB, k int) *server.Conn {
	cfg := DefaultConfig()
	cfg.TopKeys = k
	_, c := loopbackOn(tb, cfg, store.New(16))
	return c
}

func benchTopKeys(b *testing.B, k int) {
	c := topKeysConn(b, k)
	batches := cyclingBatches(256)
	for _, batch := range batches { // warm up: keys, buffers, sketches
		feed(b, c, batch)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += 16 {
		feed(b, c, batches[(i/16)%len(batches)])
	}
}

func BenchmarkHandlerTokenP16TopKeysOn(b *testing.B)  { benchTopKeys(b, 64) }
func BenchmarkHandlerTokenP16TopKeysOff(b *testing.B) { benchTopKeys(b, 0) }

// TestTopKeysDoNotAllocate holds the decision path with top keys on to
// zero allocations, on keys that keep replacing the sketches' counters.
func TestTopKeysDoNotAllocate(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation count is measured in full runs")
	}
	c := topKeysConn(t, 64)
	batches := cyclingBatches(256)
	for _, batch := range batches {
		feed(t, c, batch)
	}
	i := 0
	run := func() { feed(t, c, batches[i%len(batches)]); i++ }
	if allocs := testing.AllocsPerRun(500, run); allocs != 0 {
		t.Fatalf("a batch of 16 RL.TOKEN with top keys on allocates %.1f times; want 0", allocs)
	}
}

// benchTopKeysRepeating is benchTopKeys on one batch of 16 keys sent
// again and again: every decision finds its key counted already (the
// sketches' usual case: a few keys make most of the traffic).
func benchTopKeysRepeating(b *testing.B, k int) {
	c := topKeysConn(b, k)
	batch := pipeline(16, 1000, "RL.TOKEN")
	feed(b, c, batch)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += 16 {
		feed(b, c, batch)
	}
}

func BenchmarkHandlerTokenP16RepeatingTopKeysOn(b *testing.B)  { benchTopKeysRepeating(b, 64) }
func BenchmarkHandlerTokenP16RepeatingTopKeysOff(b *testing.B) { benchTopKeysRepeating(b, 0) }
