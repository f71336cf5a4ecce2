package store

import (
	"github.com/cespare/xxhash/v2"
	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/shard"
)

// Overrides (RL.OVERRIDE) are entries of their own kind,
// algorithms.Override, under keys the edge derives (ovr:<policy>:<subject>):
//
//	State = the packed words after the expiry (algorithms/override.go):
//	        kind|algo|count, and the period (0 for UNLIMITED and DENY)
//	Expire = the first packed word, the expiry (math.MaxInt64: never; the
//	        record then stores no expiry word)
//	Depleted = true: an override is never evicted (forgetting one would
//	        hand a denied subject its policy's limit)
//
// A record is 16 bytes for UNLIMITED and DENY and 24 for a limit, 8 more
// with EXPIRE, plus the key padded to a word, plus the index's slot:
// millions fit, and they snapshot, log, expire, replicate and SCAN as every
// entry does.
//
// A request that names an override key (algorithms.Request.Override: an
// RL.CHECK) is decided with the override when one is live at the decision:
// its limit replaces the request's, UNLIMITED admits without counting and
// DENY refuses, all without touching the subject's state. The store looks
// overrides up only once it has held one (hasOverrides), so a server
// without overrides pays one atomic load per batch.

// SetOverride stores the override words w under key at now (w[0] is the
// expiry, math.MaxInt64 for none). A key holding another kind of state is
// refused with WRONGTYPE; a new key may be refused for want of memory
// (OOM). It returns whether the key held no live override before.
func (st *Store) SetOverride(now int64, key []byte, w [3]int64) (bool, error) {
	if kind, _ := algorithms.OverrideOf(w); kind == algorithms.OverrideNone || w[0] <= now {
		return false, errBadOverride
	}
	st.hasOverrides.Store(true)
	h := xxhash.Sum64(key)
	sh := &st.shards[h&st.mask]
	sh.Lock()
	defer sh.Unlock()
	var cur shard.Entry
	ref := sh.FindInto(key, h, now, &cur)
	if cur.Algo != algorithms.None && cur.Algo != algorithms.Override {
		return false, ErrWrongType
	}
	e := shard.Entry{Algo: algorithms.Override, Expire: w[0], State: [3]int64{w[1], w[2]}, Depleted: true}
	if err := sh.Commit(ref, key, &e, now); err != nil {
		return false, err
	}
	if lg := st.aof.Load(); lg != nil {
		lg.appendSet(now, key, &e)
	}
	return cur.Algo == algorithms.None, nil
}

// MayHoldOverrides reports whether the store may hold an override: false
// until it first holds one (RL.OVERRIDE, a snapshot, the log), never false
// again. A false answer means that no decision made from then on, until an
// override is stored, has an override to find: a caller that builds its
// requests and then decides them at once may leave their override keys
// out (algorithms.Request.Override), as Decide itself looks none up then.
// Any goroutine.
func (st *Store) MayHoldOverrides() bool { return st.hasOverrides.Load() }

// noteEntry records what a restored entry means for the decisions: an
// override makes Decide look overrides up.
func (st *Store) noteEntry(e *shard.Entry) {
	if e.Algo == algorithms.Override {
		st.hasOverrides.Store(true)
	}
}

// overrideLocked returns the override live at now under key (hash h),
// whose shard must be locked: its kind (OverrideNone if there is none) and
// limit.
func (st *Store) overrideLocked(key []byte, h uint64, now int64) (algorithms.OverrideKind, algorithms.Limit) {
	w, _ := st.wordsLocked(key, h, now) // no override: words OverrideOf reads as none
	return algorithms.OverrideOf(w)
}

// wordsLocked returns the packed words of the override live at now under
// key (hash h), whose shard must be locked; ok is false if there is none.
func (st *Store) wordsLocked(key []byte, h uint64, now int64) (w [3]int64, ok bool) {
	var e shard.Entry
	st.shards[h&st.mask].FindInto(key, h, now, &e)
	if e.Algo != algorithms.Override {
		return w, false
	}
	return overrideWords(&e), true
}

// overrideWords returns the packed words of the override entry e.
func overrideWords(e *shard.Entry) [3]int64 { return [3]int64{e.Expire, e.State[0], e.State[1]} }

// namesOverride reports whether any of reqs names an override key.
func namesOverride(reqs []algorithms.Request) bool {
	for i := range reqs {
		if reqs[i].Override != nil {
			return true
		}
	}
	return false
}

// overridePseudo is the Limit.Algo of a request that an UNLIMITED or DENY
// override decided before it reached apply: Count is the request's own
// count (the reply's limit), Period the override's kind. apply answers it
// without reading or writing the subject's state.
const overridePseudo = algorithms.Override

// resolve rewrites *req for the override kind and limit found for it, and
// returns whether it changed anything.
func resolve(req *algorithms.Request, kind algorithms.OverrideKind, l algorithms.Limit) bool {
	switch kind {
	case algorithms.OverrideLimit:
		req.Limit = l
	case algorithms.OverrideUnlimited, algorithms.OverrideDeny:
		req.Limit = algorithms.Limit{Algo: overridePseudo, Count: req.Limit.Count, Period: int64(kind)}
	default:
		return false
	}
	return true
}

