package store

import (
	"math"

	"github.com/cespare/xxhash/v2"
	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/shard"
)

// How each algorithm's state sits in a shard.Entry:
//
//	Token, Leaky, Throttle: State[0] = TAT
//	Fixed:                  State[0] = window start, State[1] = count
//	Sliding:                State[0] = window start, State[1] = current, State[2] = previous
//	Log:                    State[0] = head, State[1] = count, Ext = the ring of timestamps
//	Concurrency:            Ext = (id hash, lease end) pairs
//
// Expire is always now + the result's ResetAfter: the instant the new state
// equals "absent".

// applyFamily computes the algorithms other than the token bucket; its
// contract is apply's. For Log and Concurrency, an admitted request writes
// into e.Ext (the slice Find returned) and hands it, or a larger or smaller
// one, to the entry it returns; a denied one, a peek or an error leave e.Ext
// alone. So this relies on two things of shard: the Ext that Find returns
// may be written while the lock is held, and Commit accepts an Ext that
// shares memory with the stored one (it may keep the slice or copy it).
// TestLogInPlaceMatchesThePureAlgorithm checks both through the store. A
// decision on a single key goes to decideLog for Log instead, which gives
// the ring its room in the shard before building it.
func applyFamily(now int64, req *algorithms.Request, e *shard.Entry, o *algorithms.Outcome, next *shard.Entry) bool {
	l := req.Limit
	var r algorithms.Result
	next.Algo = l.Algo
	switch l.Algo {
	case algorithms.Leaky:
		var s algorithms.LeakyState
		r, s = l.LeakyBucket().Take(algorithms.LeakyState{TAT: e.State[0]}, now, req.N)
		next.State[0] = s.TAT
	case algorithms.Throttle:
		var s algorithms.TokenState
		r, s = l.CellThrottle().Take(algorithms.TokenState{TAT: e.State[0]}, now, req.N)
		next.State[0] = s.TAT
	case algorithms.Fixed:
		var s algorithms.FixedState
		r, s = l.FixedWindow().Take(algorithms.FixedState{Start: e.State[0], Count: e.State[1]}, now, req.N)
		next.State = [3]int64{s.Start, s.Count}
	case algorithms.Sliding:
		var s algorithms.SlidingState
		r, s = l.SlidingWindow().Take(slidingState(e), now, req.N)
		next.State = [3]int64{s.Start, s.Current, s.Previous}
	case algorithms.Log:
		var s algorithms.LogState
		r, s = l.SlidingLog().Take(logState(e), now, req.N)
		next.State, next.Ext = [3]int64{s.Head, s.Count}, s.Ring
	case algorithms.Concurrency:
		var s algorithms.LeaseState
		r, s = l.LeaseLimit().Take(algorithms.LeaseState{Leases: e.Ext}, now, leaseID(req.ID), req.N)
		next.Ext = s.Leases
	default:
		*o = algorithms.Outcome{Err: errUnknownAlgo}
		return false
	}
	next.Expire = expireAt(now, r.ResetAfter)
	*o = algorithms.Outcome{Result: r}
	return req.N != 0 && r.Allowed
}

// applyTake is apply for a take (req.Min > 0, RL.TAKE): the largest amount
// in [req.Min, req.N] that the state holds, on the algorithms that can be
// leased; the others get errNotLeasable. Its contract is apply's.
func applyTake(now int64, req *algorithms.Request, e *shard.Entry, o *algorithms.Outcome, next *shard.Entry) bool {
	l := req.Limit
	var r algorithms.Result
	switch l.Algo {
	case algorithms.Token:
		var s algorithms.TokenState
		r, s = l.TokenBucket().TakeUpTo(algorithms.TokenState{TAT: e.State[0]}, now, req.Min, req.N)
		next.State[0] = s.TAT
	case algorithms.Fixed:
		var s algorithms.FixedState
		r, s = l.FixedWindow().TakeUpTo(algorithms.FixedState{Start: e.State[0], Count: e.State[1]}, now, req.Min, req.N)
		next.State = [3]int64{s.Start, s.Count}
	default:
		*o = algorithms.Outcome{Err: errNotLeasable}
		return false
	}
	next.Algo = l.Algo
	next.Expire = expireAt(now, r.ResetAfter)
	*o = algorithms.Outcome{Result: r}
	return r.Allowed
}

