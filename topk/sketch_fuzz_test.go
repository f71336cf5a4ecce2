package topk

import (
	"strconv"
	"testing"
)

// FuzzSketch adds the keys and weights that data spells to a sketch, and
// now and then merges a second sketch into it, checking after every step
// that the counters are in order with whole buckets (checkTable) and, at
// the end, every bound against the exact counts. Each pair of bytes is a
// step: the first picks one of 64 keys (or, at 0xff, a merge), the
// second the weight (1 to 4).
func FuzzSketch(f *testing.F) {
	f.Add(uint8(4), []byte{0, 0, 1, 0, 2, 1, 3, 3, 1, 0, 0xff, 0, 5, 2})
	f.Add(uint8(1), []byte{7, 0, 7, 0, 8, 3, 9, 0})
	f.Add(uint8(16), []byte{0xff, 0, 0xff, 0})
	f.Fuzz(func(t *testing.T, k uint8, data []byte) {
		k = 1 + k%32
		s, other := New(int(k)), New(int(k))
		exact := map[string]uint64{}
		for i := 0; i+1 < len(data); i += 2 {
			if data[i] == 0xff {
				Merge(s, other)
				other.Reset()
			} else {
				key := []byte("k" + strconv.Itoa(int(data[i]%64)))
				w := uint64(1 + data[i+1]%4)
				into := s
				if data[i+1]&0x80 != 0 {
					into = other // counted in the sketch merged later
				}
				into.Add(key, Hash(key), w)
				exact[string(key)] += w
			}
			checkTable(t, s)
			checkTable(t, other)
		}
		Merge(s, other)
		checkTable(t, s)
		if total := s.Total(); total != sum(exact) {
			t.Fatalf("Total() = %d; want %d", total, sum(exact))
		}
		var tl Tally
		tl.Add(s)
		checkMergedBounds(t, tl.Top(int(k)), s.Floor(), exact)
	})
}

func sum(m map[string]uint64) uint64 {
	var n uint64
	for _, v := range m {
		n += v
	}
	return n
}

// checkMergedBounds checks the bounds that hold through merges, whatever
// their number: every kept key's exact count is within [count-err,
// count], and a key not kept was seen at most floor times.
func checkMergedBounds(t *testing.T, top []Entry, floor uint64, exact map[string]uint64) {
	t.Helper()
	kept := map[string]bool{}
	for _, e := range top {
		kept[string(e.Key)] = true
		x := exact[string(e.Key)]
		if e.Count < x || e.Count-e.Err > x {
			t.Errorf("%s: count %d err %d; exact %d is outside [count-err, count]", e.Key, e.Count, e.Err, x)
		}
	}
	for key, x := range exact {
		if !kept[key] && x > floor {
			t.Errorf("%s seen %d times is not kept, above the floor %d", key, x, floor)
		}
	}
}
