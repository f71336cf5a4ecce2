package topk

import (
	"bytes"
	"slices"
)

// Entry is a key's count as sketches give it: the true count is between
// Count-Err and Count. A Truncated key is its first KeyCap bytes.
type Entry struct {
	Key        []byte
	Count, Err uint64
	Truncated  bool
	hash       uint64
}

// Hash returns the hash of the key counted (Hash of its every byte, a
// truncated key's too).
func (e *Entry) Hash() uint64 { return e.hash }

// Tally sums sketches (of one stream's parts: stripes, periods) with
// their bounds: a key's count is the sum of its counts, a sketch that does
// not keep it adding its Floor to both count and error. Not safe for
// concurrent use; it allocates, for readers only.
type Tally struct {
	entries []Entry
	at      map[uint64]int // hash → index in entries
	floor   uint64         // the most a key kept by none was seen
	total   uint64
	parts   int // sketches added
}

// Add adds a sketch's counters to t.
func (t *Tally) Add(s *Sketch) {
	if t.at == nil {
		t.at = map[uint64]int{}
	}
	f := s.Floor()
	seen := make(map[uint64]bool, s.n)
	for c := 0; c < s.n; c++ {
		h := s.hashes[c]
		seen[h] = true
		i, ok := t.at[h]
		if !ok {
			// the sketches added before did not keep it: at most their floors
			n := int(s.klen[c])
			e := Entry{Key: bytes.Clone(s.keys[c][:min(n, KeyCap)]), Count: t.floor, Err: t.floor,
				Truncated: n > KeyCap, hash: h}
			t.entries = append(t.entries, e)
			i = len(t.entries) - 1
			t.at[h] = i
		}
		t.entries[i].Count += s.counts[c]
		t.entries[i].Err += s.errs[c]
	}
	if f > 0 {
		for i := range t.entries {
			if !seen[t.entries[i].hash] {
				t.entries[i].Count += f
				t.entries[i].Err += f
			}
		}
	}
	t.floor += f
	t.total += s.total
	t.parts++
}

// Total returns the weight of the sketches added.
func (t *Tally) Total() uint64 { return t.total }

// Floor returns the most a key that no sketch added keeps was seen.
func (t *Tally) Floor() uint64 { return t.floor }

// Top returns the n keys of highest count, highest first (ties by key).
func (t *Tally) Top(n int) []Entry {
	out := slices.Clone(t.entries)
	slices.SortFunc(out, func(a, b Entry) int {
		if a.Count != b.Count {
			if a.Count > b.Count {
				return -1
			}
			return 1
		}
		return bytes.Compare(a.Key, b.Key)
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// Merge adds src's counts into dst, which keeps the dst.Cap() heaviest
// of both with their bounds: afterwards dst summarises both streams as if
// it had seen them one after the other (its Floor bounds every key it
// dropped). It allocates; it is meant for a rotation, not the hot path.
func Merge(dst, src *Sketch) {
	var t Tally
	t.Add(dst)
	t.Add(src)
	top := t.Top(dst.Cap())
	kept := make(map[uint64]bool, len(top))
	for i := range top {
		kept[top[i].hash] = true
	}
	floor := t.floor // every dropped key's count bounds it
	for i := range t.entries {
		if e := &t.entries[i]; !kept[e.hash] && e.Count > floor {
			floor = e.Count
		}
	}
	dst.Reset()
	dst.total, dst.floor = t.total, floor
	for i := len(top) - 1; i >= 0; i-- {
		e := &top[i]
		c := int32(dst.n)
		dst.set(c, e.Key, e.hash, e.Count, e.Err)
		if e.Truncated {
			dst.klen[c] = KeyCap + 1
		}
		dst.insert(c)
	}
}
