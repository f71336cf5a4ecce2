package store

import (
	"math/bits"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/compat"
	"github.com/sluice-rl/sluice/shard"
)

// Store is the whole key space: a power-of-two number of shards.
//
// Concurrency: every method is safe for concurrent use. Each operation on
// one key holds that key's shard lock from read to write, so decisions on a
// key are linearizable. Determinism: no method reads a clock; given the same
// calls with the same instants, a store reaches the same state, which is
// what a Raft FSM needs. With an append-only log attached (SetAOF), every
// change is appended to it while the lock that applied it is held.
type Store struct {
	shards   []shard.Shard
	mask     uint64
	together atomic.Bool         // one decider: a run locks all its shards at once (SetDeciders)
	aof      atomic.Pointer[AOF] // the append-only log every change goes to; nil: none (SetAOF)
	mem      memory
	sweep    sweepStats
	saved    atomic.Int64 // Stats().Changes as of the start of the last successful save
	// hasOverrides is set once the store holds an override entry (any
	// path: RL.OVERRIDE, a snapshot, the log); until then Decide looks no
	// override up. It is never cleared (a stale true costs lookups only).
	hasOverrides atomic.Bool
	// gate is what refuses changes now (refusal.go); ignoreSaveErrors is
	// stop-writes-on-bgsave-error no.
	gate             writeGate
	ignoreSaveErrors atomic.Bool

	sidecar Sidecar // kept beside the entries in snapshots and the log (sidecar.go); nil: none
	// loadedSidecar is the last sidecar state a load into this store met,
	// and loadedParts the sidecar parts that followed it, in order, from
	// byte sidecarAt of its file on; nil: none.
	loadedSidecar []byte
	loadedParts   [][]byte
	sidecarAt     int64
}

// New returns an empty store with n shards, rounded up to a power of two
// (at least 1).
func New(n int) *Store {
	if n < 1 {
		n = 1
	}
	n = 1 << bits.Len(uint(n-1))
	st := &Store{shards: make([]shard.Shard, n), mask: uint64(n - 1)}
	// The shards' memory is mapped outside the Go heap: give it back when
	// the store is dropped without a Flush.
	runtime.AddCleanup(st, func(shards []shard.Shard) {
		for i := range shards {
			shards[i].Flush()
		}
	}, st.shards)
	return st
}

// Shards returns the number of shards.
func (st *Store) Shards() int { return len(st.shards) }

func (st *Store) shardOf(key []byte) *shard.Shard {
	return &st.shards[xxhash.Sum64(key)&st.mask]
}

// Delete removes keys and returns how many of them held a live entry. The
// error is always nil; the signature is the one the edge's Keyspace shares
// with the Raft node, which can fail.
func (st *Store) Delete(now int64, keys [][]byte) (int64, error) {
	var n int64
	lg := st.aof.Load()
	for _, k := range keys {
		sh := st.shardOf(k)
		sh.Lock()
		if sh.Delete(k, now) {
			n++
			if lg != nil {
				lg.appendDelete(now, k)
			}
		}
		sh.Unlock()
	}
	return n, nil
}

// Exists returns how many of keys hold a live entry (a key named twice counts
// twice, as in Redis).
func (st *Store) Exists(now int64, keys [][]byte) (int64, error) {
	var n int64
	for _, k := range keys {
		if st.get(now, k).Algo != algorithms.None {
			n++
		}
	}
	return n, nil
}

// Type returns the algorithm of key's state, None if absent.
func (st *Store) Type(now int64, key []byte) (algorithms.Algo, error) {
	return st.get(now, key).Algo, nil
}

// TTL returns the time until key's state expires, -1 if absent, NoTTL if
// it never expires (a string written without a TTL).
func (st *Store) TTL(now int64, key []byte) (int64, error) {
	e := st.get(now, key)
	switch e.Algo {
	case algorithms.None:
		return -1, nil
	case algorithms.String, algorithms.List:
		return stringTTL(&e, now), nil
	case algorithms.Override:
		if e.Expire == compat.NoExpire {
			return NoTTL, nil
		}
	}
	return e.Expire - now, nil
}

// get returns key's live entry at now (Algo None if absent). Its Ext is a
// copy: the shard's own memory is only valid under its lock.
func (st *Store) get(now int64, key []byte) shard.Entry {
	sh := st.shardOf(key)
	sh.Lock()
	_, e := sh.Find(key, now)
	if e.Ext != nil {
		e.Ext = slices.Clone(e.Ext)
	}
	sh.Unlock()
	return e
}

