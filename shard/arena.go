package shard

import (
	"math"
	"math/bits"
	"strconv"
	"unsafe"

	"github.com/sluice-rl/sluice/algorithms"
)

// The arena holds a shard's records in chunks of words mapped outside the
// Go heap. A record is a run of words that never moves while it is live:
//
//	word 0   header: algo (bits 0-7), number of state words kept (8-9),
//	         has-ext (10), free (11), depleted (12), expire-is-state[0] (13),
//	         pinned (14: not to be evicted while room is made for it),
//	         never-expires (15: Expire is math.MaxInt64, not stored),
//	         key length in bytes, or a free record's size in words (16-47)
//	         expire, unless it equals state[0] (a token bucket's TAT is its
//	         expiry) or the record never expires (an override or a string
//	         without a TTL)
//	         state[0..n): the state words up to the last non-zero one
//	         ext length (low 32 bits) and room (high 32), then room words,
//	         the first length of them Ext's, if Ext is not empty
//	         the key's bytes, padded to a word
//
// A token bucket with a 16-byte key is 4 words: header, TAT, key.
//
// Each chunk starts with a bitmap with one bit per word, set where a record
// starts, so that a walk can begin at any position (a client's SCAN cursor)
// and land on a record boundary. Freed records keep their place and size
// and join a free list for their size (words 1 and 2 link the list);
// a freed record merges with free neighbours (see freelist.go). A record
// too large for a chunk gets a chunk of its own, returned to the system
// when it is freed.
const (
	chunkShift   = 15
	chunkWords   = 1 << chunkShift // 256 KiB
	bitmapWords  = chunkWords / 64
	firstWord    = bitmapWords // where records start in a chunk
	maxChunks    = 1<<(32-chunkShift) - 1
	smallSizes   = 256 // free lists by exact size below this many words
	minRecord    = 3   // the smallest record: a free one's header and two links
	splitReach   = 32  // how much larger a free record may be to be split for a smaller one
	largeClasses = 8   // free lists for sizes [256, 512), [512, 1024) … up to a chunk
)

const (
	hdrAlgo     = 0xff
	hdrNState   = 3 << 8
	hdrExt      = 1 << 10
	hdrFree     = 1 << 11
	hdrDepleted = 1 << 12
	hdrExpS0    = 1 << 13
	hdrPinned   = 1 << 14
	hdrNoExp    = 1 << 15
	hdrLenShift = 16
	hdrLenMask  = 1<<32 - 1
	// hdrLayout are the header bits that, with the ext room, decide where a
	// record's parts lie.
	hdrLayout = hdrNState | hdrExt | hdrExpS0 | hdrNoExp | hdrLenMask<<hdrLenShift
	// hdrNoExpWord: the record stores no expiry word of its own.
	hdrNoExpWord = hdrExpS0 | hdrNoExp
)

// maxKey is the longest key a record can hold.
const maxKey = hdrLenMask

// layout is where a record's parts lie, relative to its first word.
type layout struct {
	header uint64
	nState int
	extLen int
	extCap int // words reserved for Ext: at least extLen
	keyLen int
	keyOff int // word where the key starts
	size   int // words in all
}

// layoutOf returns the record layout that stores key and e, with room for
// extCap words of Ext (at least len(e.Ext)); an empty Ext takes no room.
func layoutOf(keyLen int, e *Entry, extCap int) layout {
	if len(e.Ext) == 0 {
		extCap = 0
	}
	return layoutExt(keyLen, e, len(e.Ext), extCap)
}

// layoutExt returns the layout that stores key and e with an Ext of extLen
// words and room for extCap (Reserve's record has room and no Ext yet); it
// does not read e.Ext.
func layoutExt(keyLen int, e *Entry, extLen, extCap int) layout {
	var lay layout
	for i := len(e.State) - 1; i >= 0; i-- {
		if e.State[i] != 0 {
			lay.nState = i + 1
			break
		}
	}
	h := uint64(e.Algo) | uint64(lay.nState)<<8 | uint64(keyLen)<<hdrLenShift
	off := 1
	switch {
	case lay.nState > 0 && e.Expire == e.State[0]:
		h |= hdrExpS0
	case e.Expire == math.MaxInt64:
		h |= hdrNoExp
	default:
		off++
	}
	off += lay.nState
	if extLen > 0 || extCap > 0 {
		h |= hdrExt
		lay.extLen, lay.extCap = extLen, max(extCap, extLen)
		off += 1 + lay.extCap
	}
	if e.Depleted {
		h |= hdrDepleted
	}
	lay.header, lay.keyLen, lay.keyOff = h, keyLen, off
	lay.size = max(off+(keyLen+7)/8, minRecord)
	return lay
}

