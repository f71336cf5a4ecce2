package store

import (
	"slices"

	"github.com/cespare/xxhash/v2"
	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/shard"
)

// The decision path: Decide splits a batch into runs of independent
// requests (decideRun) and RL.ALL groups (decideGroup, in all.go). Both
// find a key's shard with slot, and whatever holds more than one shard
// locks them with lockAll; a run decides each key with decideLocked, which
// commits what apply computed. The measurements behind its choices are in
// bench/RESULTS.md, "Measurements behind the code's choices".

// SetDeciders tells the store how many goroutines call Decide at the same
// time (the server's event loops). It changes speed only, never a decision:
// it sets the lock granularity of decideRun. The default, and n < 1, is any
// number (a goroutine per client).
func (st *Store) SetDeciders(n int) { st.together.Store(n == 1) }

// Decide carries out reqs in order at now and writes each outcome to the
// same index of out, which must be at least as long as reqs. Each request is
// atomic on its key; consecutive requests with the same nonzero Group are
// one all-or-nothing decision, atomic across their keys (see decideGroup).
//
// While WriteRefusal refuses changes, a request that would change state
// gets that error as its outcome instead (see decideRefused).
func (st *Store) Decide(now int64, reqs []algorithms.Request, out []algorithms.Outcome) {
	together := st.together.Load()
	if p := st.gate.refusal.Load(); p != nil {
		st.decideRefused(now, reqs, out, *p, together)
		return
	}
	st.decideAccepted(now, reqs, out, together)
}

// decideAccepted is Decide while changes are accepted.
func (st *Store) decideAccepted(now int64, reqs []algorithms.Request, out []algorithms.Outcome, together bool) {
	if st.hasOverrides.Load() && namesOverride(reqs) {
		st.decideOverrides(now, reqs, out, together)
		return
	}
	st.decideAll(now, reqs, out, together)
}

// decideAll is Decide once the overrides are resolved.
func (st *Store) decideAll(now int64, reqs []algorithms.Request, out []algorithms.Outcome, together bool) {
	for i := 0; i < len(reqs); {
		j := i + 1
		if g := reqs[i].Group; g != 0 {
			for j < len(reqs) && reqs[j].Group == g {
				j++
			}
			st.decideGroup(now, reqs[i:j], out[i:j])
		} else {
			for j < len(reqs) && reqs[j].Group == 0 && j-i < runLen {
				j++
			}
			st.decideRun(now, reqs[i:j], out[i:j], together)
		}
		i = j
	}
}

// runLen is how many independent requests decideRun takes at once: as
// many as one shard.Prefetch can take.
const runLen = shard.PrefetchMax

// slot returns key's hash and the index of its shard: what every path
// computes once per key and hands on (the shard's index is keyed by the
// same hash).
func (st *Store) slot(key []byte) (h uint64, si uint32) {
	h = xxhash.Sum64(key)
	return h, uint32(h & st.mask)
}

