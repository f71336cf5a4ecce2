package store

import (
	"encoding/binary"
	"slices"

	"github.com/cespare/xxhash/v2"
	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/compat"
	"github.com/sluice-rl/sluice/shard"
)

// Transactions (MULTI/EXEC): a list of decisions carried out as one unit at
// one instant, under the locks of every key they and the transaction's
// watched keys name, so that no other decision sees a part of it. This is
// the one store call a transaction makes; a log of applied work records
// it as one entry.

// Version returns key's state version at now: 0 when the key is absent (or
// expired), otherwise a 64-bit digest of its stored state. Every write that
// changes the state changes the version (up to a digest collision); a
// decision that writes nothing (a denial, a peek) leaves it. A key that
// expires has version 0 from then on, so a transaction that watched it live
// fails, as Redis's does. A write that leaves the state exactly as it was
// (a refund undoing a take to the nanosecond) leaves the version too: the
// state is then the same. The error is always nil; the signature is the one
// the edge's keyspace shares with the Raft node.
func (st *Store) Version(now int64, key []byte) (uint64, error) {
	sh := st.shardOf(key)
	sh.Lock()
	defer sh.Unlock()
	return versionLocked(sh, key, now), nil
}

// versionLocked is Version; it requires that sh, key's shard, is locked.
func versionLocked(sh *shard.Shard, key []byte, now int64) uint64 {
	_, e := sh.Find(key, now)
	if !e.Live(now) {
		return 0
	}
	var buf [8 * 5]byte
	b := append(buf[:0], byte(e.Algo))
	b = binary.LittleEndian.AppendUint64(b, uint64(e.Expire))
	for _, w := range e.State {
		b = binary.LittleEndian.AppendUint64(b, uint64(w))
	}
	d := xxhash.New()
	d.Write(b)
	for _, w := range e.Ext {
		var wb [8]byte
		binary.LittleEndian.PutUint64(wb[:], uint64(w))
		d.Write(wb[:])
	}
	if v := d.Sum64(); v != 0 {
		return v
	}
	return 1
}

// Transact carries out reqs and ops as one transaction at now and writes
// each request's outcome to the same index of out, which must be at least
// as long as reqs, and each op's reply to its Reply; it returns false,
// changing nothing and writing no outcome, when a watched key's version is
// no longer the one in watches. The error is always nil; the signature is
// the one the edge's keyspace shares with the Raft node.
//
// It locks the shards of every key in reqs, ops and watches at once, in
// ascending order (as RL.ALL does, so that transactions and groups racing
// over the same keys cannot deadlock), and holds them until the last
// command is carried out: another caller sees the transaction all or none.
// Within it, commands are carried out in order (an op before the request
// at its Before index), each on the state the ones before it left;
// consecutive requests with one nonzero Group are one all-or-nothing group,
// as in Decide. A command that fails (WRONGTYPE, OOM) fails alone, as a
// command inside Redis's EXEC does; a script that fails for want of memory
// leaves nothing written (execLocked). Everything the transaction wrote is
// appended to the append-only log as one frame.
func (st *Store) Transact(now int64, watches []algorithms.Watch, reqs []algorithms.Request, out []algorithms.Outcome, ops []compat.TxOp) (bool, error) {
	set := make([]uint32, 0, len(reqs)+len(watches)+len(ops))
	hs := make([]uint64, len(reqs))
	for i := range reqs {
		hs[i] = xxhash.Sum64(reqs[i].Key)
		set = append(set, uint32(hs[i]&st.mask))
	}
	for i := range ops {
		for _, k := range ops[i].Keys {
			set = append(set, uint32(xxhash.Sum64(k)&st.mask))
		}
	}
	for i := range watches {
		set = append(set, uint32(xxhash.Sum64(watches[i].Key)&st.mask))
	}
	// The overrides the requests name are read under the transaction's
	// locks: an RL.CHECK in it is decided with the override in force when
	// the transaction is, whatever an RL.OVERRIDE SET racing it does.
	overrides := st.hasOverrides.Load() && namesOverride(reqs)
	if overrides {
		for i := range reqs {
			if k := reqs[i].Override; k != nil {
				set = append(set, uint32(xxhash.Sum64(k)&st.mask))
			}
		}
	}
	locks := st.lockAll(set)
	defer st.unlockAll(locks) // open-coded; no lock survives a panic
	for i := range watches {
		w := &watches[i]
		if versionLocked(st.shardOf(w.Key), w.Key, now) != w.Version {
			return false, nil
		}
	}
	var limited []int32
	if overrides {
		reqs = slices.Clone(reqs)
		limited = st.resolveLocked(now, reqs)
		defer func() { markLimited(out, limited) }()
	}
	var c compat.Call
	next := 0
	for oi := 0; oi <= len(ops); oi++ {
		end := len(reqs)
		if oi < len(ops) {
			end = min(max(ops[oi].Before, next), len(reqs))
		}
		st.decideRangeLocked(now, reqs[next:end], hs[next:end], out[next:end])
		next = end
		if oi < len(ops) {
			st.txOpLocked(now, &ops[oi], &c)
		}
	}
	if lg := st.aof.Load(); lg != nil {
		st.logTransaction(lg, now, reqs, ops)
	}
	return true, nil
}

