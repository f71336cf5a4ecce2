package shard

import (
	"sync"

	"github.com/sluice-rl/sluice/algorithms"
)

// Entry is one key's state.
type Entry struct {
	Algo algorithms.Algo
	// Expire is the instant at which the state becomes equal to "absent"
	// (a full bucket, an ended window). At or after it the entry is gone.
	Expire int64
	// State holds the fixed-size algorithms' words (Token: State[0] is the
	// TAT).
	State [3]int64
	// Ext is the variable-size part of the algorithms that need one (a
	// sliding log's ring, a concurrency limit's leases); nil for the others.
	// A slice that Find returns is valid while the shard's lock is held.
	Ext []int64
}

// Live reports whether e is a present, unexpired entry at now.
func (e Entry) Live(now int64) bool { return e.Algo != algorithms.None && now < e.Expire }

// Ref names the slot a key was found in by Find, or no slot (absent key).
// It stays valid while the shard's lock is held.
type Ref struct{ slot int32 }

// Absent reports whether the key had no live entry.
func (r Ref) Absent() bool { return r.slot < 0 }

type slot struct {
	key  string
	used bool
	e    Entry
}

// Stats are a shard's counters since it was made.
type Stats struct {
	Keys         int64 // entries held, including expired ones not yet removed
	ExpiredKeys  int64 // entries removed because they expired (lazily or by the sweep)
	SweepSteps   int64 // slots the sweep examined
	SweepRemoved int64 // entries the sweep removed
}

// Shard is one slice of the key space. Its zero value is an empty shard
// ready for use.
//
// Concurrency: every method except Lock, Unlock and Stats requires that the
// caller holds the shard's lock, so that a store can compute a decision and
// commit it, or lock several shards, as one atomic step. Entries live in
// slots that never move while they are live (freed slots are reused by new
// keys), which is what lets Scan promise that a key present for a whole
// iteration is returned.
type Shard struct {
	mu       sync.Mutex
	index    map[string]int32
	slots    []slot
	free     []int32
	sweepPos int
	stats    Stats
}

// Lock locks the shard.
func (s *Shard) Lock() { s.mu.Lock() }

// Unlock unlocks the shard.
func (s *Shard) Unlock() { s.mu.Unlock() }

// Find returns key's entry and slot. An entry that has expired at now is
// removed on the way and reported absent. Find requires that s is locked.
func (s *Shard) Find(key []byte, now int64) (Ref, Entry) {
	i, ok := s.index[string(key)]
	if !ok {
		return Ref{-1}, Entry{}
	}
	e := s.slots[i].e
	if !e.Live(now) {
		s.remove(i)
		s.stats.ExpiredKeys++
		return Ref{-1}, Entry{}
	}
	return Ref{i}, e
}

// Commit stores e as key's entry in the slot Find returned. An entry that is
// already absent at now (e.Expire <= now) is not stored, and removes any
// previous one. Commit requires that s is locked and that ref came from Find
// under the same lock.
func (s *Shard) Commit(ref Ref, key []byte, e Entry, now int64) {
	switch {
	case !e.Live(now):
		if !ref.Absent() {
			s.remove(ref.slot)
		}
	case !ref.Absent():
		s.slots[ref.slot].e = e
	default:
		s.insert(string(key), e)
	}
}

// Delete removes key and reports whether it held a live entry at now.
// Delete requires that s is locked.
func (s *Shard) Delete(key []byte, now int64) bool {
	ref, _ := s.Find(key, now)
	if ref.Absent() {
		return false
	}
	s.remove(ref.slot)
	return true
}

// Len returns the number of live entries at now. It visits every slot.
// Len requires that s is locked.
func (s *Shard) Len(now int64) int {
	n := 0
	for i := range s.slots {
		if s.slots[i].used && s.slots[i].e.Live(now) {
			n++
		}
	}
	return n
}

// Flush removes every entry. Flush requires that s is locked.
func (s *Shard) Flush() {
	s.index = nil
	s.slots = nil
	s.free = nil
	s.sweepPos = 0
	s.stats.Keys = 0
}

// Scan calls fn for the live entries in slots [pos, pos+count) and returns
// the position to continue from, 0 when the shard is done, and how many
// slots it visited. The key passed to fn is only valid during the call.
// Scan requires that s is locked.
func (s *Shard) Scan(pos, count int, now int64, fn func(key []byte, e Entry)) (next, visited int) {
	end := min(pos+count, len(s.slots))
	for i := pos; i < end; i++ {
		sl := &s.slots[i]
		if sl.used && sl.e.Live(now) {
			fn([]byte(sl.key), sl.e)
		}
	}
	visited = max(end-pos, 0)
	if end >= len(s.slots) {
		return 0, visited
	}
	return end, visited
}

// Sweep examines up to budget slots, resuming where the previous sweep
// stopped and wrapping around, and removes the entries that have expired at
// now. It returns how many slots it examined and how many entries it
// removed. Sweep requires that s is locked; keep budget small so that the
// lock is held briefly.
func (s *Shard) Sweep(now int64, budget int) (examined, removed int) {
	if len(s.slots) == 0 {
		return 0, 0
	}
	if budget > len(s.slots) {
		budget = len(s.slots)
	}
	for examined < budget {
		if s.sweepPos >= len(s.slots) {
			s.sweepPos = 0
		}
		i := s.sweepPos
		s.sweepPos++
		examined++
		if sl := &s.slots[i]; sl.used && !sl.e.Live(now) {
			s.remove(int32(i))
			removed++
		}
	}
	s.stats.SweepSteps += int64(examined)
	s.stats.SweepRemoved += int64(removed)
	s.stats.ExpiredKeys += int64(removed)
	return examined, removed
}

// Stats returns the shard's counters. It takes the lock itself.
func (s *Shard) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// insert requires that s.mu is held and that key is not in the index.
func (s *Shard) insert(key string, e Entry) {
	if s.index == nil {
		s.index = make(map[string]int32)
	}
	var i int32
	if n := len(s.free); n > 0 {
		i = s.free[n-1]
		s.free = s.free[:n-1]
	} else {
		s.slots = append(s.slots, slot{})
		i = int32(len(s.slots) - 1)
	}
	s.slots[i] = slot{key: key, used: true, e: e}
	s.index[key] = i
	s.stats.Keys++
}

// remove requires that s.mu is held and that slot i is used.
func (s *Shard) remove(i int32) {
	delete(s.index, s.slots[i].key)
	s.slots[i] = slot{}
	s.free = append(s.free, i)
	s.stats.Keys--
}
