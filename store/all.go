package store

import (
	"bytes"
	"slices"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/shard"
)

// smallGroup is the largest group decided with scratch space on the stack.
const smallGroup = 16

// groupKey is one key of a group decision: where it is, what it held, and
// what the group's requests so far would leave in it, decided but not
// written.
type groupKey struct {
	key   []byte
	shard uint32
	ref   shard.Ref
	// orig is the entry Find returned. Its Ext is a copy, except a sliding
	// log's ring, which nothing writes before the group is carried out.
	orig shard.Entry
	// cur is the entry as the requests so far leave it, except a log's
	// ring and head, which draft holds: a log is decided on one draft for
	// all of the group's requests on it, so that none copies the ring.
	cur      shard.Entry
	draft    algorithms.LogDraft
	drafting bool
	last     int32 // the latest request that wrote the key; -1: none
	grow     bool  // its record must be made or grow
	done     bool  // written (its record made or grown) before the rest
}

// decideGroup carries out reqs, one group (RL.ALL), as one all-or-nothing
// decision at now, writing each request's outcome to out.
//
// It locks every shard the keys fall in, in ascending shard order with each
// shard locked once, so that groups racing over overlapping keys cannot
// deadlock, and holds them all for the whole decision. It then evaluates the
// requests in order without writing anything, each on the state the ones
// before it would leave (a key named twice is charged twice, as two commands
// in a row would be). Only if every request is admitted and none fails does
// it carry them out (carryOut): it writes each key's final state, which is
// what the requests in a row would have left. Otherwise nothing changes
// anywhere, and the outcomes say so: a request that was denied keeps its
// denial (RetryAfter included); one that would have been admitted reports,
// still Allowed, the state as it stands, as a peek (n = 0) would.
//
// Memory: the scratch state is one groupKey per distinct key, whatever the
// number of requests naming it; no ring is copied.
//
// It is a path of its own, not a lock granularity of decideRun: a run
// commits each decision as it makes it, a group commits nothing until every
// request is admitted, and undoes nothing. What the two share is slot and
// lockAll (decide.go).
func (st *Store) decideGroup(now int64, reqs []algorithms.Request, out []algorithms.Outcome) {
	var (
		idxBuf  [smallGroup]int32
		keyBuf  [smallGroup]groupKey
		lockBuf [smallGroup]uint32
	)
	idx, keys, locks := idxBuf[:0], keyBuf[:0], lockBuf[:0]
	if len(reqs) > smallGroup {
		idx = make([]int32, 0, len(reqs))
		keys, locks = nil, nil
	}
	idx, keys = st.groupKeys(reqs, idx, keys)
	for k := range keys {
		locks = append(locks, keys[k].shard)
	}
	locks = st.lockAll(locks)
	defer st.unlockAll(locks)
	st.decideGroupLocked(now, reqs, out, idx, keys, st.aof.Load())
}

// decideGroupLocked is decideGroup once the group's keys are listed (idx,
// keys from groupKeys); it requires that the shards of all of them are
// locked. What it writes is appended to lg as one frame, unless lg is nil.
func (st *Store) decideGroupLocked(now int64, reqs []algorithms.Request, out []algorithms.Outcome, idx []int32, keys []groupKey, lg *AOF) {
	// Evaluate, writing nothing.
	for k := range keys {
		g := &keys[k]
		g.ref, g.orig = st.shards[g.shard].Find(g.key, now)
		if g.orig.Ext != nil && g.orig.Algo != algorithms.Log {
			g.orig.Ext = slices.Clone(g.orig.Ext) // leases: Take rewrites them in place
		}
		g.cur, g.last = g.orig, -1
		if g.cur.Ext != nil && g.cur.Algo != algorithms.Log {
			g.cur.Ext = slices.Clone(g.cur.Ext)
		}
	}
	ok := true
	for i := range reqs {
		g := &keys[idx[i]]
		if evaluate(now, &reqs[i], g, &out[i]) {
			g.last = int32(i)
		}
		ok = ok && out[i].Err == nil && out[i].Result.Allowed
	}
	if !ok {
		reportUnchanged(now, reqs, out, idx, keys)
		return
	}
	if !st.carryOut(now, reqs, out, keys) {
		clear(out)
		out[0].Err = shard.ErrOOM // the group's reply is this error; nothing changed
		return
	}
	if lg != nil {
		st.logGroup(lg, now, keys)
	}
}

// logGroup appends one frame to lg holding the final state of every key
// the group wrote, read back from the shards: recovery applies the group
// whole or not at all. It requires that the group's shards are locked.
func (st *Store) logGroup(lg *AOF, now int64, keys []groupKey) {
	var buf [512]byte
	items := buf[:0]
	for k := range keys {
		g := &keys[k]
		if g.last < 0 {
			continue
		}
		_, e := st.shards[g.shard].Find(g.key, now)
		if e.Algo == algorithms.None {
			items = appendDeleteItem(items, g.key)
		} else {
			items = appendSetItem(items, g.key, &e)
		}
	}
	if len(items) > 0 {
		lg.appendFrame(now, items)
	}
}

// groupKeys lists the distinct keys of reqs, in the order they first
// appear, into keys, and the index of reqs[i]'s key into idx.
func (st *Store) groupKeys(reqs []algorithms.Request, idx []int32, keys []groupKey) ([]int32, []groupKey) {
	if len(reqs) <= smallGroup {
	next:
		for i := range reqs {
			for k := range keys {
				if bytes.Equal(keys[k].key, reqs[i].Key) {
					idx = append(idx, int32(k))
					continue next
				}
			}
			idx = append(idx, int32(len(keys)))
			_, si := st.slot(reqs[i].Key)
			keys = append(keys, groupKey{key: reqs[i].Key, shard: si})
		}
		return idx, keys
	}
	seen := make(map[string]int32)
	for i := range reqs {
		k, ok := seen[string(reqs[i].Key)]
		if !ok {
			k = int32(len(keys))
			seen[string(reqs[i].Key)] = k
			_, si := st.slot(reqs[i].Key)
			keys = append(keys, groupKey{key: reqs[i].Key, shard: si})
		}
		idx = append(idx, k)
	}
	return idx, keys
}

