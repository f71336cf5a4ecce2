package shard

import (
	"sync"

	"github.com/cespare/xxhash/v2"
	"github.com/sluice-rl/sluice/algorithms"
)

// Entry is one key's state.
type Entry struct {
	Algo algorithms.Algo
	// Expire is the instant at which the state becomes equal to "absent"
	// (a full bucket, an ended window). At or after it the entry is gone.
	Expire int64
	// State holds the fixed-size algorithms' words (Token: State[0] is the
	// TAT). Only the words up to the last non-zero one take room.
	State [3]int64
	// Ext is the variable-size part of the algorithms that need one (a
	// sliding log's ring, a concurrency limit's leases); nil for the others.
	// A slice that Find returns aliases the shard's memory and is valid
	// while the shard's lock is held; an empty Ext is stored as nil.
	Ext []int64
	// Depleted marks an entry whose last write left nothing remaining (the
	// decision admitted the last unit). It stays set until the entry is
	// written again or expires. Eviction never removes a depleted entry.
	Depleted bool
}

// Live reports whether e is a present, unexpired entry at now.
func (e Entry) Live(now int64) bool { return e.Algo != algorithms.None && now < e.Expire }

// Ref names where Find found a key, or where it would go. It stays valid
// while the shard's lock is held; Commit notices when the shard changed
// since Find (another key inserted or removed) and looks the key up again.
type Ref struct {
	hash    uint64
	slot    uint32
	loc     uint32 // record's loc+1; 0: absent
	epoch   uint32
	expired bool // FindReusing: loc names a record that had expired
}

// Absent reports whether the key had no live entry.
func (r Ref) Absent() bool { return r.loc == 0 }

// Stats are a shard's counters since it was made, and its memory now.
type Stats struct {
	Keys         int64 // entries held, including expired ones not yet removed
	ExpiredKeys  int64 // entries removed because they expired (lazily, by the sweep, or to make room)
	SweepSteps   int64 // entries the sweep examined
	SweepRemoved int64 // entries the sweep removed
	Evicted      int64 // live entries removed to make room (volatile-ttl)
	Refused      int64 // new keys refused for want of memory
	ArenaBytes   int64 // words handed out for records, free ones included, and chunk bitmaps
	FreeBytes    int64 // bytes of free records, waiting for reuse
	IndexBytes   int64 // the index table
	Hits, Misses int64 // lookups (Find) that found a live entry, and that found none
	Changes      int64 // entries stored or removed by Commit and Delete
}

// Used returns the bytes that count against the memory limit.
func (s Stats) Used() int64 { return s.ArenaBytes + s.IndexBytes }

// Shard is one slice of the key space. Its zero value is an empty shard
// ready for use, without a memory limit.
//
// Concurrency: every method except Lock, Unlock and Stats requires that the
// caller holds the shard's lock, so that a store can compute a decision and
// commit it, or lock several shards, as one atomic step. Records never move
// while they are live (freed room is reused by new keys), which is what
// lets Scan promise that a key present for a whole iteration is returned.
//
// Memory: records and the index live outside the Go heap (see arena and
// index), so the garbage collector has nothing per key to scan. Determinism:
// given the same calls with the same instants, a shard reaches the same
// layout and makes the same refusals and evictions.
type Shard struct {
	mu       sync.Mutex
	arena    arena
	idx      index
	epoch    uint32 // bumped whenever a slot or record comes or goes
	now      int64  // the latest instant a method was given
	sweepPos uint32 // where the sweep resumes
	evictPos uint32 // where eviction samples from
	limit    int64  // bytes; 0: no limit
	policy   Policy
	hashFn   func([]byte) uint64 // tests force collisions with it; nil: xxhash
	stats    Stats
	sink     uint64 // Prefetch's loads end here, so that the compiler keeps them

	// Pads the shard to whole cache lines: shards sit side by side in the
	// store, and one shard's counters must not share a line with the next
	// one's mutex (TestShardFillsWholeCacheLines holds the size).
	_ [32]byte
}

// Lock locks the shard.
func (s *Shard) Lock() { s.mu.Lock() }

// Unlock unlocks the shard.
func (s *Shard) Unlock() { s.mu.Unlock() }

// Hash returns the hash the shard files key under: xxhash, the one the
// store routes by, so that the store can pass it to FindHash.
func (s *Shard) Hash(key []byte) uint64 {
	if s.hashFn != nil {
		return s.hashFn(key)
	}
	return xxhash.Sum64(key)
}

// Now returns the latest instant any method was given: the shard's idea of
// the present, which snapshots filter expired entries by.
func (s *Shard) Now() int64 { return s.now }

// Find returns key's entry and where it is. An entry that has expired at
// now is removed on the way and reported absent. Find requires that s is
// locked.
func (s *Shard) Find(key []byte, now int64) (Ref, Entry) {
	return s.FindHash(key, s.Hash(key), now)
}

