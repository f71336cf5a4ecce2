package topk

import (
	"hash/maphash"
	"unsafe"
)

// KeyCap is the bytes of a key a sketch keeps. A longer key is kept by its
// first KeyCap bytes (Entry.Truncated) and told apart from others by its
// hash of every byte.
const KeyCap = 48

// seed is the one hash seed of the process: sketches are merged by hash,
// so every sketch hashes alike.
var seed = maphash.MakeSeed()

// Hash returns key's hash, what Sketch.Add takes. Two keys with the same
// 64-bit hash count as one (a chance of about k²/2⁶⁴ per sketch).
func Hash(key []byte) uint64 { return maphash.Bytes(seed, key) }

// Sketch is a space-saving summary of k counters. Every key it keeps has a
// count and an error with count-err <= true count <= count; a key it does
// not keep was seen at most Floor times; so every key seen more than
// Total/k times is kept.
//
// Add costs one hash-table probe and a sift in a heap of k counters, and
// never allocates. Concurrency: none; the caller serialises all use. The
// zero value is unusable: use New.
type Sketch struct {
	n      int      // counters in use
	total  uint64   // the weight added (merges included)
	floor  uint64   // the most a key not kept was seen (merges only; else the heap's minimum when full)
	hashes []uint64 // by counter
	counts []uint64
	errs   []uint64
	keys   [][KeyCap]byte
	klen   []uint8 // the key's length kept; KeyCap+1: truncated
	heap   []int32 // counters, a min-heap by count
	pos    []int32 // counter → its place in heap
	table  []int32 // open addressing by hash, linear probing: counter+1, 0 empty
	mask   uint64
}

// New returns an empty sketch of k counters (k >= 1).
func New(k int) *Sketch {
	size := 1
	for size < 4*k {
		size <<= 1
	}
	return &Sketch{
		hashes: make([]uint64, k), counts: make([]uint64, k), errs: make([]uint64, k),
		keys: make([][KeyCap]byte, k), klen: make([]uint8, k),
		heap: make([]int32, 0, k), pos: make([]int32, k),
		table: make([]int32, size), mask: uint64(size - 1),
	}
}

// Size is the bytes a sketch of k counters holds.
func Size(k int) int64 {
	size := 1
	for size < 4*k {
		size <<= 1
	}
	return int64(unsafe.Sizeof(Sketch{})) + int64(k)*(3*8+KeyCap+1+4+4) + int64(size)*4
}

// Cap returns k, the counters of s.
func (s *Sketch) Cap() int { return len(s.counts) }

// Total returns the weight added to s.
func (s *Sketch) Total() uint64 { return s.total }

// Floor returns the most a key that s does not keep was seen.
func (s *Sketch) Floor() uint64 {
	if s.n == len(s.counts) && s.counts[s.heap[0]] > s.floor {
		return s.counts[s.heap[0]]
	}
	return s.floor
}

// Reset empties s, keeping its memory.
func (s *Sketch) Reset() {
	clear(s.table)
	s.heap = s.heap[:0]
	s.n, s.total, s.floor = 0, 0, 0
}

// Add counts w more for key, whose hash is h (Hash(key)).
func (s *Sketch) Add(key []byte, h uint64, w uint64) {
	s.total += w
	if c := s.find(h); c >= 0 {
		s.counts[c] += w
		s.down(int(s.pos[c]))
		return
	}
	if s.n < len(s.counts) {
		c := int32(s.n)
		s.n++
		s.set(c, key, h, w+s.floor, s.floor)
		s.heap = append(s.heap, c)
		s.pos[c] = int32(len(s.heap) - 1)
		s.up(len(s.heap) - 1)
		return
	}
	// Replace the least counted key: the newcomer inherits its count as
	// its error.
	c := s.heap[0]
	m := max(s.counts[c], s.floor)
	s.unindex(s.hashes[c])
	s.set(c, key, h, m+w, m)
	s.down(0)
}

// set makes counter c key's, with this count and error, and indexes it.
func (s *Sketch) set(c int32, key []byte, h, count, err uint64) {
	s.hashes[c], s.counts[c], s.errs[c] = h, count, err
	n := copy(s.keys[c][:], key)
	if len(key) > KeyCap {
		n = KeyCap + 1
	}
	s.klen[c] = uint8(n)
	i := h & s.mask
	for s.table[i] != 0 {
		i = (i + 1) & s.mask
	}
	s.table[i] = c + 1
}

// find returns the counter of hash h, or -1.
func (s *Sketch) find(h uint64) int32 {
	for i := h & s.mask; ; i = (i + 1) & s.mask {
		c := s.table[i]
		if c == 0 {
			return -1
		}
		if s.hashes[c-1] == h {
			return c - 1
		}
	}
}

// unindex removes hash h from the table, shifting the entries after it
// back so that no probe sequence breaks (no tombstones).
func (s *Sketch) unindex(h uint64) {
	i := h & s.mask
	for s.hashes[s.table[i]-1] != h {
		i = (i + 1) & s.mask
	}
	for {
		s.table[i] = 0
		j := i
		for {
			j = (j + 1) & s.mask
			c := s.table[j]
			if c == 0 {
				return
			}
			home := s.hashes[c-1] & s.mask
			// c may move to i if its home is not within (i, j] cyclically.
			if (j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j)) {
				s.table[i] = c
				i = j
				break
			}
		}
	}
}

func (s *Sketch) less(a, b int) bool { return s.counts[s.heap[a]] < s.counts[s.heap[b]] }

func (s *Sketch) swap(a, b int) {
	s.heap[a], s.heap[b] = s.heap[b], s.heap[a]
	s.pos[s.heap[a]], s.pos[s.heap[b]] = int32(a), int32(b)
}

func (s *Sketch) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !s.less(i, p) {
			return
		}
		s.swap(i, p)
		i = p
	}
}

func (s *Sketch) down(i int) {
	n := len(s.heap)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && s.less(r, l) {
			m = r
		}
		if !s.less(m, i) {
			return
		}
		s.swap(i, m)
		i = m
	}
}
