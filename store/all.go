package store

import (
	"bytes"

	"github.com/cespare/xxhash/v2"
	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/shard"
)

// smallGroup is the largest group decided with scratch space on the stack.
const smallGroup = 16

// decideGroup carries out reqs, one group (RL.ALL), as one all-or-nothing
// decision at now, writing each request's outcome to out.
//
// It locks every shard the keys fall in, in ascending shard order with each
// shard locked once, so that groups racing over overlapping keys cannot
// deadlock, and holds them all for the whole decision. It then evaluates the
// requests in order without writing anything, each on the state the ones
// before it would leave (a key named twice is charged twice, as two commands
// in a row would be). Only if every request is admitted and none fails does
// it carry them out, in the same order, which reaches exactly the evaluated
// outcomes. Otherwise nothing changes anywhere, and the outcomes say so:
// a request that was denied keeps its denial (RetryAfter included); one that
// would have been admitted reports, still Allowed, the state as it stands,
// as a peek (n = 0) would.
func (st *Store) decideGroup(now int64, reqs []algorithms.Request, out []algorithms.Outcome) {
	m := len(reqs)
	var (
		shardBuf [smallGroup]uint32
		lockBuf  [smallGroup]uint32
		prevBuf  [smallGroup]int32
		nextBuf  [smallGroup]bool
		entBuf   [smallGroup]shard.Entry
		newBuf   [smallGroup]bool
	)
	shards, locks, prev, hasNext, ents := shardBuf[:0], lockBuf[:0], prevBuf[:0], nextBuf[:0], entBuf[:0]
	created := newBuf[:0]
	if m > smallGroup {
		shards, locks = make([]uint32, 0, m), make([]uint32, 0, m)
		prev, hasNext, ents = make([]int32, 0, m), make([]bool, 0, m), make([]shard.Entry, 0, m)
		created = make([]bool, 0, m)
	}
	created = created[:m]
	for i := range reqs {
		shards = append(shards, uint32(xxhash.Sum64(reqs[i].Key)&st.mask))
	}
	prev, hasNext = sameKeys(reqs, shards, prev[:m], hasNext[:m])
	ents = ents[:m]

	locks = st.lockAll(append(locks, shards...))
	defer st.unlockAll(locks)

	// Evaluate, writing nothing.
	ok := true
	for i := range reqs {
		var e shard.Entry
		if p := prev[i]; p >= 0 {
			e = ents[p]
		} else {
			_, e = st.shards[shards[i]].Find(reqs[i].Key, now)
		}
		o, next, write := evaluate(now, &reqs[i], e, hasNext[i])
		out[i] = o
		ok = ok && o.Err == nil && o.Result.Allowed
		created[i] = prev[i] < 0 && e.Algo == algorithms.None && write && next.Live(now)
		if write {
			ents[i] = next
		} else {
			ents[i] = e
		}
	}
	if !ok {
		st.reportUnchanged(now, reqs, out, shards)
		return
	}
	if !st.roomForGroup(now, reqs, shards, locks, created, ents) {
		clear(out)
		out[0].Err = shard.ErrOOM // the group's reply is this error; nothing changed
		return
	}
	// Carry out, in the same order: the same computation on the same states.
	for i := range reqs {
		sh := &st.shards[shards[i]]
		decideLocked(sh, now, &reqs[i], sh.Hash(reqs[i].Key), &out[i])
	}
}

// sameKeys finds the requests that name a key an earlier one named: prev[i]
// is the latest earlier request on reqs[i]'s key (-1 if none), and
// hasNext[i] says whether a later one follows. shards[i] is reqs[i]'s shard.
func sameKeys(reqs []algorithms.Request, shards []uint32, prev []int32, hasNext []bool) ([]int32, []bool) {
	clear(hasNext)
	if len(reqs) <= smallGroup {
		for i := range reqs {
			prev[i] = -1
			for j := i - 1; j >= 0; j-- {
				if shards[j] == shards[i] && bytes.Equal(reqs[j].Key, reqs[i].Key) {
					prev[i], hasNext[j] = int32(j), true
					break
				}
			}
		}
		return prev, hasNext
	}
	last := make(map[string]int32, len(reqs))
	for i := range reqs {
		prev[i] = -1
		if j, seen := last[string(reqs[i].Key)]; seen {
			prev[i], hasNext[j] = j, true
		}
		last[string(reqs[i].Key)] = int32(i)
	}
	return prev, hasNext
}

// evaluate computes req on e like apply, but never writes into e's memory.
// apply is pure except for the states with a variable part (a sliding log,
// leases), which it rewrites in place: a log is only checked, or, when a
// later request of the group needs the state it would leave, worked out on
// a copy; leases (not part of RL.ALL) always on a copy.
func evaluate(now int64, req *algorithms.Request, e shard.Entry, needNext bool) (o algorithms.Outcome, next shard.Entry, write bool) {
	algo := req.Limit.Algo
	inPlace := algo == algorithms.Log || algo == algorithms.Concurrency
	if !inPlace || e.Algo != algorithms.None && e.Algo != algo {
		write = apply(now, req, &e, &o, &next) // pure; or WRONGTYPE, which writes nothing
		return o, next, write
	}
	if algo == algorithms.Log && (!needNext || req.N == 0) {
		r := req.Limit.SlidingLog().Check(logState(&e), now, req.N)
		return algorithms.Outcome{Result: r}, e, false
	}
	e.Ext = append([]int64(nil), e.Ext...)
	write = apply(now, req, &e, &o, &next)
	return o, next, write
}

// reportUnchanged rewrites the outcomes of a group that changed nothing:
// requests that would have been admitted report the stored state as a peek
// does. It requires that the group's shards are locked.
func (st *Store) reportUnchanged(now int64, reqs []algorithms.Request, out []algorithms.Outcome, shards []uint32) {
	for i := range reqs {
		if out[i].Err != nil || !out[i].Result.Allowed || reqs[i].N == 0 {
			continue
		}
		peek := reqs[i]
		peek.N = 0
		_, e := st.shards[shards[i]].Find(peek.Key, now)
		o, _, _ := evaluate(now, &peek, e, false)
		if o.Err == nil {
			out[i].Result = o.Result
		}
	}
}
