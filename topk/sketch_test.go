package topk

import (
	"bytes"
	"fmt"
	"math/rand"
	"slices"
	"strconv"
	"testing"
)

// zipfStream returns n keys drawn from a Zipf law over universe keys
// (exponent s), fixed by seed, and their exact counts.
func zipfStream(seed int64, s float64, universe uint64, n int) ([][]byte, map[string]uint64) {
	r := rand.New(rand.NewSource(seed))
	z := rand.NewZipf(r, s, 1, universe-1)
	keys := make([][]byte, n)
	exact := map[string]uint64{}
	for i := range keys {
		keys[i] = []byte("user:" + strconv.FormatUint(z.Uint64(), 10))
		exact[string(keys[i])]++
	}
	return keys, exact
}

// checkBounds checks every guarantee of a summary of a stream whose exact
// counts are exact: those of checkMergedBounds, and besides errors within
// total/k and every key above total/k kept.
func checkBounds(t *testing.T, top []Entry, floor, total uint64, k int, exact map[string]uint64) {
	t.Helper()
	checkMergedBounds(t, top, floor, exact)
	kept := map[string]bool{}
	for _, e := range top {
		kept[string(e.Key)] = true
		if e.Err > total/uint64(k) {
			t.Errorf("%s: err %d above total/k = %d", e.Key, e.Err, total/uint64(k))
		}
	}
	for key, x := range exact {
		if !kept[key] && x > total/uint64(k) {
			t.Errorf("%s seen %d times (> total/k = %d) is not kept", key, x, total/uint64(k))
		}
	}
}

// exactTop returns the n keys of highest exact count.
func exactTop(exact map[string]uint64, n int) []string {
	keys := make([]string, 0, len(exact))
	for k := range exact {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if exact[a] != exact[b] {
			return int(exact[b]) - int(exact[a])
		}
		return bytes.Compare([]byte(a), []byte(b))
	})
	return keys[:n]
}

func TestSketchBoundsHoldOnZipfStream(t *testing.T) {
	for _, s := range []float64{1.1, 1.5} {
		t.Run(fmt.Sprintf("s=%.1f", s), func(t *testing.T) {
			const k = 64
			keys, exact := zipfStream(1, s, 1_000_000, 500_000)
			sk := New(k)
			for _, key := range keys {
				sk.Add(key, Hash(key), 1)
			}
			if sk.Total() != uint64(len(keys)) {
				t.Fatalf("Total() = %d; want %d", sk.Total(), len(keys))
			}
			var tl Tally
			tl.Add(sk)
			top := tl.Top(k)
			if len(top) != k {
				t.Fatalf("kept %d keys; want %d", len(top), k)
			}
			checkBounds(t, top, sk.Floor(), sk.Total(), k, exact)
			// the keys seen more than twice the floor hold the first ranks, in
			// their exact order (below that, bounds may overlap)
			want := exactTop(exact, k)
			for i, w := range want {
				if exact[w] <= 2*sk.Floor() {
					if i < 3 {
						t.Errorf("only %d keys above twice the floor %d: the check checks little", i, sk.Floor())
					}
					break
				}
				if string(top[i].Key) != w {
					t.Errorf("rank %d: %s (count %d); exact rank %d is %s (%d)", i+1, top[i].Key, top[i].Count, i+1, w, exact[w])
				}
			}
			t.Logf("%d distinct keys in %d events; floor %d, total/k %d; top: %s %d±%d",
				len(exact), len(keys), sk.Floor(), sk.Total()/k, top[0].Key, top[0].Count, top[0].Err)
		})
	}
}

func TestTallyOfStripesKeepsBounds(t *testing.T) {
	const k, stripes = 64, 4
	keys, exact := zipfStream(2, 1.2, 1_000_000, 400_000)
	parts := make([]*Sketch, stripes)
	for i := range parts {
		parts[i] = New(k)
	}
	for i, key := range keys {
		parts[i%stripes].Add(key, Hash(key), 1)
	}
	var tl Tally
	for _, p := range parts {
		tl.Add(p)
	}
	// k keys, each stripe's error within its total/k: the sum within total/k
	checkBounds(t, tl.Top(k), tl.Floor(), tl.Total(), k, exact)
}

func TestMergeKeepsBoundsAcrossPeriods(t *testing.T) {
	const k = 64
	keys, exact := zipfStream(3, 1.2, 1_000_000, 300_000)
	acc := New(k)
	period := New(k)
	for i, key := range keys {
		period.Add(key, Hash(key), 1)
		if i%50_000 == 49_999 { // a period ends: its sketch joins the accumulated one
			Merge(acc, period)
			period.Reset()
		}
	}
	Merge(acc, period)
	if acc.Total() != uint64(len(keys)) {
		t.Fatalf("Total() = %d; want %d", acc.Total(), len(keys))
	}
	var tl Tally
	tl.Add(acc)
	// six merges: each adds at most total/k of error
	checkBounds(t, tl.Top(k), acc.Floor(), acc.Total(), k/7, exact)
	checkTable(t, acc)
	// and the merged sketch goes on counting
	acc.Add([]byte("user:1"), Hash([]byte("user:1")), 5)
	exact["user:1"] += 5
	tl = Tally{}
	tl.Add(acc)
	checkBounds(t, tl.Top(k), acc.Floor(), acc.Total(), k/7, exact)
}