// decideRangeLocked carries out reqs, whose keys' hashes are hs, in order
// into out, a run of one nonzero Group as one group. It requires that the
// shards of their keys are locked.
func (st *Store) decideRangeLocked(now int64, reqs []algorithms.Request, hs []uint64, out []algorithms.Outcome) {
	for i := 0; i < len(reqs); {
		if g := reqs[i].Group; g != 0 {
			j := i + 1
			for j < len(reqs) && reqs[j].Group == g {
				j++
			}
			idx, keys := st.groupKeys(reqs[i:j], make([]int32, 0, j-i), nil)
			st.decideGroupLocked(now, reqs[i:j], out[i:j], idx, keys, nil)
			i = j
			continue
		}
		decideLocked(&st.shards[hs[i]&st.mask], now, &reqs[i], hs[i], &out[i], nil)
		i++
	}
}

// txOpLocked carries out one op of a transaction into its Reply, using c
// for a script's or a string command's run. It requires that the shards of
// its keys are locked.
func (st *Store) txOpLocked(now int64, op *compat.TxOp, c *compat.Call) {
	op.Reply = compat.Reply{}
	if !op.Op.Cmd.KeySpace() {
		c.Argv = op.Argv
		st.execLocked(now, op.Op, op.Keys, nil, c, nil, false)
		op.Reply = c.Reply
		c.Argv = nil
		return
	}
	var n int64
	switch op.Op.Cmd {
	case compat.CmdDel:
		for _, k := range op.Keys {
			if st.shardOf(k).Delete(k, now) {
				n++
			}
		}
	case compat.CmdExists:
		for _, k := range op.Keys {
			if _, e := st.shardOf(k).Find(k, now); e.Algo != algorithms.None {
				n++
			}
		}
	case compat.CmdType, compat.CmdTTL:
		if len(op.Keys) != 1 {
			break
		}
		_, e := st.shardOf(op.Keys[0]).Find(op.Keys[0], now)
		switch {
		case op.Op.Cmd == compat.CmdType:
			n = int64(e.Algo)
		case e.Algo == algorithms.None:
			n = -1
		case e.Algo == algorithms.String, e.Algo == algorithms.List:
			n = stringTTL(&e, now)
		default:
			n = e.Expire - now
		}
	}
	op.Reply.Type, op.Reply.Int = compat.Integer, n
}

// logTransaction appends one frame to lg holding the final state of every
// key the transaction may have written (those of requests with n != 0 and
// of ops that write), read back from the shards: recovery applies the
// transaction whole or not at all. It requires that the transaction's
// shards are locked.
func (st *Store) logTransaction(lg *AOF, now int64, reqs []algorithms.Request, ops []compat.TxOp) {
	var items []byte
	seen := make(map[string]bool, len(reqs))
	add := func(key []byte) {
		if seen[string(key)] {
			return
		}
		seen[string(key)] = true
		_, e := st.shardOf(key).Find(key, now)
		if e.Algo == algorithms.None {
			items = appendDeleteItem(items, key)
		} else {
			items = appendSetItem(items, key, &e)
		}
	}
	for i := range reqs {
		if reqs[i].N != 0 {
			add(reqs[i].Key)
		}
	}
	for i := range ops {
		if ops[i].Op.Cmd.Writes() {
			for _, k := range ops[i].Keys {
				add(k)
			}
		}
	}
	if len(items) > 0 {
		lg.appendFrame(now, items)
	}
}