// arena is a shard's record storage. Its zero value is empty.
type arena struct {
	chunks    [][]uint64
	ends      []uint32                // each chunk's first word not yet handed out
	fill      int                     // the chunk new records are cut from, -1 none (valid when len(chunks) > 0)
	free      [smallSizes]uint32      // heads of free lists by exact size, as loc+1
	large     [largeClasses]uint32    // heads of free lists of larger records by power of two
	sizes     [smallSizes / 64]uint64 // bit s set: free[s] is not empty
	spare     []uint32                // indexes of chunks given back
	words     int64                   // words handed out: bitmaps, live and free records
	freeWords int64                   // words in free records
}

// loc names a record: chunk<<chunkShift | word.
func mkloc(c, w int) uint32 { return uint32(c)<<chunkShift | uint32(w) }

func (a *arena) at(l uint32) ([]uint64, int) {
	return a.chunks[l>>chunkShift], int(l & (chunkWords - 1))
}

func (a *arena) header(l uint32) uint64 {
	c, w := a.at(l)
	return c[w]
}

// size returns the words of the record at l.
func (a *arena) size(l uint32) int {
	c, w := a.at(l)
	h := c[w]
	if h&hdrFree != 0 {
		return int(h >> hdrLenShift & hdrLenMask)
	}
	return a.live(c, w, h).size
}

// live returns the layout of the live record whose header h is at c[w].
func (a *arena) live(c []uint64, w int, h uint64) layout {
	lay := layout{header: h, nState: int(h & hdrNState >> 8), keyLen: int(h >> hdrLenShift & hdrLenMask)}
	off := 1 + lay.nState
	if h&hdrNoExpWord == 0 {
		off++
	}
	if h&hdrExt != 0 {
		lay.extLen, lay.extCap = int(uint32(c[w+off])), int(c[w+off]>>32)
		off += 1 + lay.extCap
	}
	lay.keyOff = off
	lay.size = max(off+(lay.keyLen+7)/8, minRecord)
	return lay
}

// key returns the key of the live record at l, aliasing the arena.
func (a *arena) key(l uint32) []byte {
	c, w := a.at(l)
	return keyAt(c, w, c[w])
}

// keyAt returns the key of the live record with header h at c[w].
func keyAt(c []uint64, w int, h uint64) []byte {
	n := int(h >> hdrLenShift & hdrLenMask)
	if n == 0 {
		return []byte{}
	}
	off := w + 2 + int(h&hdrNState>>8)
	if h&hdrNoExpWord != 0 {
		off--
	}
	if h&hdrExt != 0 {
		off += 1 + int(c[off]>>32)
	}
	_ = c[off+(n-1)/8] // the key's last word is in the chunk
	return unsafe.Slice((*byte)(unsafe.Pointer(&c[off])), n)
}

// keyLastWord returns the index in c of the last word of the key of the
// record at w whose header is h (the header's own index for an empty key,
// or for a record with an Ext, whose key's place needs one more load).
func keyLastWord(c []uint64, w int, h uint64) int {
	n := int(h >> hdrLenShift & hdrLenMask)
	if n == 0 || h&(hdrExt|hdrFree) != 0 {
		return w
	}
	off := w + 2 + int(h&hdrNState>>8)
	if h&hdrNoExpWord != 0 {
		off--
	}
	return off + (n-1)/8
}

// keyIs reports whether the live record at l holds key.
func (a *arena) keyIs(l uint32, key []byte) bool {
	c, w := a.at(l)
	h := c[w]
	if int(h>>hdrLenShift&hdrLenMask) != len(key) {
		return false
	}
	return string(keyAt(c, w, h)) == string(key)
}

// entry returns the entry of the live record at l; its Ext aliases the
// arena.
func (a *arena) entry(l uint32) Entry {
	var e Entry
	a.entryInto(l, &e)
	return e
}

// entryInto decodes the entry of the live record at l into *e, which must
// be the zero Entry; its Ext aliases the arena.
func (a *arena) entryInto(l uint32, e *Entry) {
	c, w := a.at(l)
	h := c[w]
	e.Algo = algoOf(h)
	e.Depleted = h&hdrDepleted != 0
	i := w + 1
	if h&hdrNoExpWord == 0 {
		e.Expire = int64(c[i])
		i++
	}
	for k := 0; k < int(h&hdrNState>>8); k++ {
		e.State[k] = int64(c[i])
		i++
	}
	if h&hdrExpS0 != 0 {
		e.Expire = e.State[0]
	} else if h&hdrNoExp != 0 {
		e.Expire = math.MaxInt64
	}
	if h&hdrExt != 0 {
		n, capacity := int(uint32(c[i])), int(c[i]>>32)
		e.Ext = wordInts(c[i+1:i+1+capacity], n)
	}
}

