package store

import (
	"math/bits"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
	"github.com/sluice-rl/sluice/algorithms"
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

// SetDeciders tells the store how many goroutines call Decide at the same
// time (the server's event loops). It changes speed only, never a decision.
// With one, a pipeline's run of requests locks every shard it touches at
// once, in ascending order as RL.ALL does, so that the cache misses of the
// whole run overlap: at 100k keys and 4 shards that is 5–10 % less server CPU
// per decision. With more, each shard is locked on its own, so that deciders
// on different shards run side by side (holding all of a run's shards would
// put two event loops in single file: 110 → 175 ns per decision in
// BenchmarkParallelBatch100kKeys at two cores). The default, and n < 1, is
// any number (a goroutine per client).
func (st *Store) SetDeciders(n int) { st.together.Store(n == 1) }

// Shards returns the number of shards.
func (st *Store) Shards() int { return len(st.shards) }

func (st *Store) shardOf(key []byte) *shard.Shard {
	return &st.shards[xxhash.Sum64(key)&st.mask]
}

// Decide carries out reqs in order at now and writes each outcome to the
// same index of out, which must be at least as long as reqs. Each request is
// atomic on its key; consecutive requests with the same nonzero Group are
// one all-or-nothing decision, atomic across their keys (see decideGroup).
func (st *Store) Decide(now int64, reqs []algorithms.Request, out []algorithms.Outcome) {
	for i := 0; i < len(reqs); {
		if g := reqs[i].Group; g != 0 {
			j := i + 1
			for j < len(reqs) && reqs[j].Group == g {
				j++
			}
			st.decideGroup(now, reqs[i:j], out[i:j])
			i = j
			continue
		}
		j := i + 1
		for j < len(reqs) && reqs[j].Group == 0 && j-i < runLen {
			j++
		}
		switch {
		case j-i == 1:
			st.decide(now, &reqs[i], &out[i])
		case st.together.Load():
			st.decideTogether(now, reqs[i:j], out[i:j])
		default:
			st.decideRun(now, reqs[i:j], out[i:j])
		}
		i = j
	}
}

// runLen is how many independent requests decideRun takes at once: as
// many as one shard.Prefetch can take.
const runLen = shard.PrefetchMax

// decideRun carries out up to runLen independent requests (a pipeline's
// decisions): it takes each shard's lock once for the requests routed to
// it and, under that lock, prefetches their index slots and records
// together, so that their cache misses overlap instead of following one
// another. Requests on one key keep their order; requests on different keys
// are independent, so their order does not matter.
func (st *Store) decideRun(now int64, reqs []algorithms.Request, out []algorithms.Outcome) {
	var hs [runLen]uint64
	var done [runLen]bool
	for k := range reqs {
		hs[k] = xxhash.Sum64(reqs[k].Key)
	}
	for k := range reqs {
		if done[k] {
			continue
		}
		si := hs[k] & st.mask
		var idx [runLen]int
		var gh [runLen]uint64
		n := 0
		for m := k; m < len(reqs); m++ {
			if !done[m] && hs[m]&st.mask == si {
				idx[n], gh[n], done[m] = m, hs[m], true
				n++
			}
		}
		st.decideOnShard(&st.shards[si], now, reqs, out, idx[:n], gh[:n])
	}
}

// decideOnShard carries out reqs[idx…] (whose hashes are hs) under sh's
// lock.
func (st *Store) decideOnShard(sh *shard.Shard, now int64, reqs []algorithms.Request, out []algorithms.Outcome, idx []int, hs []uint64) {
	sh.Lock()
	defer sh.Unlock() // open-coded: free, and no lock survives a panic
	if len(idx) > 1 {
		var shs [runLen]*shard.Shard
		for k := range hs {
			shs[k] = sh
		}
		shard.Prefetch(shs[:len(hs)], hs)
	}
	lg := st.aof.Load()
	for j, m := range idx {
		decideLocked(sh, now, &reqs[m], hs[j], &out[m], lg)
	}
}

// lockAll locks the shards whose indexes are in set, in ascending order:
// the one order in which anything holds more than one shard, so that no two
// lockers wait on each other. It sorts and deduplicates set in place and
// returns what it locked, for unlockAll.
func (st *Store) lockAll(set []uint32) []uint32 {
	slices.Sort(set)
	set = slices.Compact(set)
	for _, i := range set {
		st.shards[i].Lock()
	}
	return set
}

// unlockAll unlocks what lockAll locked, in reverse order.
func (st *Store) unlockAll(locked []uint32) {
	for j := len(locked) - 1; j >= 0; j-- {
		st.shards[locked[j]].Unlock()
	}
}

// decideTogether carries out up to runLen independent requests, in order,
// holding every shard they touch (see SetDeciders): one prefetch covers the
// whole run. Its locks come from lockAll, as RL.ALL's do; everything else
// holds one shard lock at a time.
func (st *Store) decideTogether(now int64, reqs []algorithms.Request, out []algorithms.Outcome) {
	var hs [runLen]uint64
	var shs [runLen]*shard.Shard
	var set [runLen]uint32
	n := 0
	for k := range reqs {
		hs[k] = xxhash.Sum64(reqs[k].Key)
		si := uint32(hs[k] & st.mask)
		shs[k] = &st.shards[si]
		if !slices.Contains(set[:n], si) {
			set[n] = si
			n++
		}
	}
	locks := st.lockAll(set[:n])
	defer st.unlockAll(locks) // open-coded; no lock survives a panic
	shard.Prefetch(shs[:len(reqs)], hs[:len(reqs)])
	lg := st.aof.Load()
	for k := range reqs {
		decideLocked(shs[k], now, &reqs[k], hs[k], &out[k], lg)
	}
}

func (st *Store) decide(now int64, req *algorithms.Request, o *algorithms.Outcome) {
	h := xxhash.Sum64(req.Key)
	sh := &st.shards[h&st.mask]
	sh.Lock()
	defer sh.Unlock() // open-coded: free, and no lock survives a panic
	decideLocked(sh, now, req, h, o, st.aof.Load())
}

// decideLocked computes and commits one decision into *o, and appends what
// it wrote to lg unless lg is nil; it requires that sh, the shard of
// req.Key (whose hash is h), is locked. Entries and
// outcomes go by pointer: on this path, copies of these 56- and 72-byte
// structs cost more than the decision itself (profiled: about a third of a
// cached decision's time went to them).
func decideLocked(sh *shard.Shard, now int64, req *algorithms.Request, h uint64, o *algorithms.Outcome, lg *AOF) {
	if req.Limit.Algo == algorithms.Log {
		decideLog(sh, now, req, h, o, lg)
		return
	}
	var e, next shard.Entry
	ref := sh.FindInto(req.Key, h, now, &e)
	if apply(now, req, &e, o, &next) {
		commit(sh, ref, req.Key, &next, o, now, lg)
	}
}

// commit stores next for key, as the outcome o decided: marked depleted
// when o admitted the last unit (remaining 0). A new key or a larger record
// refused for want of memory turns *o into the OOM error. What it stored
// is appended to lg, unless lg is nil. commit requires that sh is locked
// and ref came from its Find.
func commit(sh *shard.Shard, ref shard.Ref, key []byte, next *shard.Entry, o *algorithms.Outcome, now int64, lg *AOF) {
	next.Depleted = o.Err == nil && o.Result.Allowed && o.Result.Remaining == 0
	if err := sh.Commit(ref, key, next, now); err != nil {
		*o = algorithms.Outcome{Err: err}
		return
	}
	if lg != nil {
		lg.appendSet(now, key, next)
	}
}

// apply computes the outcome of req on entry *e at now into *o and, when
// something must be written, the entry to store into *next, which must be
// the zero Entry; it returns false when nothing must be written (a peek, a
// denial, an error). It is pure apart from the Ext of Log and Concurrency
// entries (see applyFamily): the caller commits.
func apply(now int64, req *algorithms.Request, e *shard.Entry, o *algorithms.Outcome, next *shard.Entry) (write bool) {
	if e.Algo != algorithms.None && e.Algo != req.Limit.Algo {
		*o = algorithms.Outcome{Err: ErrWrongType}
		return false
	}
	switch req.Limit.Algo {
	case algorithms.Token:
		r, s := req.Limit.TokenBucket().Take(algorithms.TokenState{TAT: e.State[0]}, now, req.N)
		*o = algorithms.Outcome{Result: r}
		if req.N == 0 || !r.Allowed {
			return false
		}
		next.Algo, next.Expire, next.State[0] = algorithms.Token, s.TAT, s.TAT
		return true
	default:
		return applyFamily(now, req, e, o, next)
	}
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
	case algorithms.String:
		return stringTTL(&e, now), nil
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
	}
	return out
}