// DBSize returns the number of live keys at now. It visits every entry,
// holding a shard's lock for 4096 entries at a time, so a count of millions
// of keys delays no decision by more than that; keys that come or go while
// it runs may or may not be counted.
func (st *Store) DBSize(now int64) (int64, error) {
	var n int64
	count := func([]byte, shard.Entry) { n++ }
	for i := range st.shards {
		sh := &st.shards[i]
		for pos := 0; ; {
			sh.Lock()
			pos, _ = sh.Scan(pos, 4096, now, count)
			sh.Unlock()
			if pos == 0 {
				break
			}
		}
	}
	return n, nil
}

// Flush removes every key. With a log it holds every shard while it
// does, so that the log's flush comes after every change before it and
// before every change after it.
func (st *Store) Flush(now int64) error {
	if lg := st.aof.Load(); lg != nil {
		release := st.hold()
		defer release()
		for i := range st.shards {
			st.shards[i].Flush()
		}
		lg.appendFrame(now, []byte{itemFlush})
		return nil
	}
	for i := range st.shards {
		sh := &st.shards[i]
		sh.Lock()
		sh.Flush()
		sh.Unlock()
	}
	return nil
}

// Scan visits about count records from cursor, moving on to the next
// shards until it has visited count, and calls fn for each live entry. It
// returns the cursor to continue from, 0 when the iteration is complete. A
// key that is present for a whole iteration is offered at least once.
//
// fn runs with no lock held, on a copy of the key that is valid during the
// call: Scan copies the keys of up to scanChunk records (and scanChunkBytes
// of keys, at least one key) out of a shard under its lock, unlocks, then
// offers them. So a slow fn (a MATCH pattern) delays no decision. When fn
// returns false, Scan stops and returns a cursor that resumes at that key,
// which the next call offers again.
func (st *Store) Scan(now int64, cursor uint64, count int, fn func(key []byte, algo algorithms.Algo) bool) (uint64, error) {
	const posBits = 40 // cursor = shard index << posBits | record position
	idx := cursor >> posBits
	pos := int(cursor & (1<<posBits - 1))
	if count < 1 {
		count = 10
	}
	type copied struct {
		at, end int // the record's position; where its key ends in keys
		algo    algorithms.Algo
	}
	var keys []byte
	var out []copied
	take := func(at int, key []byte, e shard.Entry) bool {
		if len(out) > 0 && len(keys)+len(key) > scanChunkBytes {
			return false
		}
		keys = append(keys, key...)
		out = append(out, copied{at, len(keys), e.Algo})
		return true
	}
	for budget := count; budget > 0 && idx < uint64(len(st.shards)); {
		sh := &st.shards[idx]
		keys, out = keys[:0], out[:0]
		sh.Lock()
		next, visited := sh.Walk(pos, min(budget, scanChunk), now, take)
		sh.Unlock()
		budget -= visited
		from := 0
		for _, c := range out {
			if !fn(keys[from:c.end:c.end], c.algo) {
				return idx<<posBits | uint64(c.at), nil
			}
			from = c.end
		}
		if next != 0 {
			pos = next
			continue
		}
		idx, pos = idx+1, 0
	}
	if idx >= uint64(len(st.shards)) {
		return 0, nil
	}
	return idx<<posBits | uint64(pos), nil
}

// A Scan holds a shard's lock while it copies at most scanChunk records'
// keys, and at most scanChunkBytes of them after the first.
const (
	scanChunk      = 256
	scanChunkBytes = 64 << 10
)

// Stats sums the shards' counters.
func (st *Store) Stats() shard.Stats {
	var out shard.Stats
	for i := range st.shards {
		s := st.shards[i].Stats()
		out.Keys += s.Keys
		out.ExpiredKeys += s.ExpiredKeys
		out.SweepSteps += s.SweepSteps
		out.SweepRemoved += s.SweepRemoved
		out.Evicted += s.Evicted
		out.Refused += s.Refused
		out.ArenaBytes += s.ArenaBytes
		out.FreeBytes += s.FreeBytes
		out.IndexBytes += s.IndexBytes
		out.Hits += s.Hits
		out.Misses += s.Misses
		out.Changes += s.Changes
	}
	return out
}
