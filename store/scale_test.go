package store

import (
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/algorithms"
)

// The scale tests fill a store with millions of keys and report what it
// costs. They run only when SLUICE_SCALE_KEYS is set (10M keys need about
// 1 GB here, and 2.5 GB more for the map they are compared with):
//
//	SLUICE_SCALE_KEYS=10000000 go test -run Scale -v -timeout 30m ./store

func scaleKeys(t *testing.T) int {
	v := os.Getenv("SLUICE_SCALE_KEYS")
	if v == "" {
		t.Skip("set SLUICE_SCALE_KEYS=10000000 to run")
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("SLUICE_SCALE_KEYS=%q", v)
	}
	return n
}

func rssBytes() int64 {
	b, _ := os.ReadFile("/proc/self/statm")
	f := strings.Fields(string(b))
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// scaleKey writes the i-th 16-byte key into buf.
func scaleKey(buf []byte, i int) []byte {
	buf = append(buf[:0], "k:"...)
	s := strconv.Itoa(i)
	for j := len(s); j < 14; j++ {
		buf = append(buf, '0')
	}
	return append(buf, s...)
}

// gcTimes runs three full collections and returns the longest wall time
// of one runtime.GC() and the longest stop-the-world pause.
func gcTimes() (wall, pause time.Duration) {
	for i := 0; i < 3; i++ {
		t := time.Now()
		runtime.GC()
		wall = max(wall, time.Since(t))
		var s debug.GCStats
		debug.ReadGCStats(&s)
		pause = max(pause, s.Pause[0])
	}
	return wall, pause
}

func TestScaleMemoryGCAndLatency(t *testing.T) {
	n := scaleKeys(t)
	runtime.GC()
	debug.FreeOSMemory()
	before := rssBytes()
	st := New(16 * runtime.GOMAXPROCS(0))
	reqs := []algorithms.Request{token("", time.Hour, 100000, 1)}
	out := make([]algorithms.Outcome, 1)
	var buf []byte
	start := time.Now()
	for i := 0; i < n; i++ {
		buf = scaleKey(buf, i)
		reqs[0].Key = buf
		st.Decide(t0, reqs, out)
		if out[0].Err != nil {
			t.Fatal(out[0].Err)
		}
	}
	fill := time.Since(start)
	after := rssBytes()
	s := st.Stats()
	wall, pause := gcTimes()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("%d token buckets, 16-byte keys, %d shards: filled in %v (%.0f k/s)", n, st.Shards(), fill.Round(time.Millisecond),
		float64(n)/fill.Seconds()/1000)
	t.Logf("RSS growth %.1f B/bucket; store's own count %.1f B/bucket (arena %.1f, index %.1f); Go heap %d MiB",
		float64(after-before)/float64(n), float64(s.Used())/float64(n), float64(s.ArenaBytes)/float64(n),
		float64(s.IndexBytes)/float64(n), ms.HeapAlloc>>20)
	t.Logf("full GC (runtime.GC) with %d keys: longest %v wall, longest stop-the-world pause %v", n, wall, pause)

	// Decide latency on random live keys, in process: the store's share of
	// the request's time.
	samples := make([]time.Duration, 0, 1_000_000)
	now := t0 + int64(time.Second)
	for i := 0; i < cap(samples); i++ {
		buf = scaleKey(buf, int(uint64(i)*0x9E3779B97F4A7C15%uint64(n)))
		reqs[0].Key = buf
		t1 := time.Now()
		st.Decide(now, reqs, out)
		samples = append(samples, time.Since(t1))
	}
	slices.Sort(samples)
	q := func(p float64) time.Duration { return samples[int(p*float64(len(samples)-1))] }
	t.Logf("Store.Decide on random live keys: p50 %v, p99 %v, p99.9 %v, max %v", q(0.5), q(0.99), q(0.999), samples[len(samples)-1])

	// What copyShard does, timing each step: with the buffers grown
	// beforehand, a step is its lock hold.
	var longest time.Duration
	cbuf := make([]byte, 0, 64<<20)
	spans := make([]span, 0, 2*n/len(st.shards))
	for i := range st.shards {
		cbuf, spans = cbuf[:0], spans[:0]
		for pos := 0; ; {
			t1 := time.Now()
			pos, cbuf, spans = copyStepOf(&st.shards[i], pos, now, cbuf, spans)
			longest = max(longest, time.Since(t1))
			if pos == 0 {
				break
			}
		}
	}
	t.Logf("snapshot: the longest step copying entries out of a shard (its lock held for %d records): %v", copyStep, longest)

	var size countingWriter
	t1 := time.Now()
	if err := st.snapshotAt(&size, now); err != nil {
		t.Fatal(err)
	}
	t.Logf("snapshot of %d keys: %d MiB in %v", n, size>>20, time.Since(t1).Round(time.Millisecond))
	st.Flush(now)
}

// TestScaleGoMapComparison is the naive design the store replaces: a Go
// map from string keys to a small struct, with the collector scanning
// every key.
func TestScaleGoMapComparison(t *testing.T) {
	n := scaleKeys(t)
	type bucket struct{ tat, expire int64 }
	runtime.GC()
	debug.FreeOSMemory()
	before := rssBytes()
	m := make(map[string]bucket)
	var buf []byte
	for i := 0; i < n; i++ {
		buf = scaleKey(buf, i)
		m[string(buf)] = bucket{int64(i), int64(i)}
	}
	runtime.GC()
	after := rssBytes()
	wall, pause := gcTimes()
	t.Logf("map[string]struct{tat, expire int64} with %d keys: RSS growth %.1f B/key; full GC longest %v wall, pause %v",
		n, float64(after-before)/float64(n), wall, pause)
	runtime.KeepAlive(m)
}

// TestScaleSweepThroughput measures how fast active expiry removes buckets
// that expired without being touched again.
func TestScaleSweepThroughput(t *testing.T) {
	n := scaleKeys(t) / 10
	st := New(16 * runtime.GOMAXPROCS(0))
	reqs := []algorithms.Request{token("", time.Millisecond, 1, 1)}
	out := make([]algorithms.Outcome, 1)
	var buf []byte
	for i := 0; i < n; i++ {
		buf = scaleKey(buf, i)
		reqs[0].Key = buf
		st.Decide(t0, reqs, out)
	}
	now := t0 + int64(time.Second)
	calls, start := 0, time.Now()
	for st.Stats().Keys > 0 && calls < 10_000 {
		st.Sweep(now)
		calls++
	}
	took := time.Since(start)
	sw := st.SweepTotals()
	t.Logf("sweep removed %d expired buckets in %d calls, %v of sweeping: %.1f M entries/s; rounds %d, longest call %v",
		n, calls, took.Round(time.Millisecond), float64(n)/took.Seconds()/1e6, sw.Rounds, sw.Most)
	if st.Stats().Keys != 0 {
		t.Fatalf("%d left", st.Stats().Keys)
	}
}

type countingWriter int64

func (w *countingWriter) Write(b []byte) (int, error) {
	*w += countingWriter(len(b))
	return len(b), nil
}
