package store

import (
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/sluice-rl/sluice/algorithms"
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

// commit stores next for key, as the outcome o decided: marked depleted
// when o admitted the last unit (remaining 0). A new key or a larger record
// refused for want of memory turns *o into the OOM error. commit requires that sh is locked
// and ref came from its Find.
func commit(sh *shard.Shard, ref shard.Ref, key []byte, next *shard.Entry, o *algorithms.Outcome, now int64) {
	next.Depleted = o.Err == nil && o.Result.Allowed && o.Result.Remaining == 0
	if err := sh.Commit(ref, key, next, now); err != nil {
		*o = algorithms.Outcome{Err: err}
	}
}

// InfoMemory returns the store's memory as INFO memory fields.
func (st *Store) InfoMemory() [][2]string {
	s := st.Stats()
	itoa := func(v int64) string { return strconv.FormatInt(v, 10) }
	return [][2]string{
		{"keyspace_used_memory", itoa(s.Used())},
		{"keyspace_arena_bytes", itoa(s.ArenaBytes)},
		{"keyspace_index_bytes", itoa(s.IndexBytes)},
		{"keyspace_free_bytes", itoa(s.FreeBytes)},
		{"keyspace_keys", itoa(s.Keys)},
		{"maxmemory", itoa(st.mem.max.Load())},
		{"maxmemory_policy", Policy(st.mem.policy.Load()).String()},
		{"evicted_keys", itoa(s.Evicted)},
		{"oom_refused_keys", itoa(s.Refused)},
	}
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