// checkTable checks that every counter in use is found by its hash, sits
// where order says, in order of count, and that the buckets are exactly
// the runs of equal counts.
func checkTable(t *testing.T, s *Sketch) {
	t.Helper()
	for c := 0; c < s.n; c++ {
		if got := s.find(s.hashes[c]); got != int32(c) {
			t.Fatalf("find(counter %d's hash) = %d", c, got)
		}
		if s.order[s.pos[c]] != int32(c) {
			t.Fatalf("order[pos[%d]] = %d", c, s.order[s.pos[c]])
		}
	}
	used := 0
	for _, c := range s.table {
		if c != 0 {
			used++
		}
	}
	if used != s.n {
		t.Fatalf("table holds %d counters; %d in use", used, s.n)
	}
	buckets := 0
	for i := 0; i < s.n; i++ {
		c := s.order[i]
		b := s.bucket[c]
		starts := i == 0 || s.bucket[s.order[i-1]] != b
		ends := i == s.n-1 || s.bucket[s.order[i+1]] != b
		if f, l := s.first[b], s.last[b]; int32(i) < f || int32(i) > l ||
			starts != (int32(i) == f) || ends != (int32(i) == l) {
			t.Fatalf("counter %d at %d; its bucket %d spans %d-%d", c, i, b, f, l)
		}
		if i == 0 {
			buckets++
			continue
		}
		prev := s.order[i-1]
		switch {
		case s.counts[prev] > s.counts[c]:
			t.Fatalf("order broken at %d: count %d after %d", i, s.counts[c], s.counts[prev])
		case s.counts[prev] == s.counts[c] && s.bucket[prev] != b:
			t.Fatalf("equal counts at %d and %d in buckets %d and %d", i-1, i, s.bucket[prev], b)
		case s.counts[prev] < s.counts[c]:
			if s.bucket[prev] == b {
				t.Fatalf("counts %d and %d share bucket %d", s.counts[prev], s.counts[c], b)
			}
			buckets++
		}
	}
	if buckets+len(s.free) != s.Cap() {
		t.Fatalf("%d buckets in use and %d free of %d", buckets, len(s.free), s.Cap())
	}
}

func TestReplacementKeepsTheIndexWhole(t *testing.T) {
	s := New(8) // a small table: many collisions and shifts
	r := rand.New(rand.NewSource(4))
	for i := 0; i < 20_000; i++ {
		key := []byte("k" + strconv.Itoa(r.Intn(200)))
		s.Add(key, Hash(key), uint64(1+r.Intn(3)))
		checkTable(t, s)
	}
}

func TestLongKeysAreKeptTruncated(t *testing.T) {
	s := New(4)
	long1 := bytes.Repeat([]byte("a"), KeyCap+10)
	long2 := append(bytes.Repeat([]byte("a"), KeyCap+10), 'b')
	s.Add(long1, Hash(long1), 3)
	s.Add(long2, Hash(long2), 2)
	var tl Tally
	tl.Add(s)
	top := tl.Top(4)
	if len(top) != 2 {
		t.Fatalf("kept %d keys; want 2 (told apart by hash)", len(top))
	}
	for _, e := range top {
		if !e.Truncated || len(e.Key) != KeyCap {
			t.Errorf("entry %q (truncated %v); want its first %d bytes, truncated", e.Key, e.Truncated, KeyCap)
		}
	}
	if top[0].Count != 3 || top[1].Count != 2 {
		t.Errorf("counts %d, %d; want 3, 2", top[0].Count, top[1].Count)
	}
}

func BenchmarkSketchAdd(b *testing.B) {
	keys, _ := zipfStream(5, 1.1, 1_000_000, 1<<16)
	hashes := make([]uint64, len(keys))
	for i, k := range keys {
		hashes[i] = Hash(k)
	}
	s := New(64)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j := i & (len(keys) - 1)
		s.Add(keys[j], hashes[j], 1)
	}
}

func BenchmarkSketchHashAndAdd(b *testing.B) {
	keys, _ := zipfStream(5, 1.1, 1_000_000, 1<<16)
	s := New(64)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := keys[i&(len(keys)-1)]
		s.Add(k, Hash(k), 1)
	}
}

// BenchmarkSketchAddDistinct counts keys that each come once per cycle of
// 65,536, so that every Add replaces the least counted key while most
// counters share the least count: the worst case of a heap by count.
func BenchmarkSketchAddDistinct(b *testing.B) {
	for _, k := range []int{64, 4096} {
		b.Run("k="+strconv.Itoa(k), func(b *testing.B) {
			keys := make([][]byte, 1<<16)
			hashes := make([]uint64, len(keys))
			for i := range keys {
				keys[i] = []byte("user:" + strconv.Itoa(i))
				hashes[i] = Hash(keys[i])
			}
			s := New(k)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				j := i & (len(keys) - 1)
				s.Add(keys[j], hashes[j], 1)
			}
		})
	}
}