// evaluate decides req on g, its key as the group's earlier requests leave
// it, into *o, writing nothing to the shard, and reports whether req
// changed g. A log is decided on g's draft; the other algorithms on g.cur,
// whose Ext (leases) is the group's own copy.
func evaluate(now int64, req *algorithms.Request, g *groupKey, o *algorithms.Outcome) bool {
	if req.Limit.Algo != algorithms.Log {
		var next shard.Entry
		if !apply(now, req, &g.cur, o, &next) {
			return false
		}
		g.cur = next
		return true
	}
	if g.cur.Algo != algorithms.None && g.cur.Algo != algorithms.Log && !replaces(req, &g.cur) {
		*o = algorithms.Outcome{Err: ErrWrongType}
		return false
	}
	if !g.drafting {
		g.draft, g.drafting = algorithms.NewLogDraft(logState(&g.cur)), true
	}
	*o = algorithms.Outcome{Result: req.Limit.SlidingLog().Decide(&g.draft, now, req.N)}
	if req.N == 0 || !o.Result.Allowed {
		return false
	}
	g.cur.Algo, g.cur.Expire = algorithms.Log, expireAt(now, o.Result.ResetAfter)
	return true
}

// reportUnchanged rewrites the outcomes of a group that changed nothing:
// requests that would have been admitted report the stored state as a peek
// does. It requires that the group's shards are locked.
func reportUnchanged(now int64, reqs []algorithms.Request, out []algorithms.Outcome, idx []int32, keys []groupKey) {
	for i := range reqs {
		if out[i].Err != nil || !out[i].Result.Allowed || reqs[i].N == 0 {
			continue
		}
		g := &keys[idx[i]]
		peek := reqs[i]
		peek.N = 0
		if peek.Limit.Algo == algorithms.Log {
			out[i].Result = peek.Limit.SlidingLog().Check(logState(&g.orig), now, 0)
			continue
		}
		var o algorithms.Outcome
		var next shard.Entry
		e := g.orig
		if apply(now, &peek, &e, &o, &next); o.Err == nil {
			out[i].Result = o.Result
		}
	}
}

// carryOut writes the final state of every key the admitted group changed,
// all or nothing, and reports false, having changed nothing, when the
// memory limit refuses. First the keys whose record must be made or grow
// (see roomForGroup), which the limit may refuse; then the others, which
// fit where they are. It requires that the group's shards are locked.
func (st *Store) carryOut(now int64, reqs []algorithms.Request, out []algorithms.Outcome, keys []groupKey) bool {
	grow := false
	for k := range keys {
		g := &keys[k]
		if g.last < 0 || !g.cur.Live(now) {
			continue
		}
		if g.drafting {
			g.grow = g.draft.RingLen(reqs[g.last].Limit.Count) > int64(cap(g.cur.Ext))
		} else {
			g.grow = st.shards[g.shard].Need(g.ref, g.key, &g.cur, len(g.cur.Ext)) > 0
		}
		grow = grow || g.grow
	}
	if grow && !st.roomForGroup(now, reqs, out, keys) {
		return false
	}
	for k := range keys {
		g := &keys[k]
		if g.last < 0 || g.done {
			continue
		}
		sh, o := &st.shards[g.shard], &out[g.last]
		if g.drafting {
			writeLog(sh, g.ref, g.key, &g.cur, &g.draft, reqs[g.last].Limit.Count, now, o, nil)
		} else {
			commit(sh, g.ref, g.key, &g.cur, o, now, nil)
		}
	}
	return true
}

// roomForGroup writes the keys whose record must be made or grow (g.grow),
// or, for a log, gives its record the room its ring will need (which
// changes no state), in key order, making room under the memory limit as a
// single decision does. While it does, every key of the group is pinned,
// so that making room for one never evicts another. If the limit refuses
// one, it undoes what it wrote (a new key is removed, a grown record gets
// its old entry back, which never needs more room) and returns false.
func (st *Store) roomForGroup(now int64, reqs []algorithms.Request, out []algorithms.Outcome, keys []groupKey) bool {
	for k := range keys {
		st.shards[keys[k].shard].Pin(keys[k].key)
	}
	failed := -1
	for k := range keys {
		g := &keys[k]
		if !g.grow {
			continue
		}
		sh, o := &st.shards[g.shard], &out[g.last]
		if g.drafting {
			if !reserveLog(sh, &g.ref, g.key, &g.cur, &g.draft, reqs[g.last].Limit.Count, now, o) {
				failed = k
				break
			}
		} else {
			if commit(sh, g.ref, g.key, &g.cur, o, now, nil); o.Err != nil {
				failed = k
				break
			}
			g.done = true
		}
		sh.Pin(g.key) // a new record
	}
	for k := 0; k < failed; k++ {
		g := &keys[k]
		if !g.grow {
			continue
		}
		sh := &st.shards[g.shard]
		switch {
		case g.orig.Algo == algorithms.None:
			sh.Delete(g.key, now)
		case !g.drafting:
			ref, _ := sh.Find(g.key, now)
			e := g.orig
			if err := sh.Commit(ref, g.key, &e, now); err != nil {
				panic("store: restoring a group's key needed room: " + err.Error())
			}
		}
	}
	for k := range keys {
		st.shards[keys[k].shard].Unpin(keys[k].key)
	}
	return failed < 0
}
