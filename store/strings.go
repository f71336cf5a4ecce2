package store

import (
	"slices"

	"github.com/cespare/xxhash/v2"
	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/compat"
	"github.com/sluice-rl/sluice/shard"
)

// The keys of the known limiter scripts (package compat) and of the plain
// string commands are entries of their own kind, algorithms.String:
//
//	State = compat.Value.Pack() (a counter takes two words)
//	Expire = compat.Key.Expire (compat.NoExpire: no TTL)
//	Depleted = true: a limiter's counter is never evicted (forgetting it
//	would hand out a fresh window)
//
// so they take the same room as a token bucket's, snapshot and expire like
// every entry, and TYPE, EXISTS, DEL and SCAN see them as any key.

// Exec carries out op on keys at now, atomically across them, and leaves
// the reply in c.Reply. c.Argv must hold the arguments after the keys; Exec
// sets c.Now and c.Keys (reusing its room). It locks every shard the keys
// fall in, in ascending order as RL.ALL does, loads each key (a key that
// holds a limiter's state is compat.Foreign to the script), runs op and
// stores the keys it wrote, in order: the last write of a key named twice
// wins. A new key refused for want of memory turns the reply into the OOM
// error; a script's writes before it stay, as a Redis script's do. What it
// stored is appended to the append-only log, if any, as one frame.
func (st *Store) Exec(now int64, op compat.Op, keys [][]byte, c *compat.Call) {
	c.Now = now
	c.Keys = slices.Grow(c.Keys[:0], len(keys))[:len(keys)]
	// The keys' hashes and where Find found them, kept for the writes when
	// the script names few keys (every supported script names one or two):
	// a Ref stays valid under the lock, and Commit looks the key up again
	// if the shard changed since.
	const few = 4
	var hs [few]uint64
	var refs [few]shard.Ref
	var small [few]uint32
	set := small[:0]
	for i, k := range keys {
		h := xxhash.Sum64(k)
		if i < few {
			hs[i] = h
		}
		set = append(set, uint32(h&st.mask))
	}
	locks := st.lockAll(set)
	defer st.unlockAll(locks) // open-coded; no lock survives a panic
	for i, k := range keys {
		var e shard.Entry
		if i < few {
			refs[i] = st.shards[hs[i]&st.mask].FindInto(k, hs[i], now, &e)
		} else {
			_, e = st.shardOf(k).Find(k, now)
		}
		c.Keys[i] = loadKey(&e)
	}
	compat.Exec(op, c)
	// What the run stored goes to the append-only log as one frame (the
	// keys' final states), so that recovery applies all of it or none.
	lg := st.aof.Load()
	var buf [256]byte
	items := buf[:0]
	defer func() {
		if lg != nil && len(items) > 0 {
			lg.appendFrame(now, items)
		}
	}()
	for i, k := range keys {
		ck := &c.Keys[i]
		if !ck.Written || ck.Value.Kind() == compat.Foreign {
			continue // a limiter's state is never changed by a script
		}
		sh := st.shardOf(k)
		if ck.Value.Kind() == compat.Absent || ck.Expire <= now {
			if sh.Delete(k, now) && lg != nil {
				items = appendDeleteItem(items, k)
			}
			continue
		}
		var ref shard.Ref
		if i < few {
			ref = refs[i]
		} else {
			ref, _ = sh.Find(k, now)
		}
		e := shard.Entry{Algo: algorithms.String, Expire: ck.Expire, State: ck.Value.Pack(), Depleted: true}
		if err := sh.Commit(ref, k, &e, now); err != nil {
			c.Reply = compat.ErrorReply(err)
			return
		}
		if lg != nil {
			items = appendSetItem(items, k, &e)
		}
	}
}

// loadKey is the state a script sees for entry e: its string, another
// kind of state (Foreign, with the entry's expiry), or nothing.
func loadKey(e *shard.Entry) compat.Key {
	switch e.Algo {
	case algorithms.None:
		return compat.Key{}
	case algorithms.String:
		v, ok := compat.Unpack(e.State)
		if !ok {
			v = compat.ForeignValue()
		}
		return compat.Key{Value: v, Expire: e.Expire}
	}
	return compat.Key{Value: compat.ForeignValue(), Expire: e.Expire}
}

// stringTTL is TTL's answer for a String entry: compat.NoTTL if it has no
// TTL, else the time left counted in Redis's whole milliseconds (the key
// lives through its last millisecond), so that rounding it up gives the
// PTTL Redis gives.
func stringTTL(e *shard.Entry, now int64) int64 {
	k := compat.Key{Value: compat.IntValue(0), Expire: e.Expire}
	ms := k.PTTL(now)
	if ms < 0 {
		return NoTTL
	}
	return ms * 1_000_000
}

// NoTTL is TTL's answer for a key that exists and has no TTL (a string
// written without one).
const NoTTL = int64(1<<63 - 1)
