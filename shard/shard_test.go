package shard

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/sluice-rl/sluice/algorithms"
)

const t0 = int64(1_800_000_000_000_000_000)

func tokenEntry(tat int64) Entry {
	return Entry{Algo: algorithms.Token, Expire: tat, State: [3]int64{tat}}
}

// put commits e for key at now and fails the test on an error.
func put(t testing.TB, s *Shard, key string, e Entry, now int64) {
	t.Helper()
	ref, _ := s.Find([]byte(key), now)
	if err := s.Commit(ref, []byte(key), &e, now); err != nil {
		t.Fatalf("Commit(%q) = %v", key, err)
	}
}

func get(s *Shard, key string, now int64) (Entry, bool) {
	ref, e := s.Find([]byte(key), now)
	return e, !ref.Absent()
}

func sameEntry(a, b Entry) bool {
	return a.Algo == b.Algo && a.Expire == b.Expire && a.State == b.State && a.Depleted == b.Depleted &&
		slices.Equal(a.Ext, b.Ext)
}

func TestGrowthKeepsEveryKey(t *testing.T) {
	var s Shard
	n := 100_000
	if raceEnabled {
		n = 30_000
	}
	for i := 0; i < n; i++ {
		put(t, &s, fmt.Sprintf("user:%08d", i), tokenEntry(t0+int64(i)+1), t0)
	}
	if s.idx.n != n || s.stats.Keys != int64(n) {
		t.Fatalf("index holds %d, Keys = %d; want %d", s.idx.n, s.stats.Keys, n)
	}
	if got := len(s.idx.slots); got < n*4/3 {
		t.Fatalf("table has %d slots for %d keys: over 3/4 full", got, n)
	}
	for i := 0; i < n; i++ {
		e, ok := get(&s, fmt.Sprintf("user:%08d", i), t0)
		if !ok || e.State[0] != t0+int64(i)+1 {
			t.Fatalf("key %d after growth: %+v, %v", i, e, ok)
		}
	}
	if got := s.Len(t0); got != n {
		t.Fatalf("Len = %d", got)
	}
	// 16-byte keys, token state: four words a record.
	if per := float64(s.arena.words*8) / float64(n); per > 33 {
		t.Fatalf("%.1f arena bytes per token bucket; want 32 and the chunks' bitmaps", per)
	}
}

func TestDeletedRoomIsReused(t *testing.T) {
	var s Shard
	for i := 0; i < 20_000; i++ {
		put(t, &s, fmt.Sprintf("a:%d", i), tokenEntry(t0+1000), t0)
	}
	before := s.Stats()
	for i := 0; i < 20_000; i++ {
		if !s.Delete([]byte(fmt.Sprintf("a:%d", i)), t0) {
			t.Fatalf("Delete(a:%d) = false", i)
		}
	}
	if st := s.Stats(); st.Keys != 0 || st.FreeBytes == 0 {
		t.Fatalf("after deleting all: %+v", st)
	}
	for i := 0; i < 20_000; i++ {
		put(t, &s, fmt.Sprintf("b:%d", i), tokenEntry(t0+1000), t0) // same sizes as the a: keys
	}
	after := s.Stats()
	if after.ArenaBytes != before.ArenaBytes || after.IndexBytes != before.IndexBytes || after.FreeBytes != 0 {
		t.Fatalf("reuse: before %+v, after %+v; want the same bytes, none free", before, after)
	}
}

