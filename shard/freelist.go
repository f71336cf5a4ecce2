package shard

import "math/bits"

// Free records: each is linked into a list by its size (exact sizes below
// smallSizes, powers of two above), words 1 and 2 holding next and prev as
// loc+1. A freed record merges with a free record just before or after it
// in its chunk, and the merged-away start loses its bitmap bit, so that
// records of one size freed by expiry can be reused by keys of another.
// Positions only ever gain or lose the status of a record boundary while
// nothing live is there, which keeps Scan's promise for stable keys.

// alloc returns a record of size words: a free one of that size, a part of
// a larger free one, or new words if room (bytes) allows.
func (a *arena) alloc(size int, room int64) (uint32, bool) {
	if size < smallSizes {
		if h := a.free[size]; h != 0 {
			a.unlink(h-1, size)
			a.freeWords -= int64(size)
			return h - 1, true
		}
		if s := a.smallest(size + minRecord); s > 0 {
			return a.take(a.free[s]-1, s, size), true
		}
	}
	for k := classOf(max(size, smallSizes)); k < largeClasses; k++ {
		h := a.large[k]
		for tries := 0; h != 0 && tries < 8; tries++ {
			c, w := a.at(h - 1)
			if bs := int(c[w] >> hdrLenShift & hdrLenMask); bs == size || bs >= size+minRecord {
				return a.take(h-1, bs, size), true
			}
			h = uint32(c[w+1])
		}
	}
	if size > chunkWords-firstWord {
		return a.dedicated(size, room)
	}
	if len(a.chunks) == 0 || a.fill < 0 || int(a.ends[a.fill])+size > chunkWords {
		if int64(firstWord+size)*8 > room {
			return 0, false
		}
		c, ok := a.newChunk(chunkWords)
		if !ok {
			return 0, false
		}
		a.fill = c
	} else if int64(size)*8 > room {
		return 0, false
	}
	w := int(a.ends[a.fill])
	a.ends[a.fill] += uint32(size)
	a.words += int64(size)
	a.mark(a.fill, w)
	return mkloc(a.fill, w), true
}

// take unlinks the free record at l of bs words and returns its first size
// words, freeing the rest (at least minRecord words, or none).
func (a *arena) take(l uint32, bs, size int) uint32 {
	a.unlink(l, bs)
	a.freeWords -= int64(bs)
	if rest := bs - size; rest > 0 {
		r := l + uint32(size)
		a.setFree(r, rest)
		a.push(r, rest)
		a.freeWords += int64(rest)
	}
	return l
}

// release frees the record at l: a dedicated chunk goes back to the
// system; any other record merges with free neighbours and joins a list.
func (a *arena) release(l uint32) {
	c, w := a.at(l)
	ci := int(l >> chunkShift)
	if len(c) != chunkWords {
		a.words -= int64(len(c))
		unmapWords(c)
		a.chunks[ci], a.ends[ci] = nil, 0
		a.spare = append(a.spare, uint32(ci))
		return
	}
	size := a.size(l)
	a.freeWords += int64(size)
	start, total := l, size
	if n := w + size; n < int(a.ends[ci]) && c[n]&hdrFree != 0 {
		ns := int(c[n] >> hdrLenShift & hdrLenMask)
		a.unlink(mkloc(ci, n), ns)
		a.unmark(ci, n)
		total += ns
	}
	if p := prevStart(c, w); p >= 0 && c[p]&hdrFree != 0 {
		ps := int(c[p] >> hdrLenShift & hdrLenMask)
		a.unlink(mkloc(ci, p), ps)
		a.unmark(ci, w)
		start, total = mkloc(ci, p), total+ps
	}
	a.setFree(start, total)
	a.push(start, total)
}

// dedicated gives a record too large for a chunk a chunk of its own.
func (a *arena) dedicated(size int, room int64) (uint32, bool) {
	if int64(firstWord+size)*8 > room {
		return 0, false
	}
	c, ok := a.newChunk(firstWord + size)
	if !ok {
		return 0, false
	}
	a.ends[c] += uint32(size)
	a.words += int64(size)
	a.mark(c, firstWord)
	return mkloc(c, firstWord), true
}

// classOf returns the large list for a free record of size words.
func classOf(size int) int { return min(bits.Len(uint(size))-9, largeClasses-1) }

func (a *arena) head(size int) *uint32 {
	if size < smallSizes {
		return &a.free[size]
	}
	return &a.large[classOf(size)]
}

func (a *arena) setFree(l uint32, size int) {
	c, w := a.at(l)
	c[w] = hdrFree | uint64(size)<<hdrLenShift
	a.mark(int(l>>chunkShift), w)
}

// smallest returns the smallest size of at least from words whose exact
// free list is not empty, 0 if none.
func (a *arena) smallest(from int) int {
	for i := from / 64; i < len(a.sizes); i++ {
		bw := a.sizes[i]
		if i == from/64 {
			bw &= ^uint64(0) << (from % 64)
		}
		if bw != 0 {
			return i*64 + bits.TrailingZeros64(bw)
		}
	}
	return 0
}

func (a *arena) push(l uint32, size int) {
	c, w := a.at(l)
	h := a.head(size)
	if size < smallSizes {
		a.sizes[size/64] |= 1 << (size % 64)
	}
	c[w+1], c[w+2] = uint64(*h), 0
	if *h != 0 {
		hc, hw := a.at(*h - 1)
		hc[hw+2] = uint64(l + 1)
	}
	*h = l + 1
}

func (a *arena) unlink(l uint32, size int) {
	c, w := a.at(l)
	next, prev := uint32(c[w+1]), uint32(c[w+2])
	if prev != 0 {
		pc, pw := a.at(prev - 1)
		pc[pw+1] = uint64(next)
	} else {
		*a.head(size) = next
		if next == 0 && size < smallSizes {
			a.sizes[size/64] &^= 1 << (size % 64)
		}
	}
	if next != 0 {
		nc, nw := a.at(next - 1)
		nc[nw+2] = uint64(prev)
	}
}

func (a *arena) mark(c, w int) { a.chunks[c][w/64] |= 1 << (w % 64) }

func (a *arena) unmark(c, w int) { a.chunks[c][w/64] &^= 1 << (w % 64) }

// prevStart returns the start of the record before word w of chunk c, -1
// if w is the first.
func prevStart(c []uint64, w int) int {
	for i := w - 1; i >= firstWord; i = i/64*64 - 1 {
		if bw := c[i/64] & (^uint64(0) >> (63 - i%64)); bw != 0 {
			return i/64*64 + 63 - bits.LeadingZeros64(bw)
		}
	}
	return -1
}
