package shard

// index maps keys to records: open addressing with linear probing over one
// table of words mapped outside the Go heap. A slot is tag<<32 | loc+1, 0
// when empty; the tag is the high 32 bits of the key's 64-bit hash, which
// also picks the slot a key starts probing from (the store picks the shard
// with the low bits). Deletion shifts the following slots back, so there
// are no tombstones and a probe ends at the first empty slot.
type index struct {
	slots []uint64
	n     int // occupied slots
}

// minSlots is the first table's size: one 4 KiB page.
const minSlots = 512

func slotOf(tag, l uint32) uint64 { return uint64(tag)<<32 | uint64(l+1) }

func slotTag(v uint64) uint32 { return uint32(v >> 32) }

func slotLoc(v uint64) uint32 { return uint32(v) - 1 }

func (x *index) mask() uint32 { return uint32(len(x.slots) - 1) }

// bytes returns the table's size in bytes.
func (x *index) bytes() int64 { return int64(len(x.slots)) * 8 }

// grow doubles the table (or makes the first one) and moves every slot.
func (x *index) grow() {
	old := x.slots
	x.slots = mapWords(max(minSlots, 2*len(old)))
	m := x.mask()
	for _, v := range old {
		if v == 0 {
			continue
		}
		i := slotTag(v) & m
		for x.slots[i] != 0 {
			i = (i + 1) & m
		}
		x.slots[i] = v
	}
	unmapWords(old)
}

// put stores loc l under tag in the first empty slot of its probe, and
// returns that slot. The key must not be in the table.
func (x *index) put(tag, l uint32) uint32 {
	m := x.mask()
	i := tag & m
	for x.slots[i] != 0 {
		i = (i + 1) & m
	}
	x.slots[i] = slotOf(tag, l)
	x.n++
	return i
}

// del empties slot i and shifts back the slots after it whose probe passed
// through it.
func (x *index) del(i uint32) {
	m := x.mask()
	x.slots[i] = 0
	x.n--
	for j := (i + 1) & m; x.slots[j] != 0; j = (j + 1) & m {
		home := slotTag(x.slots[j]) & m
		// Slot j's entry may move to i if i lies on its probe: from home
		// (inclusive) to j (exclusive), cyclically.
		if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
			x.slots[i] = x.slots[j]
			x.slots[j] = 0
			i = j
		}
	}
}

// slotFor returns the slot that holds loc l, whose key has tag.
func (x *index) slotFor(tag, l uint32) uint32 {
	m := x.mask()
	want := slotOf(tag, l)
	i := tag & m
	for x.slots[i] != want {
		if x.slots[i] == 0 {
			panic("shard: a record is missing from the index")
		}
		i = (i + 1) & m
	}
	return i
}

func (x *index) reset() {
	unmapWords(x.slots)
	*x = index{}
}