func TestForcedCollisions(t *testing.T) {
	for _, tc := range []struct {
		name string
		hash func([]byte) uint64
	}{
		{"one hash for all", func([]byte) uint64 { return 7 << 32 }},
		{"tags at the table's end", func(k []byte) uint64 { return uint64(1<<32-1-uint32(len(k)%3)) << 32 }},
		{"few tags", func(k []byte) uint64 { return uint64(k[len(k)-1]%4) << 32 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Shard{hashFn: tc.hash}
			rng := rand.New(rand.NewPCG(1, 2))
			model := map[string]int64{}
			for step := 0; step < 3000; step++ {
				k := fmt.Sprintf("k%d", rng.IntN(400))
				switch rng.IntN(3) {
				case 0, 1:
					v := t0 + 1 + rng.Int64N(1000)
					put(t, &s, k, tokenEntry(v), t0)
					model[k] = v
				case 2:
					_, want := model[k]
					if got := s.Delete([]byte(k), t0); got != want {
						t.Fatalf("step %d: Delete(%s) = %v; want %v", step, k, got, want)
					}
					delete(model, k)
				}
				if s.idx.n != len(model) {
					t.Fatalf("step %d: index holds %d; model %d", step, s.idx.n, len(model))
				}
			}
			for k, v := range model {
				if e, ok := get(&s, k, t0); !ok || e.State[0] != v {
					t.Fatalf("%s = %+v, %v; want TAT %d", k, e, ok, v)
				}
			}
		})
	}
}

func TestEveryEntryShapeRoundTrips(t *testing.T) {
	big := make([]int64, chunkWords+100) // a record larger than a chunk
	for i := range big {
		big[i] = int64(i) * 3
	}
	shapes := []Entry{
		tokenEntry(t0 + 5),
		{Algo: 2, Expire: t0 + 9, State: [3]int64{1, 2, 3}},
		{Algo: 3, Expire: t0 + 9, State: [3]int64{0, 0, -7}},
		{Algo: 4, Expire: t0 + 9},
		{Algo: 5, Expire: t0 + 9, State: [3]int64{t0 + 9, 4}, Depleted: true},
		{Algo: 6, Expire: t0 + 9, State: [3]int64{10}, Ext: []int64{-1, 0, 1 << 62}},
		{Algo: 7, Expire: t0 + 9, Ext: []int64{42}},
		{Algo: 8, Expire: t0 + 9, State: [3]int64{1, 2, 3}, Ext: big},
	}
	keys := []string{"", "a", "1234567", "12345678", "123456789", string(make([]byte, 1000))}
	var s Shard
	for i, e := range shapes {
		for j, k := range keys {
			key := fmt.Sprintf("%d/%d/%s", i, j, k)
			put(t, &s, key, e, t0)
			got, ok := get(&s, key, t0)
			if !ok || !sameEntry(got, e) {
				t.Fatalf("shape %d key %d: got %+v (present %v); want %+v", i, j, got.State, ok, e.State)
			}
		}
	}
	// An empty key is a key.
	put(t, &s, "", tokenEntry(t0+3), t0)
	if e, ok := get(&s, "", t0); !ok || e.Expire != t0+3 {
		t.Fatalf("empty key: %+v %v", e, ok)
	}
	// The dedicated chunks go back to the system when their records go.
	used := s.Stats().ArenaBytes
	for j, k := range keys {
		s.Delete([]byte(fmt.Sprintf("7/%d/%s", j, k)), t0)
	}
	if freed := used - s.Stats().ArenaBytes; freed < int64(len(keys)*len(big)*8) {
		t.Fatalf("deleting the large records freed %d bytes", freed)
	}
}

func TestUpdateResizesAndAliases(t *testing.T) {
	var s Shard
	key := []byte("log:1")
	put(t, &s, "log:1", Entry{Algo: 9, Expire: t0 + 100, Ext: []int64{1, 2}}, t0)
	put(t, &s, "neighbour", tokenEntry(t0+100), t0)
	for n := 3; n < 300; n += 37 {
		ref, e := s.Find(key, t0)
		ext := append(e.Ext, int64(n)) // capacity ends with the record: append copies
		if err := s.Commit(ref, key, &Entry{Algo: 9, Expire: t0 + 100, Ext: ext}, t0); err != nil {
			t.Fatal(err)
		}
		got, _ := get(&s, "log:1", t0)
		if len(got.Ext) != len(ext) || got.Ext[len(ext)-1] != int64(n) {
			t.Fatalf("after growing to %d: %v", len(ext), got.Ext)
		}
	}
	// In place: the algorithm edits the aliased ring and commits it.
	ref, e := s.Find(key, t0)
	e.Ext[0] = 77
	if err := s.Commit(ref, key, &e, t0); err != nil {
		t.Fatal(err)
	}
	got, _ := get(&s, "log:1", t0)
	if got.Ext[0] != 77 {
		t.Fatalf("in-place edit lost: %v", got.Ext[:3])
	}
	// Shrinking to no Ext.
	ref, _ = s.Find(key, t0)
	e = tokenEntry(t0 + 50)
	s.Commit(ref, key, &e, t0)
	if got, _ := get(&s, "log:1", t0); got.Ext != nil || got.Expire != t0+50 {
		t.Fatalf("after shrinking: %+v", got)
	}
	if e, ok := get(&s, "neighbour", t0); !ok || e.Expire != t0+100 {
		t.Fatal("the neighbour changed")
	}
}

