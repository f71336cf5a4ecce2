package shard

// Active expiry and the memory limit.

// Policy says what a shard at its memory limit does for a new key.
type Policy uint8

const (
	// NoEviction refuses new keys (after removing expired entries it finds);
	// existing keys keep working.
	NoEviction Policy = iota
	// VolatileTTL evicts the entry nearest to its expiry among a sample, as
	// Redis's volatile-ttl does: the one closest to "absent", so forgetting
	// it gives away the least. Depleted entries are never evicted.
	VolatileTTL
)

// String returns the policy's name in Redis's words.
func (p Policy) String() string {
	if p == VolatileTTL {
		return "volatile-ttl"
	}
	return "noeviction"
}

const (
	maxRoomTries = 16 // attempts to make room for one new key
	reclaimScan  = 64 // entries examined for expired ones per attempt
	evictSample  = 16 // entries sampled for the one nearest to expiry
)

// SetLimit sets the most bytes of records and index the shard may hold
// (0: no limit) and what to do at the limit. Entries already held stay.
// SetLimit requires that s is locked.
func (s *Shard) SetLimit(bytes int64, p Policy) {
	s.limit, s.policy = bytes, p
}

// Sweep examines up to budget entries, resuming where the previous sweep
// stopped and wrapping around once, and removes those that have expired at
// now. Free records are stepped over without counting, up to 8×budget
// steps. It returns how many entries it examined and removed. Sweep
// requires that s is locked; keep budget small so that the lock is held
// briefly.
func (s *Shard) Sweep(now int64, budget int) (examined, removed int) {
	s.see(now)
	pos, wrapped := s.sweepPos, false
	for steps := 0; examined < budget && steps < 8*budget; steps++ {
		l, ok := s.arena.seek(pos)
		if !ok {
			if wrapped || pos == 0 {
				pos = 0
				break
			}
			pos, wrapped = 0, true
			continue
		}
		pos = s.arena.after(l)
		if s.arena.header(l)&hdrFree != 0 {
			continue
		}
		examined++
		if now >= s.arena.expire(l) {
			s.removeRecord(l)
			removed++
		}
	}
	s.sweepPos = pos
	s.stats.SweepSteps += int64(examined)
	s.stats.SweepRemoved += int64(removed)
	s.stats.ExpiredKeys += int64(removed)
	return examined, removed
}

// reclaim removes entries so that a new key may fit: expired ones first,
// at any policy, then under VolatileTTL the sampled entry nearest to its
// expiry that is not depleted. It reports whether it removed anything.
// It requires that s.mu is held.
func (s *Shard) reclaim(now int64) bool {
	if s.limit <= 0 {
		return false // no limit: alloc failed for want of chunk numbers, nothing to free
	}
	save := s.sweepPos
	s.sweepPos = s.evictPos
	_, removed := s.Sweep(now, reclaimScan)
	s.evictPos, s.sweepPos = s.sweepPos, save
	if removed > 0 {
		return true
	}
	if s.policy != VolatileTTL {
		return false
	}
	return s.evictOne(now)
}

// evictOne removes the entry nearest to its expiry among the next
// evictSample entries from evictPos, leaving depleted and pinned ones alone.
func (s *Shard) evictOne(now int64) bool {
	pos, wrapped := s.evictPos, false
	var best uint32
	var bestExp int64
	found := false
	for seen, steps := 0, 0; seen < evictSample && steps < 8*evictSample; steps++ {
		l, ok := s.arena.seek(pos)
		if !ok {
			if wrapped || pos == 0 {
				break
			}
			pos, wrapped = 0, true
			continue
		}
		pos = s.arena.after(l)
		h := s.arena.header(l)
		if h&hdrFree != 0 {
			continue
		}
		seen++
		if h&(hdrDepleted|hdrPinned) != 0 {
			continue
		}
		if exp := s.arena.expire(l); !found || exp < bestExp {
			best, bestExp, found = l, exp, true
		}
	}
	s.evictPos = pos
	if !found {
		return false
	}
	s.removeRecord(best)
	if bestExp <= now {
		s.stats.ExpiredKeys++
	} else {
		s.stats.Evicted++
	}
	return true
}
