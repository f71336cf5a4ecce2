package store

import (
	"fmt"
	"sync/atomic"

	"github.com/sluice-rl/sluice/shard"
)

// The memory limit. Memory is accounted deterministically by the shards:
// the words their arenas have handed out (records, free ones included, and
// each chunk's bitmap) and their index tables. A limit of B bytes gives
// each of the n shards B/n; a new key, or an existing key whose record must
// grow (a sliding log's ring, a concurrency limit's leases), is refused
// (or, under volatile-ttl, makes room by evicting others) when its shard is
// at its share. With keys spread evenly by xxhash, the store refuses when
// its total is within a fraction of a percent of B. Decisions that need no
// more room than their record has keep working at the limit.

// Policy says what the store does for a new key at the memory limit.
type Policy = shard.Policy

// The policies, in Redis's words.
const (
	NoEviction  = shard.NoEviction
	VolatileTTL = shard.VolatileTTL
)

// ParsePolicy reads a maxmemory-policy name.
func ParsePolicy(name string) (Policy, error) {
	switch name {
	case "noeviction":
		return NoEviction, nil
	case "volatile-ttl":
		return VolatileTTL, nil
	}
	return 0, fmt.Errorf("maxmemory-policy %q is not one of noeviction, volatile-ttl", name)
}

type memory struct {
	max    atomic.Int64
	policy atomic.Uint32
}

// SetMaxMemory sets the memory limit (0: none) and the policy at the limit.
func (st *Store) SetMaxMemory(bytes int64, p Policy) {
	st.mem.max.Store(bytes)
	st.mem.policy.Store(uint32(p))
	per := bytes / int64(len(st.shards))
	if bytes > 0 && per == 0 {
		per = 1
	}
	for i := range st.shards {
		sh := &st.shards[i]
		sh.Lock()
		sh.SetLimit(per, p)
		sh.Unlock()
	}
}

// MaxMemory returns the memory limit (0: none) and the policy at the limit.
func (st *Store) MaxMemory() (int64, Policy) {
	return st.mem.max.Load(), Policy(st.mem.policy.Load())
}

// Now returns the latest instant the store was given: its idea of the
// present, deterministic given the same calls.
func (st *Store) Now() int64 {
	var now int64
	for i := range st.shards {
		sh := &st.shards[i]
		sh.Lock()
		now = max(now, sh.Now())
		sh.Unlock()
	}
	return now
}