func TestStaleRefsAfterOtherCommits(t *testing.T) {
	// RL.ALL's pattern: Find every key, then Commit every key, in one shard;
	// the same key may appear twice.
	s := Shard{hashFn: func([]byte) uint64 { return 1 << 32 }}
	a, b := []byte("a"), []byte("b")
	put(t, &s, "b", tokenEntry(t0+10), t0)
	ra, _ := s.Find(a, t0)
	rb, _ := s.Find(b, t0)
	ra2, _ := s.Find(a, t0)
	for _, c := range []struct {
		ref Ref
		key []byte
		tat int64
	}{{ra, a, t0 + 20}, {rb, b, t0 + 30}, {ra2, a, t0 + 40}} {
		e := tokenEntry(c.tat)
		if err := s.Commit(c.ref, c.key, &e, t0); err != nil {
			t.Fatal(err)
		}
	}
	if s.idx.n != 2 {
		t.Fatalf("index holds %d keys; want 2", s.idx.n)
	}
	if e, _ := get(&s, "a", t0); e.Expire != t0+40 {
		t.Fatalf("a = %d; want the last commit", e.Expire-t0)
	}
	if e, _ := get(&s, "b", t0); e.Expire != t0+30 {
		t.Fatalf("b = %d", e.Expire-t0)
	}
}

func TestLazyExpiry(t *testing.T) {
	var s Shard
	put(t, &s, "k", tokenEntry(t0+100), t0)
	if _, ok := get(&s, "k", t0+99); !ok {
		t.Fatal("gone 1ns before its expiry")
	}
	if _, ok := get(&s, "k", t0+100); ok {
		t.Fatal("present at its expiry")
	}
	if s.stats.Keys != 0 || s.stats.ExpiredKeys != 1 {
		t.Fatalf("stats %+v", s.stats)
	}
	// Committing an entry that is absent already stores nothing.
	put(t, &s, "k", tokenEntry(t0+100), t0+100)
	if s.stats.Keys != 0 {
		t.Fatal("stored an expired entry")
	}
}

