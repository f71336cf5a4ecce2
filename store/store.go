package store

import (
	"errors"
	"math/bits"

	"github.com/cespare/xxhash/v2"
	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/shard"
)

// ErrWrongType is the outcome of using a key with an algorithm other than
// the one whose state it holds.
var ErrWrongType = errors.New("WRONGTYPE Operation against a key holding the wrong kind of value")

// Store is the whole key space: a power-of-two number of shards.
//
// Concurrency: every method is safe for concurrent use. Each operation on
// one key holds that key's shard lock from read to write, so decisions on a
// key are linearizable. Determinism: no method reads a clock; given the same
// calls with the same instants, a store reaches the same state, which is
// what a Raft FSM needs.
type Store struct {
	shards []shard.Shard
	mask   uint64
}

// New returns an empty store with n shards, rounded up to a power of two
// (at least 1).
func New(n int) *Store {
	if n < 1 {
		n = 1
	}
	n = 1 << bits.Len(uint(n-1))
	return &Store{shards: make([]shard.Shard, n), mask: uint64(n - 1)}
}

// Shards returns the number of shards.
func (st *Store) Shards() int { return len(st.shards) }

func (st *Store) shardOf(key []byte) *shard.Shard {
	return &st.shards[xxhash.Sum64(key)&st.mask]
}

// Decide carries out reqs in order at now and writes each outcome to the
// same index of out, which must be at least as long as reqs. Each request is
// atomic on its key.
func (st *Store) Decide(now int64, reqs []algorithms.Request, out []algorithms.Outcome) {
	for i := range reqs {
		out[i] = st.decide(now, &reqs[i])
	}
}

func (st *Store) decide(now int64, req *algorithms.Request) algorithms.Outcome {
	sh := st.shardOf(req.Key)
	sh.Lock()
	defer sh.Unlock() // open-coded: free, and no lock survives a panic
	ref, e := sh.Find(req.Key, now)
	o, next, write := apply(now, req, e)
	if write {
		sh.Commit(ref, req.Key, next, now)
	}
	return o
}

// apply computes the outcome of req on entry e at now and the entry to
// store; write is false when nothing must be written (a peek, a denial, an
// error). It is pure: the caller commits.
func apply(now int64, req *algorithms.Request, e shard.Entry) (o algorithms.Outcome, next shard.Entry, write bool) {
	if e.Algo != algorithms.None && e.Algo != req.Limit.Algo {
		return algorithms.Outcome{Err: ErrWrongType}, e, false
	}
	switch req.Limit.Algo {
	case algorithms.Token:
		r, s := req.Limit.TokenBucket().Take(algorithms.TokenState{TAT: e.State[0]}, now, req.N)
		next = shard.Entry{Algo: algorithms.Token, Expire: s.TAT, State: [2]int64{s.TAT}}
		return algorithms.Outcome{Result: r}, next, req.N != 0 && r.Allowed
	default:
		return algorithms.Outcome{Err: errors.New("ERR unknown algorithm")}, e, false
	}
}

// Delete removes keys and returns how many of them held a live entry.
func (st *Store) Delete(now int64, keys [][]byte) int64 {
	var n int64
	for _, k := range keys {
		sh := st.shardOf(k)
		sh.Lock()
		if sh.Delete(k, now) {
			n++
		}
		sh.Unlock()
	}
	return n
}

// Exists returns how many of keys hold a live entry (a key named twice counts
// twice, as in Redis).
func (st *Store) Exists(now int64, keys [][]byte) int64 {
	var n int64
	for _, k := range keys {
		if _, e := st.Get(now, k); e.Algo != algorithms.None {
			n++
		}
	}
	return n
}

// Get returns key's live entry at now (Algo None if absent).
func (st *Store) Get(now int64, key []byte) (bool, shard.Entry) {
	sh := st.shardOf(key)
	sh.Lock()
	ref, e := sh.Find(key, now)
	sh.Unlock()
	return !ref.Absent(), e
}

// DBSize returns the number of live keys at now. It visits every entry, one
// shard lock at a time.
func (st *Store) DBSize(now int64) int64 {
	var n int64
	for i := range st.shards {
		sh := &st.shards[i]
		sh.Lock()
		n += int64(sh.Len(now))
		sh.Unlock()
	}
	return n
}

// Flush removes every key.
func (st *Store) Flush() {
	for i := range st.shards {
		sh := &st.shards[i]
		sh.Lock()
		sh.Flush()
		sh.Unlock()
	}
}

// Scan visits about count slots from cursor and calls fn for each live
// entry; it returns the cursor to continue from, 0 when the iteration is
// complete. A key that is present for a whole iteration is returned at least
// once; the key passed to fn is only valid during the call.
func (st *Store) Scan(now int64, cursor uint64, count int, fn func(key []byte, e shard.Entry)) uint64 {
	const posBits = 40
	idx := cursor >> posBits
	pos := int(cursor & (1<<posBits - 1))
	if count < 1 {
		count = 10
	}
	if idx >= uint64(len(st.shards)) {
		return 0
	}
	sh := &st.shards[idx]
	sh.Lock()
	next := sh.Scan(pos, count, now, fn)
	sh.Unlock()
	switch {
	case next != 0:
		return idx<<posBits | uint64(next)
	case idx+1 < uint64(len(st.shards)):
		return (idx + 1) << posBits
	default:
		return 0
	}
}

// SweepStats sums what the sweep did in one call.
type SweepStats struct {
	Examined, Removed int
}

// Sweep runs one bounded step of active expiry over every shard at now:
// per shard, rounds of 20 slots while more than a tenth of a round had
// expired, at most maxRounds rounds. Each round holds one shard lock.
func (st *Store) Sweep(now int64, maxRounds int) SweepStats {
	const round = 20
	var out SweepStats
	for i := range st.shards {
		sh := &st.shards[i]
		for r := 0; r < maxRounds; r++ {
			sh.Lock()
			ex, rm := sh.Sweep(now, round)
			sh.Unlock()
			out.Examined += ex
			out.Removed += rm
			if ex == 0 || rm*10 <= ex {
				break
			}
		}
	}
	return out
}

// Stats sums the shards' counters.
func (st *Store) Stats() shard.Stats {
	var out shard.Stats
	for i := range st.shards {
		s := st.shards[i].Stats()
		out.Keys += s.Keys
		out.ExpiredKeys += s.ExpiredKeys
		out.SweepSteps += s.SweepSteps
		out.SweepRemoved += s.SweepRemoved
	}
	return out
}
