package shard

import (
	"fmt"
	"testing"
	"unsafe"
)

// BenchmarkLinesTouched decides token buckets (Find, then Commit in place)
// over 100,000 present keys of 15 bytes, bench's key shape, and reports the
// 64-byte cache lines each decision touches, from the layout itself: the
// index slots its probe reads (index-lines/op), the record it reads and
// rewrites (record-lines/op), and the lines of the Shard that every
// decision writes (its mutex, clock and counters: shard-lines/op), which
// stay in the cache of a core that has the shard to itself and move
// between cores that share it. B/key is the index and arena bytes per key.
// With keys drawn from more than the caches hold, a decision's memory
// traffic is at most one read per index line and a read and a write-back
// per record line.
func BenchmarkLinesTouched(b *testing.B) {
	const nkeys = 100_000
	var s Shard
	keys := make([][]byte, nkeys)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("tk:%012d", i))
		e := tokenEntry(t0 + 1e12) // alive through the run: every decision finds its key
		if err := s.Commit(s.refOf(keys[i]), keys[i], &e, t0); err != nil {
			b.Fatal(err)
		}
	}
	base := uintptr(unsafe.Pointer(&s))
	shardLines := distinctLines(base+unsafe.Offsetof(s.mu), base+unsafe.Offsetof(s.epoch), base+unsafe.Offsetof(s.now),
		base+unsafe.Offsetof(s.stats)+unsafe.Offsetof(s.stats.Hits), base+unsafe.Offsetof(s.stats)+unsafe.Offsetof(s.stats.Changes),
		base+unsafe.Offsetof(s.idx), base+unsafe.Offsetof(s.arena))
	var indexLines, recordLines int
	now := t0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := keys[i%nkeys]
		il, rl := s.linesOf(k)
		indexLines += il
		recordLines += rl
		now += 100
		var e Entry
		ref := s.FindInto(k, s.Hash(k), now, &e)
		next := tokenEntry(max(e.State[0], now) + 1000)
		if err := s.Commit(ref, k, &next, now); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	st := s.Stats()
	b.ReportMetric(float64(indexLines)/float64(b.N), "index-lines/op")
	b.ReportMetric(float64(recordLines)/float64(b.N), "record-lines/op")
	b.ReportMetric(float64(shardLines), "shard-lines/op")
	b.ReportMetric(float64(st.Used())/nkeys, "B/key")
}

// refOf is Find's Ref for key, for filling a shard.
func (s *Shard) refOf(key []byte) Ref {
	var e Entry
	return s.FindInto(key, s.Hash(key), t0, &e)
}

// linesOf returns the cache lines a lookup of the present key reads in
// the index (its probe, from the key's home slot to its own) and in the
// arena (the whole record, which a decision reads and rewrites).
func (s *Shard) linesOf(key []byte) (index, record int) {
	h := s.Hash(key)
	slot, l, ok := s.lookup(key, uint32(h>>32))
	if !ok {
		return 0, 0
	}
	m := s.idx.mask()
	line := ^uintptr(0)
	for i := uint32(h>>32) & m; ; i = (i + 1) & m { // a probe's slots ascend, but for a wrap to slot 0
		if a := uintptr(unsafe.Pointer(&s.idx.slots[i])) / 64; a != line {
			index, line = index+1, a
		}
		if i == slot {
			break
		}
	}
	c, w := s.arena.at(l)
	n := s.arena.size(l)
	first, last := uintptr(unsafe.Pointer(&c[w])), uintptr(unsafe.Pointer(&c[w+n-1]))
	return index, int(last/64-first/64) + 1
}

// distinctLines counts the 64-byte lines that addrs fall on.
func distinctLines(addrs ...uintptr) int {
	seen := map[uintptr]bool{}
	for _, a := range addrs {
		seen[a/64] = true
	}
	return len(seen)
}