// A key written again after its entry expired keeps its record: Commit
// rewrites it in place. One that is not written again is removed, as Find
// removes it.
func TestFindReusingRewritesAnExpiredRecordInPlace(t *testing.T) {
	var s Shard
	put(t, &s, "k", tokenEntry(t0+100), t0)
	put(t, &s, "other", tokenEntry(t0+1000), t0)
	words, free := s.arena.words, s.arena.freeWords
	key := []byte("k")
	var e Entry
	ref := s.FindReusing(key, s.Hash(key), t0+100, &e)
	if !sameEntry(e, Entry{}) {
		t.Fatalf("FindReusing of an expired entry gave %+v; want the zero Entry", e)
	}
	next := tokenEntry(t0 + 500)
	if err := s.Commit(ref, key, &next, t0+100); err != nil {
		t.Fatal(err)
	}
	s.DropExpired(ref, key, t0+100)
	if got, ok := get(&s, "k", t0+100); !ok || !sameEntry(got, next) {
		t.Fatalf("after the rewrite k = %+v, %v; want %+v", got, ok, next)
	}
	if s.arena.words != words || s.arena.freeWords != free {
		t.Fatalf("arena words %d, free %d; want %d, %d (the same record, rewritten)", s.arena.words, s.arena.freeWords, words, free)
	}
	if s.stats.Keys != 2 || s.stats.ExpiredKeys != 1 {
		t.Fatalf("stats %+v; want 2 keys, 1 expired", s.stats)
	}

	// Expired again, and this time a denial or a peek writes nothing: the
	// record goes, as Find would have removed it.
	e = Entry{}
	ref = s.FindReusing(key, s.Hash(key), t0+500, &e)
	s.DropExpired(ref, key, t0+500)
	if _, ok := get(&s, "k", t0+500); ok {
		t.Fatal("k is present after DropExpired")
	}
	if s.stats.Keys != 1 || s.stats.ExpiredKeys != 2 {
		t.Fatalf("stats %+v; want 1 key, 2 expired", s.stats)
	}
	if got, ok := get(&s, "other", t0+500); !ok || got.Expire != t0+1000 {
		t.Fatalf("other = %+v, %v", got, ok)
	}

	// A live entry's Ref is an ordinary one: DropExpired leaves it.
	e = Entry{}
	ref = s.FindReusing([]byte("other"), s.Hash([]byte("other")), t0+500, &e)
	s.DropExpired(ref, []byte("other"), t0+500)
	if _, ok := get(&s, "other", t0+500); !ok || e.Expire != t0+1000 {
		t.Fatalf("other gone or misread (%+v) after DropExpired of a live entry", e)
	}
}

func TestSweepRemovesEveryExpired(t *testing.T) {
	var s Shard
	for i := 0; i < 5000; i++ {
		put(t, &s, fmt.Sprintf("k%d", i), tokenEntry(t0+int64(1+i%2)*1000), t0)
	}
	examined, removed := 0, 0
	for i := 0; i < 1000 && s.stats.Keys > 2500; i++ {
		ex, rm := s.Sweep(t0+1500, 20)
		examined, removed = examined+ex, removed+rm
		if ex > 20 {
			t.Fatalf("examined %d > budget", ex)
		}
	}
	if removed != 2500 || s.Len(t0+1500) != 2500 {
		t.Fatalf("removed %d, %d live; want 2500 each", removed, s.Len(t0+1500))
	}
	if examined > 5100 {
		t.Fatalf("examined %d to remove 2500 of 5000", examined)
	}
	// An empty shard sweeps nothing and does not spin.
	var empty Shard
	if ex, rm := empty.Sweep(t0, 20); ex != 0 || rm != 0 {
		t.Fatal("empty shard swept something")
	}
}

func TestScanFindsStableKeysAndSurvivesAnyCursor(t *testing.T) {
	var s Shard
	stable := map[string]bool{}
	for i := 0; i < 3000; i++ {
		k := fmt.Sprintf("stable:%d", i)
		stable[k] = true
		put(t, &s, k, tokenEntry(t0+1_000_000), t0)
		put(t, &s, fmt.Sprintf("tmp:%d", i), tokenEntry(t0+1_000_000), t0)
	}
	seen := map[string]bool{}
	pos := 0
	for calls := 0; ; calls++ {
		s.Delete([]byte(fmt.Sprintf("tmp:%d", calls)), t0)
		put(t, &s, fmt.Sprintf("new:%d:%s", calls, "longer-key-than-before"), tokenEntry(t0+1_000_000), t0)
		pos, _ = s.Scan(pos, 13, t0, func(k []byte, _ Entry) { seen[string(k)] = true })
		if pos == 0 {
			break
		}
	}
	for k := range stable {
		if !seen[k] {
			t.Fatalf("scan missed %s", k)
		}
	}
	for _, bogus := range []int{1, 7, 511, 513, 1<<15 + 3, 1 << 31, 1<<32 - 1, -5, 1 << 40} {
		s.Scan(bogus, 50, t0, func(k []byte, e Entry) {
			if _, ok := get(&s, string(k), t0); !ok {
				t.Fatalf("cursor %d returned %q, which is not a key", bogus, k)
			}
		})
	}
}