// decideLog is decideLocked for a sliding log: it decides on a draft, which
// writes nothing, and then writes the draft with writeLog. It requires that
// sh, the shard of req.Key (whose hash is h), is locked.
func decideLog(sh *shard.Shard, now int64, req *algorithms.Request, h uint64, o *algorithms.Outcome, lg *AOF) {
	var entry shard.Entry
	e := &entry
	ref := sh.FindInto(req.Key, h, now, e)
	if e.Algo != algorithms.None && e.Algo != algorithms.Log && !replaces(req, e) {
		*o = algorithms.Outcome{Err: ErrWrongType}
		return
	}
	d := algorithms.NewLogDraft(logState(e))
	*o = algorithms.Outcome{Result: req.Limit.SlidingLog().Decide(&d, now, req.N)}
	if req.N != 0 && o.Result.Allowed {
		writeLog(sh, ref, req.Key, e, &d, req.Limit.Count, now, o, lg)
	}
}

// writeLog writes the draft d of key's log, decided with limit into the
// outcome o, to the shard: *e is the entry Find returned at ref, d's base.
// A ring that must grow past the room its record has gets that room first
// (shard.Reserve, making room under the memory limit as a new key does), so
// that it is built in the shard's memory, never on the heap, and a refusal
// (o becomes the OOM error, nothing changes) comes before anything is
// built. What it wrote is appended to lg unless lg is nil. It requires
// that sh is locked.
func writeLog(sh *shard.Shard, ref shard.Ref, key []byte, e *shard.Entry, d *algorithms.LogDraft, limit, now int64, o *algorithms.Outcome, lg *AOF) {
	if !reserveLog(sh, &ref, key, e, d, limit, now, o) {
		return
	}
	s := d.Apply(limit)
	next := shard.Entry{Algo: algorithms.Log, Expire: expireAt(now, o.Result.ResetAfter),
		State: [3]int64{s.Head, s.Count}, Ext: s.Ring}
	commit(sh, ref, key, &next, o, now, lg)
}

// reserveLog gives key's record the room d's ring will need, and d's base
// that room (see writeLog). It returns false, with o the error, when the
// shard refuses. It requires that sh is locked.
func reserveLog(sh *shard.Shard, ref *shard.Ref, key []byte, e *shard.Entry, d *algorithms.LogDraft, limit, now int64, o *algorithms.Outcome) bool {
	size := d.RingLen(limit)
	if size <= int64(cap(e.Ext)) {
		return true
	}
	if e.Algo == algorithms.None {
		// A new key's record, laid out as the log's will be: a head and
		// a count (not 0), and an expiry.
		*e = shard.Entry{Algo: algorithms.Log, Expire: expireAt(now, o.Result.ResetAfter), State: [3]int64{0, 1}}
	}
	if err := sh.Reserve(ref, key, e, int(size), now); err != nil {
		*o = algorithms.Outcome{Err: err}
		return false
	}
	d.Rebase(e.Ext)
	return true
}

func slidingState(e *shard.Entry) algorithms.SlidingState {
	return algorithms.SlidingState{Start: e.State[0], Current: e.State[1], Previous: e.State[2]}
}

func logState(e *shard.Entry) algorithms.LogState {
	return algorithms.LogState{Head: e.State[0], Count: e.State[1], Ring: e.Ext}
}

// leaseID hashes a lease holder's id, of any length, to the 64 bits the
// algorithm keeps. xxhash is deterministic across processes and machines,
// which replicas replaying the same requests need. Two ids collide with
// probability 2^-64 per pair; colliding ids would share one lease.
func leaseID(id []byte) uint64 { return xxhash.Sum64(id) }

// expireAt returns now + after, saturated: when a state written at now
// becomes absent.
func expireAt(now, after int64) int64 {
	if after > 0 && now > math.MaxInt64-after {
		return math.MaxInt64
	}
	return now + after
}