// pseudoOutcome is apply's answer to a request resolve turned into an
// UNLIMITED or DENY decision.
func pseudoOutcome(req *algorithms.Request, o *algorithms.Outcome) {
	l := algorithms.Limit{Count: req.Limit.Count}
	if algorithms.OverrideKind(req.Limit.Period) == algorithms.OverrideUnlimited {
		*o = algorithms.Outcome{Result: algorithms.Unlimited(l)}
		return
	}
	*o = algorithms.Outcome{Result: algorithms.Denied(l)}
}

// decideOverrides is Decide for a batch that names override keys in a
// store that holds overrides: the named overrides are looked up (resolveRun)
// and the batch is decided with the requests rewritten (a copy: reqs stays
// as the caller made it). Outcomes decided by an override's limit say so
// (Result.Override).
func (st *Store) decideOverrides(now int64, reqs []algorithms.Request, out []algorithms.Outcome, together bool) {
	var small [runLen]algorithms.Request
	var cp []algorithms.Request
	if len(reqs) <= runLen {
		cp = small[:len(reqs)]
	} else {
		cp = make([]algorithms.Request, len(reqs))
	}
	copy(cp, reqs)
	var few [runLen]int32
	limited := few[:0]
	for i := 0; i < len(cp); i += runLen {
		limited = st.resolveRun(now, cp[i:min(i+runLen, len(cp))], int32(i), limited)
	}
	st.decideAll(now, cp, out, together)
	markLimited(out, limited)
}

// markLimited says on the outcomes at indexes limited, those of requests
// an override's limit decided, that it did (apply cannot tell).
func markLimited(out []algorithms.Outcome, limited []int32) {
	for _, i := range limited {
		if out[i].Err == nil {
			out[i].Result.Override = algorithms.OverrideLimit
		}
	}
}

// resolveRun rewrites the requests of run (at most runLen, the first at
// index base of the batch) that name a live override, and appends to
// limited the batch indexes of those an override's limit decides. Each
// shard the override keys fall in is locked once, for its lookups, which
// are prefetched together so that their cache misses overlap (as
// decideShard does for the decisions); no two shards are held at once.
func (st *Store) resolveRun(now int64, run []algorithms.Request, base int32, limited []int32) []int32 {
	var hs [runLen]uint64
	var sis [runLen]uint32
	var idx [runLen]uint8
	n := 0
	for i := range run {
		if k := run[i].Override; k != nil {
			h := xxhash.Sum64(k)
			hs[n], sis[n], idx[n] = h, uint32(h&st.mask), uint8(i)
			n++
		}
	}
	var done [runLen]bool
	for a := 0; a < n; a++ {
		if done[a] {
			continue
		}
		sh := &st.shards[sis[a]]
		var shs [runLen]*shard.Shard
		var ghs [runLen]uint64
		var who [runLen]uint8
		m := 0
		for b := a; b < n; b++ {
			if !done[b] && sis[b] == sis[a] {
				done[b] = true
				shs[m], ghs[m], who[m] = sh, hs[b], idx[b]
				m++
			}
		}
		sh.Lock()
		if m > 1 {
			shard.Prefetch(shs[:m], ghs[:m])
		}
		for j := range m {
			req := &run[who[j]]
			kind, l := st.overrideLocked(req.Override, ghs[j], now)
			if resolve(req, kind, l) && kind == algorithms.OverrideLimit {
				limited = append(limited, base+int32(who[j]))
			}
		}
		sh.Unlock()
	}
	return limited
}

// resolveLocked rewrites, in place, the requests of reqs that name a live
// override, for a caller that holds the shards of their override keys
// (Transact), and returns the indexes of those decided by an override's
// limit.
func (st *Store) resolveLocked(now int64, reqs []algorithms.Request) []int32 {
	var limited []int32
	for i := range reqs {
		if reqs[i].Override == nil {
			continue
		}
		k := reqs[i].Override
		kind, l := st.overrideLocked(k, xxhash.Sum64(k), now)
		if resolve(&reqs[i], kind, l) && kind == algorithms.OverrideLimit {
			limited = append(limited, int32(i))
		}
	}
	return limited
}

// replaces reports whether req, meeting an entry of another kind, starts
// the key afresh instead of failing with WRONGTYPE: a policy's request
// (one that names an override key) meeting a limiter's state of another
// algorithm, left there by an override of another algorithm, or by the
// policy before its override. It clears *e when so.
func replaces(req *algorithms.Request, e *shard.Entry) bool {
	if req.Override == nil {
		return false
	}
	switch e.Algo {
	case algorithms.Token, algorithms.Leaky, algorithms.Fixed, algorithms.Sliding, algorithms.Log:
		*e = shard.Entry{}
		return true
	}
	return false
}

// LocalOverride returns the words of the override live under key at now;
// ok is false if there is none.
func (st *Store) LocalOverride(now int64, key []byte) (w [3]int64, ok bool) {
	h := xxhash.Sum64(key)
	sh := &st.shards[h&st.mask]
	sh.Lock()
	defer sh.Unlock()
	return st.wordsLocked(key, h, now)
}