// TestWalkStopsAndResumesAtTheKey: a walk stopped by fn returns the
// position of the key it stopped at, and a walk from there offers that key
// first; stopping after every third key still finds every stable key.
func TestWalkStopsAndResumesAtTheKey(t *testing.T) {
	var s Shard
	for i := 0; i < 500; i++ {
		put(t, &s, fmt.Sprintf("stable:%d", i), tokenEntry(t0+1_000_000), t0)
	}
	seen := map[string]int{}
	pos, stopped, offered := 0, "", 0
	for calls := 0; ; calls++ {
		first := true
		next, _ := s.Walk(pos, 50, t0, func(at int, k []byte, _ Entry) bool {
			if at <= 0 {
				t.Fatalf("position %d for %q", at, k)
			}
			if first && stopped != "" && string(k) != stopped {
				t.Fatalf("walk resumed at %q; want %q, where it stopped", k, stopped)
			}
			first = false
			if offered++; offered%3 == 0 {
				stopped = string(k)
				return false
			}
			seen[string(k)]++
			stopped = ""
			return true
		})
		if next == 0 {
			break
		}
		if calls > 10_000 {
			t.Fatal("the walk does not end")
		}
		pos = next
	}
	if len(seen) != 500 {
		t.Fatalf("walk saw %d keys; want 500", len(seen))
	}
}

func TestFlushGivesMemoryBack(t *testing.T) {
	var s Shard
	for i := 0; i < 1000; i++ {
		put(t, &s, fmt.Sprint(i), tokenEntry(t0+10), t0)
	}
	s.Flush()
	if st := s.Stats(); st.Used() != 0 || st.Keys != 0 || s.Len(t0) != 0 {
		t.Fatalf("after Flush: %+v", st)
	}
	put(t, &s, "again", tokenEntry(t0+10), t0)
	if _, ok := get(&s, "again", t0); !ok {
		t.Fatal("shard unusable after Flush")
	}
}

func BenchmarkFindCommit(b *testing.B) {
	var s Shard
	keys := make([][]byte, 1<<16)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("user:%011d", i))
	}
	now := t0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		now += 100
		k := keys[i&(1<<16-1)]
		h := s.Hash(k)
		var e Entry
		ref := s.FindInto(k, h, now, &e)
		next := tokenEntry(max(e.State[0], now) + 1000)
		if err := s.Commit(ref, k, &next, now); err != nil {
			b.Fatal(err)
		}
	}
}

// TestExtRoomMakesAppendsCheap: an Ext that grows one element a commit
// (a lease table) gets room reserved in its record, so the algorithm's
// appends land in the record and allocate only when the room runs out,
// a logarithmic number of times.
func TestExtRoomMakesAppendsCheap(t *testing.T) {
	var s Shard
	key := []byte("leases")
	const n = 200
	allocs := testing.AllocsPerRun(1, func() {
		s.Flush()
		for i := 0; i < n; i++ {
			ref, e := s.Find(key, t0)
			e.Algo, e.Expire = 9, t0+100
			e.Ext = append(e.Ext, int64(i))
			if err := s.Commit(ref, key, &e, t0); err != nil {
				t.Fatal(err)
			}
		}
	})
	if allocs > 25 {
		t.Fatalf("%v allocations for %d appends; want the room to grow geometrically", allocs, n)
	}
	e, _ := get(&s, "leases", t0)
	for i, v := range e.Ext {
		if v != int64(i) {
			t.Fatalf("Ext[%d] = %d after the appends", i, v)
		}
	}
	if len(e.Ext) != n || cap(e.Ext) > n+n/4+2 {
		t.Fatalf("len %d cap %d", len(e.Ext), cap(e.Ext))
	}
	checkArena(t, &s.arena)
}

// TestShardFillsWholeCacheLines: the store keeps shards in one slice, and
// two cores locking neighbouring shards must not fight over a cache line.
func TestShardFillsWholeCacheLines(t *testing.T) {
	if size := unsafe.Sizeof(Shard{}); size%64 != 0 {
		t.Fatalf("a Shard takes %d bytes, %d past a whole cache line: adjust its padding", size, size%64)
	}
}