// FindHash is Find for a caller that has already computed h = Hash(key).
func (s *Shard) FindHash(key []byte, h uint64, now int64) (Ref, Entry) {
	var e Entry
	ref := s.FindInto(key, h, now, &e)
	return ref, e
}

// FindInto is FindHash that decodes the entry into *e, which must be the
// zero Entry, instead of returning it: the decision path's form, which
// copies no Entry.
func (s *Shard) FindInto(key []byte, h uint64, now int64, e *Entry) Ref {
	ref := s.FindReusing(key, h, now, e)
	if ref.expired {
		s.removeAt(ref.slot, ref.loc-1)
		return Ref{hash: h, epoch: s.epoch}
	}
	return ref
}

// FindReusing is FindInto for a caller about to write the key: an entry
// that has expired at now is reported as the zero Entry, as FindInto
// reports it, but its record stays, and the Ref names it, so that Commit
// rewrites it in place instead of freeing it and making another of the
// same size (a key that comes back after its bucket refilled). The caller
// hands the Ref to Commit or not, then to DropExpired, which removes the
// record if it is still expired. Such a Ref is for those two only: Absent
// reports false for it.
func (s *Shard) FindReusing(key []byte, h uint64, now int64, e *Entry) Ref {
	s.see(now)
	slot, l, ok := s.lookup(key, uint32(h>>32))
	if !ok {
		s.stats.Misses++
		return Ref{hash: h, epoch: s.epoch}
	}
	s.arena.entryInto(l, e)
	if !e.Live(now) {
		s.stats.ExpiredKeys++
		s.stats.Misses++
		*e = Entry{}
		return Ref{hash: h, slot: slot, loc: l + 1, epoch: s.epoch, expired: true}
	}
	s.stats.Hits++
	return Ref{hash: h, slot: slot, loc: l + 1, epoch: s.epoch}
}

// DropExpired removes key's record if ref, from FindReusing, named an
// expired one that nothing has made live since (no Commit, or a refused
// one), as FindInto would have removed it. It requires that s is locked.
func (s *Shard) DropExpired(ref Ref, key []byte, now int64) {
	if ref.expired { // small enough to inline: most decisions find a live entry or none
		s.dropExpired(ref, key, now)
	}
}

func (s *Shard) dropExpired(ref Ref, key []byte, now int64) {
	if ref.epoch != s.epoch {
		s.refresh(&ref, key)
	}
	if ref.loc != 0 && s.arena.expire(ref.loc-1) <= now {
		s.removeAt(ref.slot, ref.loc-1)
	}
}

// Prefetch loads the index slots of the keys whose hashes are hs, then the
// records those slots name, each from its own shard (shards[k] for hs[k]),
// so that the lookups that follow find them in cache: all the loads of a
// batch overlap instead of waiting one after another, across shards too. It
// changes nothing and requires that every shard named is locked.
func Prefetch(shards []*Shard, hs []uint64) {
	if len(hs) > PrefetchMax || len(shards) < len(hs) {
		return
	}
	var vs [PrefetchMax]uint64
	for k, h := range hs {
		if x := &shards[k].idx; x.n != 0 {
			vs[k] = x.slots[uint32(h>>32)&x.mask()]
		}
	}
	var sink uint64
	for k, h := range hs {
		if v := vs[k]; v != 0 && slotTag(v) == uint32(h>>32) {
			c, w := shards[k].arena.at(slotLoc(v))
			sink += c[w]
		}
	}
	// Then the key's last word, which lies in the record's next cache
	// line when the record straddles one (a 30-byte key and two words of
	// state do): the lookup compares the whole key.
	for k, h := range hs {
		if v := vs[k]; v != 0 && slotTag(v) == uint32(h>>32) {
			c, w := shards[k].arena.at(slotLoc(v))
			sink += c[keyLastWord(c, w, c[w])]
		}
	}
	if len(hs) > 0 {
		shards[0].sink = sink // keeps the compiler from dropping the loads
	}
}

// PrefetchMax is the most keys one Prefetch takes.
const PrefetchMax = 16

// lookup probes the index for key. It returns the slot and record that
// hold it, or found false.
func (s *Shard) lookup(key []byte, tag uint32) (slot, l uint32, found bool) {
	if s.idx.n == 0 {
		return 0, 0, false
	}
	m := s.idx.mask()
	for i := tag & m; ; i = (i + 1) & m {
		v := s.idx.slots[i]
		if v == 0 {
			return i, 0, false
		}
		if slotTag(v) == tag && s.arena.keyIs(slotLoc(v), key) {
			return i, slotLoc(v), true
		}
	}
}

