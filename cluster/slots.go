package cluster

import (
	"strconv"

	"github.com/sluice-rl/sluice/keyslot"
)

// slotRange is an inclusive range of hash slots, and in the meta group's
// slot table the data group that owns it.
type slotRange struct {
	lo, hi uint16
	group  uint16 // the meta group's slot table only; 0 elsewhere
}

func (r slotRange) String() string {
	if r.lo == r.hi {
		return strconv.Itoa(int(r.lo))
	}
	return strconv.Itoa(int(r.lo)) + "-" + strconv.Itoa(int(r.hi))
}

// slotSet is a set of slots: a data group's fence (2 KiB).
type slotSet [keyslot.Slots / 64]uint64

func (s *slotSet) has(slot int) bool { return s[slot>>6]&(1<<(slot&63)) != 0 }

func (s *slotSet) add(r slotRange) {
	for i := int(r.lo); i <= int(r.hi); i++ {
		s[i>>6] |= 1 << (i & 63)
	}
}

// setRanges makes the set exactly rs.
func (s *slotSet) setRanges(rs []slotRange) {
	*s = slotSet{}
	for _, r := range rs {
		s.add(r)
	}
}

// ranges returns the set as sorted, maximal ranges.
func (s *slotSet) ranges() []slotRange {
	var out []slotRange
	for i := 0; i < keyslot.Slots; i++ {
		if !s.has(i) {
			continue
		}
		j := i
		for j+1 < keyslot.Slots && s.has(j+1) {
			j++
		}
		out = append(out, slotRange{lo: uint16(i), hi: uint16(j)})
		i = j
	}
	return out
}

// count is the number of slots in the set.
func (s *slotSet) count() int {
	n := 0
	for i := 0; i < keyslot.Slots; i++ {
		if s.has(i) {
			n++
		}
	}
	return n
}

// EvenSlots splits the 16384 slots into groups contiguous ranges, group 1
// first, as equal as they can be (as redis-cli --cluster create does).
func evenSlots(groups int) []slotRange {
	out := make([]slotRange, 0, groups)
	lo := 0
	for g := 1; g <= groups; g++ {
		hi := g*keyslot.Slots/groups - 1
		out = append(out, slotRange{lo: uint16(lo), hi: uint16(hi), group: uint16(g)})
		lo = hi + 1
	}
	return out
}

// validRanges reports whether rs are well-formed, in order and disjoint.
func validRanges(rs []slotRange) bool {
	next := 0
	for _, r := range rs {
		if int(r.lo) < next || r.hi < r.lo || int(r.hi) >= keyslot.Slots {
			return false
		}
		next = int(r.hi) + 1
	}
	return true
}