// pin marks the live record at l as one that eviction must leave alone,
// until unpin or the next write of the record.
func (a *arena) pin(l uint32) {
	c, w := a.at(l)
	c[w] |= hdrPinned
}

// unpin undoes pin.
func (a *arena) unpin(l uint32) {
	c, w := a.at(l)
	c[w] &^= hdrPinned
}

// expire returns the expiry of the live record at l without decoding the
// rest.
func (a *arena) expire(l uint32) int64 {
	c, w := a.at(l)
	if c[w]&hdrNoExp != 0 {
		return math.MaxInt64
	}
	return int64(c[w+1]) // state[0] when it is the expiry, else the expiry word
}

// write stores key and e as the record at l, which has lay.size words.
func (a *arena) write(l uint32, key []byte, e *Entry, lay layout) {
	c, w := a.at(l)
	rec := c[w : w+lay.size]
	i := a.writeEntry(rec, e, lay)
	if i < len(rec) {
		rec[len(rec)-1] = 0 // the key's padding
		copy(wordBytes(rec[i:], lay.keyLen), key)
	}
}

// writeEntry stores e in rec, a record laid out as lay, and returns where
// the key starts: an update in place leaves the key as it is.
func (a *arena) writeEntry(rec []uint64, e *Entry, lay layout) int {
	rec[0] = lay.header
	i := 1
	if lay.header&hdrNoExpWord == 0 {
		rec[i] = uint64(e.Expire)
		i++
	}
	for k := 0; k < lay.nState; k++ {
		rec[i] = uint64(e.State[k])
		i++
	}
	if lay.header&hdrExt != 0 {
		rec[i] = uint64(lay.extLen) | uint64(lay.extCap)<<32
		copy(wordInts(rec[i+1:i+1+lay.extCap], lay.extLen), e.Ext)
		i += 1 + lay.extCap
	}
	return i
}

// newChunk maps a chunk of n words, its bitmap counted as handed out.
func (a *arena) newChunk(n int) (int, bool) {
	var c int
	if k := len(a.spare); k > 0 {
		c = int(a.spare[k-1])
		a.spare = a.spare[:k-1]
	} else {
		if len(a.chunks) >= maxChunks {
			return 0, false
		}
		c = len(a.chunks)
		a.chunks = append(a.chunks, nil)
		a.ends = append(a.ends, 0)
	}
	a.chunks[c] = mapWords(n)
	a.ends[c] = firstWord
	a.words += firstWord
	return c, true
}

// seek returns the first record boundary at or after position p, in
// position order; false when there is none.
func (a *arena) seek(p uint32) (uint32, bool) {
	ci, w := int(p>>chunkShift), int(p&(chunkWords-1))
	for ; ci < len(a.chunks); ci, w = ci+1, firstWord {
		c := a.chunks[ci]
		if c == nil {
			continue
		}
		w = max(w, firstWord)
		end := int(a.ends[ci])
		if len(c) != chunkWords { // a dedicated chunk: one record, at firstWord
			if w == firstWord {
				return mkloc(ci, w), true
			}
			continue
		}
		for w < end {
			bw := c[w/64] >> (w % 64)
			if bw != 0 {
				w += bits.TrailingZeros64(bw)
				if w < end {
					return mkloc(ci, w), true
				}
				break
			}
			w = (w/64 + 1) * 64
		}
	}
	return 0, false
}

// after returns the position just past the record at l.
func (a *arena) after(l uint32) uint32 {
	ci, w := int(l>>chunkShift), int(l&(chunkWords-1))
	if end := w + a.size(l); end < int(a.ends[ci]) {
		return mkloc(ci, end)
	}
	return mkloc(ci+1, firstWord)
}

// reset gives every chunk back.
func (a *arena) reset() {
	for _, c := range a.chunks {
		unmapWords(c)
	}
	*a = arena{fill: -1}
}

// wordBytes views the first n bytes of w as bytes.
func wordBytes(w []uint64, n int) []byte {
	if n == 0 {
		return []byte{}
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), n)[:n:n]
}

// wordInts views the first n words of w as int64s, with w's length as the
// view's capacity: an algorithm may append into the room a record reserves
// for its Ext, and an append past it copies.
func wordInts(w []uint64, n int) []int64 {
	if len(w) == 0 {
		return nil
	}
	return unsafe.Slice((*int64)(unsafe.Pointer(&w[0])), len(w))[:n:len(w)]
}

func itoa(n int) string { return strconv.Itoa(n) }

func algoOf(h uint64) algorithms.Algo { return algorithms.Algo(h & hdrAlgo) }