// Commit stores *e as key's entry, where Find said it was or would go. An
// entry that is already absent at now (e.Expire <= now) is not stored, and
// removes any previous one. When the shard is at its memory limit and no
// room can be made, Commit refuses with ErrOOM, changing nothing, a new key
// and an existing key whose entry needs a larger record (see Need); an
// entry that fits its record, or a smaller one, is always stored. Commit
// requires that s is locked and that ref came from Find on key under the
// same lock.
func (s *Shard) Commit(ref Ref, key []byte, e *Entry, now int64) error {
	s.see(now)
	s.stats.Changes++
	if ref.epoch != s.epoch {
		s.refresh(&ref, key)
	}
	switch {
	case !e.Live(now):
		if !ref.Absent() {
			s.removeAt(ref.slot, ref.loc-1)
		}
		return nil
	case !ref.Absent():
		return s.update(ref, key, e, now)
	default:
		return s.insert(ref.hash, key, e, now)
	}
}

// update rewrites the record of a present key, in place when its size is
// unchanged, else in a new record that replaces it in the index. A larger
// record takes room under the limit as a new key's does (expired entries
// first, then eviction under VolatileTTL, never of this key's record); when
// none can be made, update returns ErrOOM and the record stays as it was. A
// smaller record is never refused: the larger one it replaces is freed.
func (s *Shard) update(ref Ref, key []byte, e *Entry, now int64) error {
	l := ref.loc - 1
	c, w := s.arena.at(l)
	if h := c[w]; h&hdrExt == 0 && len(e.Ext) == 0 { // the common case: fixed words only
		if lay := layoutOf(len(key), e, 0); (lay.header^h)&hdrLayout == 0 {
			s.arena.writeEntry(c[w:w+lay.size], e, lay)
			c[w] |= h & hdrPinned
			return nil
		}
	}
	old := s.arena.live(c, w, c[w])
	lay := layoutOf(len(key), e, extRoom(old.extCap, len(e.Ext)))
	// In place when the size is the same and Ext, which may alias the
	// record, stays where it is.
	if lay.size == old.size && (lay.header&hdrExt == 0 || lay.keyOff-lay.extCap == old.keyOff-old.extCap) {
		pin := c[w] & hdrPinned
		s.arena.write(l, key, e, lay)
		c[w] |= pin
		return nil
	}
	nl, ok := uint32(0), false
	if lay.size <= old.size {
		if nl, ok = s.arena.alloc(lay.size, 1<<62); !ok {
			panic("shard: out of chunk numbers")
		}
	} else if nl, ok = s.allocKeeping(lay.size, l, now); !ok {
		s.stats.Refused++
		return ErrOOM
	}
	s.replace(ref, l, nl, key, e, lay)
	return nil
}

// replace writes key and e, laid out as lay, as the record nl, which takes
// the place of the live record l in the index (ref names l), and frees l.
// A pin on l goes over to nl. It returns nl's slot. It requires that s.mu
// is held.
func (s *Shard) replace(ref Ref, l, nl uint32, key []byte, e *Entry, lay layout) uint32 {
	if ref.epoch != s.epoch { // room was made: slots may have shifted
		ref.slot = s.idx.slotFor(uint32(ref.hash>>32), l)
	}
	pin := s.arena.header(l) & hdrPinned
	s.arena.write(nl, key, e, lay) // before the release: e.Ext may alias the old record
	c, w := s.arena.at(nl)
	c[w] |= pin
	s.idx.slots[ref.slot] = slotOf(uint32(ref.hash>>32), nl)
	s.arena.release(l)
	s.epoch++
	return ref.slot
}

// refresh looks key up again, for a ref made before the shard changed
// (its epoch is not the shard's).
func (s *Shard) refresh(ref *Ref, key []byte) {
	slot, l, ok := s.lookup(key, uint32(ref.hash>>32))
	ref.slot, ref.loc, ref.epoch = slot, 0, s.epoch
	if ok {
		ref.loc = l + 1
	}
}

// insert adds a new key, making room within the limit if it must.
func (s *Shard) insert(h uint64, key []byte, e *Entry, now int64) error {
	_, _, err := s.insertLayout(h, key, e, layoutOf(len(key), e, 0), now)
	return err
}

// insertLayout adds a new key whose record is laid out as lay and returns
// its slot and record.
func (s *Shard) insertLayout(h uint64, key []byte, e *Entry, lay layout, now int64) (slot, l uint32, err error) {
	if len(key) > maxKey {
		return 0, 0, ErrKeyTooLong
	}
	for tries := 0; ; tries++ {
		if s.indexRoom() {
			if l, ok := s.arena.alloc(lay.size, s.room()); ok {
				s.arena.write(l, key, e, lay)
				slot := s.idx.put(uint32(h>>32), l)
				s.stats.Keys++
				s.epoch++
				return slot, l, nil
			}
		}
		if tries == maxRoomTries || !s.reclaim(now) {
			s.stats.Refused++
			return 0, 0, ErrOOM
		}
	}
}

