package store

import (
	"bytes"
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
//	Ext = compat.Value.PackExt(): the bytes of a string past its 22nd
//	Expire = compat.Key.Expire (compat.NoExpire: no TTL)
//	Depleted = true: a limiter's counter is never evicted (forgetting it
//	would hand out a fresh window)
//
// so they take the same room as a token bucket's, snapshot and expire like
// every entry, and TYPE, EXISTS, DEL and SCAN see them as any key. A list
// (Python limits' moving window) is an entry of kind algorithms.List: State
// compat.ListValue().Pack(), Ext the elements (compat.Key.List), Depleted.

// Exec carries out op on keys at now, atomically across them, and leaves
// the reply in c.Reply. c.Argv must hold the arguments after the keys; Exec
// sets c.Now and c.Keys (reusing its room). It locks every shard the keys
// fall in, in ascending order as RL.ALL does, and carries op out as
// execLocked does. What it stored is appended to the append-only log, if
// any, as one frame.
func (st *Store) Exec(now int64, op compat.Op, keys [][]byte, c *compat.Call) {
	var hs [execFew]uint64
	var small [execFew]uint32
	set := small[:0]
	for i, k := range keys {
		h := xxhash.Sum64(k)
		if i < execFew {
			hs[i] = h
		}
		set = append(set, uint32(h&st.mask))
	}
	locks := st.lockAll(set)
	defer st.unlockAll(locks) // open-coded; no lock survives a panic
	st.prefetch(hs[:min(len(keys), execFew)])
	lg := st.aof.Load()
	var buf [256]byte
	items := st.execLocked(now, op, keys, hs[:min(len(keys), execFew)], c, buf[:0], lg != nil)
	if lg != nil && len(items) > 0 {
		lg.appendFrame(now, items)
	}
}

// ExecBatch carries out ops in order at now, each as Exec would, and
// leaves each reply in its Reply, using c as scratch: a pipeline's script
// calls and string commands in one call. It locks the shards of every key
// of every op at once, in ascending order as RL.ALL does, and holds them
// until the last op is carried out; each op is all or nothing on its own
// (execLocked), and one that fails leaves the others. What they stored is
// appended to the append-only log, if any, as one frame. It allocates
// nothing for a batch naming at most 64 keys. Before the first op, the
// index slots and records of those keys are loaded together (prefetch):
// with many keys, waiting for each lookup's cache misses in turn was most
// of a batch's time.
func (st *Store) ExecBatch(now int64, ops []compat.TxOp, c *compat.Call) {
	// Each key is hashed once: the hashes of a batch's first 64 keys are
	// kept for execLocked.
	var small [batchFew]uint32
	var hashes [batchFew]uint64
	set := small[:0]
	for i := range ops {
		for _, k := range ops[i].Keys {
			h := xxhash.Sum64(k)
			if len(set) < batchFew {
				hashes[len(set)] = h
			}
			set = append(set, uint32(h&st.mask))
		}
	}
	nkeys := len(set)
	locks := st.lockAll(set)
	defer st.unlockAll(locks) // open-coded; no lock survives a panic
	st.prefetch(hashes[:min(nkeys, batchFew)])
	lg := st.aof.Load()
	var buf [1024]byte
	items := buf[:0]
	next := 0 // the index of ops[i]'s first key among the batch's keys
	for i := range ops {
		op := &ops[i]
		c.Argv = op.Argv
		hs := hashes[min(next, batchFew):min(next+len(op.Keys), batchFew)]
		next += len(op.Keys)
		items = st.execLocked(now, op.Op, op.Keys, hs, c, items, lg != nil)
		op.Reply = c.Reply
	}
	c.Argv = nil
	if lg != nil && len(items) > 0 {
		lg.appendFrame(now, items)
	}
}

// prefetch loads the index slots and records of the keys whose hashes are
// hs, shard.PrefetchMax at a time, so that the cache misses of a batch's
// lookups overlap instead of coming one after another. It requires that
// the keys' shards are locked.
func (st *Store) prefetch(hs []uint64) {
	var shs [shard.PrefetchMax]*shard.Shard
	for k0 := 0; k0 < len(hs); k0 += shard.PrefetchMax {
		part := hs[k0:min(k0+shard.PrefetchMax, len(hs))]
		for k, h := range part {
			shs[k] = &st.shards[h&st.mask]
		}
		shard.Prefetch(shs[:len(part)], part)
	}
}

// execFew is how many keys' hashes, places and old states execLocked keeps
// on the stack (every supported script names one or two keys).
const execFew = 4

// batchFew is how many keys' hashes ExecBatch keeps on the stack.
const batchFew = 64

// execLocked carries out op on keys at now and leaves the reply in
// c.Reply: it loads each key (a key that holds a limiter's state is
// compat.Foreign to the script), runs op and stores the keys it wrote, in
// order: the last write of a key named twice wins. hs holds the hashes of
// the first keys, if the caller has them. It is all or nothing: when a new
// key (or a larger record) is refused for want of memory, the keys written
// before it get their old states back, the reply is the OOM error, and
// nothing is stored. With logged, it appends what it stored to items as
// log items and returns them. It requires that the shards of every key are
// locked.
func (st *Store) execLocked(now int64, op compat.Op, keys [][]byte, hs []uint64, c *compat.Call, items []byte, logged bool) []byte {
	start := len(items)
	c.Now = now
	c.Keys = slices.Grow(c.Keys[:0], len(keys))[:len(keys)]
	// Where Find found the first keys and what they held, kept for the
	// writes and for undoing them: a Ref stays valid under the lock, and
	// Commit looks the key up again if the shard changed since.
	var refs [execFew]shard.Ref
	var olds [execFew]shard.Entry
	var ext [(compat.MaxBytes + 7) / 8]int64
	var oldExt [execFew][(compat.MaxBytes + 7) / 8]int64
	var hashes [execFew]uint64
	for i, k := range keys {
		var e shard.Entry
		if i < execFew {
			var h uint64
			if i < len(hs) {
				h = hs[i]
			} else {
				h = xxhash.Sum64(k)
			}
			hashes[i] = h
			refs[i] = st.shards[h&st.mask].FindInto(k, h, now, &e)
			olds[i] = e
			if e.Algo == algorithms.String {
				// A long string's words alias the record a write may reuse:
				// undoSets needs its own copy.
				olds[i].Ext = oldExt[i][:copy(oldExt[i][:], e.Ext)]
			}
		} else {
			_, e = st.shardOf(k).Find(k, now)
		}
		c.Keys[i] = loadKey(&e)
	}
	compat.Exec(op, c)
	// The sets first, then the deletes: a delete never fails, so when a set
	// is refused nothing has been deleted yet, and the sets before it are
	// undone.
	for i, k := range keys {
		ck := &c.Keys[i]
		if !setsKey(ck, now) {
			continue
		}
		var sh *shard.Shard
		var ref shard.Ref
		if i < execFew {
			sh, ref = &st.shards[hashes[i]&st.mask], refs[i]
		} else {
			sh = st.shardOf(k)
			ref, _ = sh.Find(k, now)
		}
		e := shard.Entry{Algo: algorithms.String, Expire: ck.Expire, State: ck.Value.Pack(), Depleted: true}
		if ck.Value.Kind() == compat.List {
			e.Algo, e.Ext = algorithms.List, ck.List
		} else {
			e.Ext = ck.Value.PackExt(ext[:0]) // a string longer than 22 bytes
		}
		if err := sh.Commit(ref, k, &e, now); err != nil {
			st.undoSets(now, keys[:i], c.Keys[:i], olds[:min(i, execFew)])
			c.Reply = compat.ErrorReply(err)
			return items[:start]
		}
		if logged {
			items = appendSetItem(items, k, &e)
		}
	}
	for i, k := range keys {
		if !deletesKey(&c.Keys[i], now) || setLater(keys, c.Keys, i, now) {
			continue
		}
		if st.shardOf(k).Delete(k, now) && logged {
			items = appendDeleteItem(items, k)
		}
	}
	return items
}

// undoSets gives the keys that execLocked set back the states olds[i]
// they held (olds covers the first keys; a later one is absent, its old
// state not kept, only when a script names more than execFew keys, which
// no supported script does). An old list's elements alias the record its
// replacement may have overwritten; no script that writes a list names a
// second key, so a list is never undone. An old state takes no more room than the one
// that replaced it, or none, so the undo never fails. It requires that the
// keys' shards are locked.
func (st *Store) undoSets(now int64, keys [][]byte, written []compat.Key, olds []shard.Entry) {
	for i := len(keys) - 1; i >= 0; i-- {
		if !setsKey(&written[i], now) {
			continue
		}
		sh := st.shardOf(keys[i])
		if i >= len(olds) || olds[i].Algo == algorithms.None {
			sh.Delete(keys[i], now)
			continue
		}
		ref, _ := sh.Find(keys[i], now)
		old := olds[i]
		_ = sh.Commit(ref, keys[i], &old, now)
	}
}

// setsKey reports whether a run left ck to be stored, deletesKey whether
// it left ck to be removed. A limiter's state (Foreign) is never changed by
// a script.
func setsKey(ck *compat.Key, now int64) bool {
	return ck.Written && ck.Value.Kind() != compat.Foreign && ck.Value.Kind() != compat.Absent && ck.Expire > now
}

func deletesKey(ck *compat.Key, now int64) bool {
	return ck.Written && ck.Value.Kind() != compat.Foreign && (ck.Value.Kind() == compat.Absent || ck.Expire <= now)
}

// setLater reports whether a position after i names keys[i] again and sets
// it: the later write wins, so the delete at i is not carried out.
func setLater(keys [][]byte, written []compat.Key, i int, now int64) bool {
	for j := i + 1; j < len(keys); j++ {
		if setsKey(&written[j], now) && bytes.Equal(keys[j], keys[i]) {
			return true
		}
	}
	return false
}

// loadKey is the state a script sees for entry e: its string, another
// kind of state (Foreign, with the entry's expiry), or nothing.
func loadKey(e *shard.Entry) compat.Key {
	switch e.Algo {
	case algorithms.None:
		return compat.Key{}
	case algorithms.String:
		v, ok := compat.UnpackExt(e.State, e.Ext)
		if !ok || v.Kind() == compat.List {
			v = compat.ForeignValue()
		}
		return compat.Key{Value: v, Expire: e.Expire}
	case algorithms.List:
		return compat.Key{Value: compat.ListValue(), List: e.Ext, Expire: e.Expire}
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
