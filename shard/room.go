package shard

// Room for records that grow: a record that must grow takes room under the
// limit as a new key does, never by evicting itself; Reserve gives a record
// room before its state is built; Need tells a group decision what a commit
// would ask; Pin keeps a group's records from being evicted while room is
// made for some of them.

// extRoom returns the words of Ext room a record that has room for have
// gets for an Ext of n words: the same room while n fits; room to spare
// when n outgrows it by a little (by at most a quarter), so that growing
// one lease at a time is amortized; exactly n when it outgrows it by more
// (a log's ring, which doubles by itself).
func extRoom(have, n int) int {
	switch {
	case n <= have:
		return have
	case n-have <= n/4:
		return n + n/4 + 2
	}
	return n
}

// allocKeeping allocates size words under the limit for a record that
// replaces the live record keep, making room if it must without removing
// keep. It requires that s.mu is held.
func (s *Shard) allocKeeping(size int, keep uint32, now int64) (uint32, bool) {
	for tries := 0; ; tries++ {
		if l, ok := s.arena.alloc(size, s.room()); ok {
			return l, true
		}
		if tries == maxRoomTries {
			return 0, false
		}
		pinned := s.arena.header(keep)&hdrPinned != 0
		s.arena.pin(keep)
		made := s.reclaim(now)
		if !pinned {
			s.arena.unpin(keep)
		}
		if !made {
			return 0, false
		}
	}
}

// Reserve gives key's record room for an Ext of extCap words, so that a
// caller can build a large state (a log's ring) in place, within the
// limit, instead of on the heap first: an existing record moves to a larger
// one with its entry unchanged, unless it has the room already; an absent
// key gets a record holding *e, which must be live and have an empty Ext.
// Room is made as Commit makes it, never by removing key's own record; on
// ErrOOM nothing changed. On success *ref and e.Ext name the record: e.Ext
// keeps its length, and its capacity is at least extCap, for the caller to
// write into and hand to Commit. Reserve requires that s is locked and that
// ref came from Find on key under the same lock (and, for an existing key,
// *e from the same Find).
func (s *Shard) Reserve(ref *Ref, key []byte, e *Entry, extCap int, now int64) error {
	s.see(now)
	if ref.epoch != s.epoch {
		s.refresh(ref, key)
	}
	if ref.Absent() {
		lay := layoutExt(len(key), e, 0, extCap)
		slot, l, err := s.insertLayout(ref.hash, key, e, lay, now)
		if err != nil {
			return err
		}
		*ref = Ref{hash: ref.hash, slot: slot, loc: l + 1, epoch: s.epoch}
	} else {
		l := ref.loc - 1
		c, w := s.arena.at(l)
		old := s.arena.live(c, w, c[w])
		if old.extCap < extCap {
			cur := s.arena.entry(l)
			lay := layoutExt(len(key), &cur, old.extLen, extCap)
			nl, ok := s.allocKeeping(lay.size, l, now)
			if !ok {
				s.stats.Refused++
				return ErrOOM
			}
			slot := s.replace(*ref, l, nl, key, &cur, lay)
			*ref = Ref{hash: ref.hash, slot: slot, loc: nl + 1, epoch: s.epoch}
		}
	}
	var cur Entry
	s.arena.entryInto(ref.loc-1, &cur)
	e.Ext = cur.Ext
	return nil
}

// Need returns the bytes that Commit(ref, key, e) asks of the limit, for an
// e whose Ext will hold extLen words (Need does not read e.Ext): a new
// key's record, or the larger record an existing key's entry moves to; 0
// when the entry is stored in place or in a smaller record, which Commit
// never refuses. A group decision asks it of each key it writes, so as to
// make the room they need, or be refused, before it writes anything that
// cannot be refused. Need requires that s is locked and that ref came from
// Find on key under the same lock.
func (s *Shard) Need(ref Ref, key []byte, e *Entry, extLen int) int64 {
	if ref.epoch != s.epoch {
		s.refresh(&ref, key)
	}
	if ref.Absent() {
		return int64(layoutExt(len(key), e, extLen, 0).size) * 8
	}
	c, w := s.arena.at(ref.loc - 1)
	old := s.arena.live(c, w, c[w])
	room := 0
	if extLen > 0 {
		room = extRoom(old.extCap, extLen)
	}
	lay := layoutExt(len(key), e, extLen, room)
	if lay.size <= old.size {
		return 0
	}
	return int64(lay.size) * 8
}

// Pin marks key's live record, if it has one, as one that making room
// (eviction) must leave alone, however often it moves, until Unpin: a
// group decision pins its keys while it makes room for some of them. It
// requires that s is locked.
func (s *Shard) Pin(key []byte) {
	if _, l, ok := s.lookup(key, uint32(s.Hash(key)>>32)); ok {
		s.arena.pin(l)
	}
}

// Unpin undoes Pin. It requires that s is locked.
func (s *Shard) Unpin(key []byte) {
	if _, l, ok := s.lookup(key, uint32(s.Hash(key)>>32)); ok {
		s.arena.unpin(l)
	}
}