// room returns how many more bytes may be handed out under the limit.
func (s *Shard) room() int64 {
	if s.limit <= 0 {
		return 1 << 62
	}
	return s.limit - s.used()
}

func (s *Shard) used() int64 { return s.arena.words*8 + s.idx.bytes() }

// indexRoom makes room in the index for one more key: the table doubles at
// 3/4 full when the limit allows, and may otherwise fill to 7/8.
func (s *Shard) indexRoom() bool {
	n, size := s.idx.n+1, len(s.idx.slots)
	if n*4 <= size*3 {
		return true
	}
	if grow := max(minSlots, size) * 8; int64(grow) <= s.room() {
		s.idx.grow()
		s.epoch++
		return true
	}
	return n*8 <= size*7
}

// Delete removes key and reports whether it held a live entry at now.
// Delete requires that s is locked.
func (s *Shard) Delete(key []byte, now int64) bool {
	ref, _ := s.Find(key, now)
	if ref.Absent() {
		return false
	}
	s.removeAt(ref.slot, ref.loc-1)
	s.stats.Changes++
	return true
}

// Len returns the number of live entries at now. It visits every record.
// Len requires that s is locked.
func (s *Shard) Len(now int64) int {
	n := 0
	for l, ok := s.arena.seek(0); ok; l, ok = s.arena.seek(s.arena.after(l)) {
		if s.arena.header(l)&hdrFree == 0 && now < s.arena.expire(l) {
			n++
		}
	}
	return n
}

// Flush removes every entry and gives the shard's memory back. Flush
// requires that s is locked.
func (s *Shard) Flush() {
	s.arena.reset()
	s.idx.reset()
	s.epoch++
	s.sweepPos, s.evictPos = 0, 0
	s.stats.Keys = 0
}

// Scan calls fn for the live entries of up to count records from position
// pos and returns the position to continue from, 0 when the shard is done,
// and how many records it visited. Any pos is accepted: it is rounded up to
// the next record. The key and entry passed to fn alias the shard's memory
// and are only valid during the call, which must not change the shard.
// Scan requires that s is locked.
func (s *Shard) Scan(pos, count int, now int64, fn func(key []byte, e Entry)) (next, visited int) {
	return s.Walk(pos, count, now, func(_ int, key []byte, e Entry) bool { fn(key, e); return true })
}

// Walk is Scan that also passes fn each record's position (never 0) and
// lets fn stop the walk: when fn returns false, Walk returns that record's
// position as next and does not count the record as visited, so that a
// walk resumed there offers it again. Walk requires that s is locked.
func (s *Shard) Walk(pos, count int, now int64, fn func(at int, key []byte, e Entry) bool) (next, visited int) {
	if pos < 0 || pos > 1<<32-1 {
		return 0, 0
	}
	l, ok := s.arena.seek(uint32(pos))
	for ; ok && visited < count; visited++ {
		if s.arena.header(l)&hdrFree == 0 {
			if e := s.arena.entry(l); e.Live(now) && !fn(int(l), s.arena.key(l), e) {
				return int(l), visited
			}
		}
		l, ok = s.arena.seek(s.arena.after(l))
	}
	if !ok {
		return 0, visited
	}
	return int(l), visited
}

// Stats returns the shard's counters. It takes the lock itself.
func (s *Shard) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.statsLocked()
}

func (s *Shard) statsLocked() Stats {
	st := s.stats
	st.ArenaBytes = s.arena.words * 8
	st.FreeBytes = s.arena.freeWords * 8
	st.IndexBytes = s.idx.bytes()
	return st
}

// see moves the shard's present forward to now.
func (s *Shard) see(now int64) {
	if now > s.now {
		s.now = now
	}
}

// removeAt removes the record l held in index slot slot. It requires that
// s.mu is held.
func (s *Shard) removeAt(slot, l uint32) {
	s.idx.del(slot)
	s.arena.release(l)
	s.stats.Keys--
	s.epoch++
}

// removeRecord removes the live record at l, finding its slot by its key's
// hash. It requires that s.mu is held.
func (s *Shard) removeRecord(l uint32) {
	tag := uint32(s.Hash(s.arena.key(l)) >> 32)
	s.removeAt(s.idx.slotFor(tag, l), l)
}

// Replace gives s the entries of from, which is left empty, and drops those
// s held. Limit, policy and counters other than Keys stay. Replace
// requires that s is locked and that nothing else uses from.
func (s *Shard) Replace(from *Shard) {
	s.Flush()
	s.arena, from.arena = from.arena, arena{fill: -1}
	s.idx, from.idx = from.idx, index{}
	s.stats.Keys, from.stats.Keys = from.stats.Keys, 0
	s.see(from.now)
	s.epoch++
}
