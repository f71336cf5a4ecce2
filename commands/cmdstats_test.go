package commands

import (
	"testing"
	"time"

	"github.com/sluice-rl/sluice/store"
)

func TestLatencyBucketsBoundTheirTimes(t *testing.T) {
	for _, ns := range []int64{0, 1, 999, 1000, 1001, 1189, 1190, 1500, 2000, 123456, 2_097_152_000, 1e10} {
		k := latBucket(ns)
		switch {
		case k < latBuckets && latBounds[k] < ns:
			t.Errorf("%d ns in bucket %d bounded by %d", ns, k, latBounds[k])
		case k > 0 && latBounds[k-1] >= ns:
			t.Errorf("%d ns in bucket %d, but bucket %d (%d) holds it", ns, k, k-1, latBounds[k-1])
		}
	}
	if latBounds[0] != 1000 || latBounds[latPerDoubling] != 2000 || latBounds[latBuckets-1] != 1000<<21 {
		t.Fatalf("bounds %d, %d, %d; want 1µs, 2µs, 2^21µs", latBounds[0], latBounds[latPerDoubling], latBounds[latBuckets-1])
	}
}

func TestQuantileIsTheBoundOfItsBucket(t *testing.T) {
	var h Histogram
	// 900 observations of 10µs, 90 of 100µs, 10 of 1ms.
	h.Counts[latBucket(10_000)] = 900
	h.Counts[latBucket(100_000)] = 90
	h.Counts[latBucket(1_000_000)] = 10
	for _, c := range []struct {
		q    float64
		true time.Duration
	}{{0.5, 10 * time.Microsecond}, {0.99, 100 * time.Microsecond}, {0.999, time.Millisecond}} {
		got := h.Quantile(c.q)
		if got < c.true || float64(got) > 1.19*float64(c.true) {
			t.Errorf("p%v = %v; want within [%v, +19%%]", c.q*100, got, c.true)
		}
	}
	var empty Histogram
	if empty.Quantile(0.5) != 0 {
		t.Error("the quantile of nothing is not 0")
	}
}

func TestBatchCountsReachTheCommandStats(t *testing.T) {
	h, c := loopbackOn(t, DefaultConfig(), store.New(8))
	feed(t, c, []byte(frame("RL.TOKEN", "k", "1/m", "2")+frame("RL.TOKEN", "k", "1/m", "2")+
		frame("RL.TOKEN", "k", "1/m", "2")+frame("PING")))
	var tok, ping CommandStat
	for _, cs := range h.CommandStats() {
		switch cs.Name {
		case "rl.token":
			tok = cs
		case "ping":
			ping = cs
		}
	}
	if tok.Calls != 3 || tok.Allowed != 2 || tok.Denied != 1 || tok.Latency.Count() != 3 || ping.Calls != 1 {
		t.Fatalf("rl.token %+v, ping %+v; want 3 calls (2 allowed, 1 denied) and 1", tok, ping)
	}
	if tok.Family != "decision" || ping.Family != "connection" {
		t.Fatalf("families %q, %q", tok.Family, ping.Family)
	}
}

func TestMoreDistinctCommandsThanSlotsInOneBatch(t *testing.T) {
	h, c := loopbackOn(t, DefaultConfig(), store.New(8))
	names := []string{"PING", "TIME", "DBSIZE", "ECHO", "EXISTS", "TYPE", "PTTL", "TTL", "DEL", "UNLINK", "LASTSAVE"}
	var batch []byte
	for _, n := range names {
		args := []string{n}
		switch n {
		case "ECHO", "EXISTS", "TYPE", "PTTL", "TTL", "DEL", "UNLINK":
			args = append(args, "x")
		}
		batch = append(batch, frame(args...)...)
	}
	c.Feed(batch)
	var calls int64
	for _, cs := range h.CommandStats() {
		calls += cs.Calls
	}
	if calls != int64(len(names)) {
		t.Fatalf("%d calls counted; want %d", calls, len(names))
	}
}

// BenchmarkCountingABatch is what the per-command figures add to a batch of
// 16 decisions: a slot per command, the decision counts, and one flush
// with its clock read. (The batch's start is the transport's read, free
// here as in the server; the slow log is off, as the batches' times grow.)
func BenchmarkCountingABatch(b *testing.B) {
	h, c := loopbackOn(b, DefaultConfig(), store.New(8))
	s := newSession(h, c)
	cmd := lookupCommand([]byte("rl.token"))
	h.slowlog.slower.Store(-1)
	start := h.clock.realNow()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += 16 {
		s.batchStart = start
		for j := 0; j < 16; j++ {
			sl := s.slotFor(cmd)
			s.cur, s.curCmd = sl+1, cmd.idx+1
			s.slots[sl].calls++
			s.cur, s.curCmd = 0, 0
		}
		for j := 0; j < 16; j++ {
			s.cur = s.slotFor(cmd) + 1
			s.countDecision(j%4 != 0)
		}
		s.restoreSlot(0)
		s.flushStats()
	}
}