// decideRun carries out up to runLen independent requests (a pipeline's
// decisions, or a single one) in order at now. Requests on one key keep
// their order; requests on different keys are independent, so the order
// in which their shards are visited does not matter.
//
// The lock granularity is the together flag (SetDeciders); each choice is
// the faster one in the store's benchmarks (bench/RESULTS.md,
// "Measurements behind the code's choices"):
//
//   - Per shard (together false, several deciders): each shard the run
//     touches is locked once, for the requests routed to it, and their index
//     slots and records are prefetched together under that lock, so that
//     their cache misses overlap instead of following one another
//     (decideShard). Deciders on different shards run side by side; holding
//     all of a run's shards instead would put the event loops in single
//     file.
//   - Together (one decider): every shard the run touches is locked at once
//     by lockAll, in ascending order as RL.ALL does, and one prefetch covers
//     the whole run, since no other decider waits for those locks.
//   - A run of one (pipeline depth 1, or a request between two groups)
//     goes to decideOne: its shard's lock, no tables, no prefetch, which
//     the tables above would only slow down.
func (st *Store) decideRun(now int64, reqs []algorithms.Request, out []algorithms.Outcome, together bool) {
	if len(reqs) == 1 {
		st.decideOne(now, &reqs[0], &out[0])
		return
	}
	var hs [runLen]uint64
	var sis [runLen]uint32
	for k := range reqs {
		hs[k], sis[k] = st.slot(reqs[k].Key)
	}
	if !together {
		var done [runLen]bool
		for k := range reqs {
			if !done[k] {
				st.decideShard(now, reqs[k:], out[k:], hs[k:len(reqs)], sis[k:len(reqs)], done[k:len(reqs)])
			}
		}
		return
	}
	var shs [runLen]*shard.Shard
	var set [runLen]uint32
	n := 0
	for k := range reqs {
		shs[k] = &st.shards[sis[k]]
		if !slices.Contains(set[:n], sis[k]) {
			set[n] = sis[k]
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

// decideShard carries out, under one hold of the lock of reqs[0]'s shard,
// every request of reqs on that shard that done does not mark, and marks
// them. hs, sis and done are the requests' hashes, shard indexes and marks,
// as long as reqs or shorter.
func (st *Store) decideShard(now int64, reqs []algorithms.Request, out []algorithms.Outcome, hs []uint64, sis []uint32, done []bool) {
	var idx [runLen]uint8
	var ghs [runLen]uint64
	var shs [runLen]*shard.Shard
	sh := &st.shards[sis[0]]
	n := 0
	for m := range hs {
		if !done[m] && sis[m] == sis[0] {
			idx[n], ghs[n], shs[n], done[m] = uint8(m), hs[m], sh, true
			n++
		}
	}
	sh.Lock()
	defer sh.Unlock() // open-coded: free, and no lock survives a panic
	if n > 1 {
		shard.Prefetch(shs[:n], ghs[:n])
	}
	lg := st.aof.Load()
	for j, m := range idx[:n] {
		decideLocked(sh, now, &reqs[m], ghs[j], &out[m], lg)
	}
}

// decideOne carries out a run of one: the lock of its key's shard, held
// for the one decision (see decideRun for what it saves).
func (st *Store) decideOne(now int64, req *algorithms.Request, o *algorithms.Outcome) {
	h, si := st.slot(req.Key)
	sh := &st.shards[si]
	sh.Lock()
	defer sh.Unlock() // open-coded: free, and no lock survives a panic
	decideLocked(sh, now, req, h, o, st.aof.Load())
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

// decideLocked computes and commits one decision into *o, and appends what
// it wrote to lg unless lg is nil; it requires that sh, the shard of
// req.Key (whose hash is h), is locked. Entries and
// outcomes go by pointer: on this path, copies of these 56- and 72-byte
// structs cost more than the decision itself (profiled: about a third of a
// cached decision's time went to them).
func decideLocked(sh *shard.Shard, now int64, req *algorithms.Request, h uint64, o *algorithms.Outcome, lg *AOF) {
	if req.Limit.Algo == algorithms.Log && req.Min == 0 {
		decideLog(sh, now, req, h, o, lg)
		return
	}
	var e, next shard.Entry
	ref := sh.FindReusing(req.Key, h, now, &e)
	if apply(now, req, &e, o, &next) {
		commit(sh, ref, req.Key, &next, o, now, lg)
	}
	sh.DropExpired(ref, req.Key, now)
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
	if req.Limit.Algo == overridePseudo {
		pseudoOutcome(req, o)
		return false
	}
	if e.Algo != algorithms.None && e.Algo != req.Limit.Algo && !replaces(req, e) {
		*o = algorithms.Outcome{Err: ErrWrongType}
		return false
	}
	if req.Min > 0 {
		return applyTake(now, req, e, o, next)
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
