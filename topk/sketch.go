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
// The counters are kept in order of count (a stream summary in arrays):
// runs of equal counts are buckets, and a count raised by w moves its
// counter past the buckets of counts it overtakes, one swap each. Add costs
// one hash-table probe and, for w = 1, a constant number of moves whatever
// k and however many counters share the least count (a stream of keys
// seen once each, where a heap would sift through all of its levels). It
// never allocates. Concurrency: none; the caller serialises all use. The
// zero value is unusable: use New.
type Sketch struct {
	n      int      // counters in use
	total  uint64   // the weight added (merges included)
	floor  uint64   // the most a key not kept was seen (merges only; else the least count when full)
	hashes []uint64 // by counter
	counts []uint64
	errs   []uint64
	keys   [][KeyCap]byte
	klen   []uint8 // the key's length kept; KeyCap+1: truncated
	order  []int32 // counters by count, least first (first n in use)
	pos    []int32 // counter → its place in order
	bucket []int32 // counter → its bucket: the run of order of its count
	first  []int32 // bucket → its first and last place in order
	last   []int32
	free   []int32 // buckets not in use
	table  []int32 // open addressing by hash, linear probing: counter+1, 0 empty
	mask   uint64
}

// New returns an empty sketch of k counters (k >= 1).
func New(k int) *Sketch {
	s := &Sketch{
		hashes: make([]uint64, k), counts: make([]uint64, k), errs: make([]uint64, k),
		keys: make([][KeyCap]byte, k), klen: make([]uint8, k),
		order: make([]int32, k), pos: make([]int32, k), bucket: make([]int32, k),
		first: make([]int32, k), last: make([]int32, k), free: make([]int32, 0, k),
		table: make([]int32, tableSize(k)), mask: uint64(tableSize(k) - 1),
	}
	s.Reset()
	return s
}

// tableSize is the hash table's slots for k counters: a power of two at
// least 4k.
func tableSize(k int) int {
	size := 1
	for size < 4*k {
		size <<= 1
	}
	return size
}

// Size is the bytes a sketch of k counters holds.
func Size(k int) int64 {
	return int64(unsafe.Sizeof(Sketch{})) + int64(k)*(3*8+KeyCap+1+6*4) + int64(tableSize(k))*4
}

// Cap returns k, the counters of s.
func (s *Sketch) Cap() int { return len(s.counts) }

// Total returns the weight added to s.
func (s *Sketch) Total() uint64 { return s.total }

// Floor returns the most a key that s does not keep was seen.
func (s *Sketch) Floor() uint64 {
	if s.n == len(s.counts) && s.counts[s.order[0]] > s.floor {
		return s.counts[s.order[0]]
	}
	return s.floor
}

// Reset empties s, keeping its memory.
func (s *Sketch) Reset() {
	clear(s.table)
	s.free = s.free[:0]
	for b := len(s.counts) - 1; b >= 0; b-- {
		s.free = append(s.free, int32(b))
	}
	s.n, s.total, s.floor = 0, 0, 0
}

// Add counts w more for key, whose hash is h (Hash(key)).
func (s *Sketch) Add(key []byte, h uint64, w uint64) {
	s.total += w
	if c := s.find(h); c >= 0 {
		s.raise(c, s.counts[c]+w)
		return
	}
	if s.n < len(s.counts) {
		c := int32(s.n)
		s.set(c, key, h, w+s.floor, s.floor)
		s.insert(c)
		return
	}
	// Replace the least counted key: the newcomer inherits its count as
	// its error.
	c := s.order[0]
	m := max(s.counts[c], s.floor)
	s.unindex(s.hashes[c])
	s.set(c, key, h, s.counts[c], m)
	s.raise(c, m+w)
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

// insert puts counter c, whose count is set, in order as the n-th counter
// in use: placed last, it moves before every bucket of a greater count,
// and joins the bucket of its own count if there is one.
func (s *Sketch) insert(c int32) {
	v := s.counts[c]
	at := int32(s.n)
	s.n++
	for at > 0 && s.counts[s.order[at-1]] > v {
		b := s.bucket[s.order[at-1]]
		f := s.first[b]
		s.place(s.order[f], at) // the bucket's first counter becomes its last
		s.first[b], s.last[b] = f+1, at
		at = f
	}
	s.place(c, at)
	if at > 0 && s.counts[s.order[at-1]] == v {
		b := s.bucket[s.order[at-1]]
		s.bucket[c], s.last[b] = b, at
		return
	}
	s.open(c, at)
}

// raise makes c's count v (at least its count now) and moves c past the
// buckets of the counts below v: to the end of its own bucket first, which
// it leaves, then across each bucket it overtakes, whose first counter
// takes c's place. It joins the bucket of count v if there is one.
func (s *Sketch) raise(c int32, v uint64) {
	if v == s.counts[c] {
		return
	}
	b := s.bucket[c]
	at := s.last[b]
	s.place(s.order[at], s.pos[c])
	if s.first[b] == at {
		s.free = append(s.free, b)
	} else {
		s.last[b] = at - 1
	}
	s.counts[c] = v
	n := int32(s.n)
	for at+1 < n && s.counts[s.order[at+1]] < v {
		nb := s.bucket[s.order[at+1]]
		l := s.last[nb]
		s.place(s.order[l], at) // the bucket's last counter becomes its first
		s.first[nb], s.last[nb] = at, l-1
		at = l
	}
	s.place(c, at)
	if at+1 < n && s.counts[s.order[at+1]] == v {
		nb := s.bucket[s.order[at+1]]
		s.bucket[c], s.first[nb] = nb, at
		return
	}
	s.open(c, at)
}

// place puts counter c at place i of order.
func (s *Sketch) place(c, i int32) {
	s.order[i], s.pos[c] = c, i
}

// open makes a bucket of c alone, at place i.
func (s *Sketch) open(c, i int32) {
	b := s.free[len(s.free)-1]
	s.free = s.free[:len(s.free)-1]
	s.bucket[c], s.first[b], s.last[b] = b, i, i
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
