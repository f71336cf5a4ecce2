package cluster

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/sluice-rl/sluice/keyslot"
	"github.com/sluice-rl/sluice/policy"
)

// A data group of a sharded cluster fences its own log: it serves the
// slots its latest own entry names (opOwn), and its state machine refuses,
// at apply time, every operation on a key of another slot. Whatever a
// node's view of the meta group's slot table (meta.go), a decision is
// applied only by the group whose own log says it owns the key's slot at
// that index, so correctness never rests on a stale view of the table
// (docs/cluster.md, "Who owns a slot"). A group that is not sharded has no
// fence and serves every slot.

// notOwnedError is the refusal of an operation on a key of slot, which
// the group does not own at that log index: nothing was applied. The node
// turns it into MOVED when the meta group names another owner.
type notOwnedError int

func (e notOwnedError) Error() string {
	return "TRYAGAIN slot " + strconv.Itoa(int(e)) + " is not served by this group at the moment; nothing was applied"
}

// fenceKey returns the refusal of an operation on key, or nil if this
// group owns key's slot (or is not sharded). Raft's FSM goroutine only.
func (f *stateMachine) fenceKey(key []byte) error {
	if f.fence == nil {
		return nil
	}
	if slot := policy.StoredSlot(key); !f.fence.has(slot) {
		return notOwnedError(slot)
	}
	return nil
}

// fenceKeys is fenceKey for every key of keys.
func (f *stateMachine) fenceKeys(keys [][]byte) error {
	if f.fence == nil {
		return nil
	}
	for _, k := range keys {
		if err := f.fenceKey(k); err != nil {
			return err
		}
	}
	return nil
}

// fenceOp returns the refusal of an op that is not a decision or a
// transaction (those are fenced where they run), or nil.
func (f *stateMachine) fenceOp(o *op) error {
	if f.fence == nil {
		return nil
	}
	switch o.code {
	case opDelete, opExists, opType, opTTL, opInfo, opVersion, opExec:
		return f.fenceKeys(o.keys)
	case opOverride:
		if len(o.argv) > 0 {
			return f.fenceKey(o.argv[0])
		}
	}
	return nil
}

// fenceTx returns the refusal of the transaction whose tx op is ops[i],
// with its commands ops[i+1:j], or nil.
func (f *stateMachine) fenceTx(ops []op, i, j int) error {
	if f.fence == nil {
		return nil
	}
	for _, w := range ops[i].watches {
		if err := f.fenceKey(w.Key); err != nil {
			return err
		}
	}
	for k := i + 1; k < j; k++ {
		if ops[k].code == opDecide {
			if err := f.fenceKey(ops[k].req.Key); err != nil {
				return err
			}
		} else if err := f.fenceKeys(ops[k].keys); err != nil {
			return err
		}
	}
	return nil
}

// applyOwn sets the group's slots from an own op of a later or equal
// epoch; an older one changes nothing. Slots a migration step has touched
// (reshard.go) keep the state that step left: own entries only give a
// new cluster's slots their first owner. n is 1 if it was applied.
func (f *stateMachine) applyOwn(o *op, r *result) {
	if f.fence == nil || o.epoch < f.fenceEpoch {
		return
	}
	f.mu.Lock()
	var next slotSet
	next.setRanges(o.ranges)
	for s := range f.slots {
		if f.slots[s].epoch > 0 {
			next[s>>6] = next[s>>6]&^(1<<(s&63)) | f.fence[s>>6]&(1<<(s&63))
		}
	}
	*f.fence = next
	f.fenceEpoch = o.epoch
	f.mu.Unlock()
	r.n = 1
}

// serves reports whether this group's log serves slot (a sharded group's
// fence owns it).
func (f *stateMachine) serves(slot int) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.fence != nil && slot >= 0 && slot < keyslot.Slots && f.fence.has(slot)
}

// Owned returns the slots this data group's log gives it and the epoch
// of that entry; ok is false for a group that is not sharded.
func (f *stateMachine) owned() (rs []slotRange, epoch uint64, ok bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.fence == nil {
		return nil, 0, false
	}
	return f.fence.ranges(), f.fenceEpoch, true
}

// appendShardState appends the snapshot's shard section (fsm.go): the
// fence as an own op and the slots' migration state as a fence op, or the
// meta state as its ops. Under f.mu.
func (f *stateMachine) appendShardState(b []byte) []byte {
	var ops []op
	if f.fence != nil {
		ops = append(ops, op{code: opOwn, epoch: f.fenceEpoch, ranges: f.fence.ranges()})
		if runs := f.migrationRuns(); len(runs) > 0 {
			ops = append(ops, op{code: opFence, fence: fenceState, runs: runs})
		}
	}
	if f.meta != nil {
		ops = append(ops, f.meta.ops()...)
	}
	b = binary.AppendUvarint(b, uint64(len(ops)))
	for i := range ops {
		b = appendBytes(b, appendOp(nil, &ops[i]))
	}
	return b
}

// readShardState reads a snapshot's shard section: own, slots and group
// ops, and from version 5 migration records and fence state ops.
func readShardState(br *bufio.Reader, version byte) ([]op, error) {
	n, err := binary.ReadUvarint(br)
	if err != nil || n > 1<<16 {
		return nil, fmt.Errorf("cluster: snapshot shard state: %v", err)
	}
	ops := make([]op, 0, n)
	for i := uint64(0); i < n; i++ {
		raw, err := readBytes(br)
		if err != nil {
			return nil, fmt.Errorf("cluster: snapshot shard state: %w", err)
		}
		d := decoder{b: raw}
		o := d.op(0)
		known := o.code == opOwn || o.code == opSlots || o.code == opGroup ||
			version >= 5 && (o.code == opMigration || o.code == opFence && o.fence == fenceState)
		if d.err != nil || len(d.b) != 0 || !known {
			return nil, fmt.Errorf("cluster: snapshot shard state: %w", errCorrupt)
		}
		ops = append(ops, o)
	}
	return ops, nil
}

// restoreShardState replaces the fence and the meta state with a
// snapshot's (ops from readShardState; none from an older snapshot).
func (f *stateMachine) restoreShardState(ops []op) {
	f.mu.Lock()
	if f.fence != nil {
		*f.fence, f.fenceEpoch, *f.slots, f.stage = slotSet{}, 0, [keyslot.Slots]slotMig{}, staging{}
	}
	if f.meta != nil {
		f.meta = newMetaState()
	}
	f.mu.Unlock()
	var r result
	for i := range ops {
		o := &ops[i]
		switch o.code {
		case opOwn:
			f.applyOwn(o, &r)
		case opSlots:
			f.applySlots(o, &r)
		case opGroup:
			f.applyGroup(o, &r)
		case opMigration:
			f.restoreMigration(o)
		case opFence:
			f.restoreRuns(o.runs)
		}
	}
}

// ownsAll reports whether the group's log owns every slot of rs, or a
// migration has taken it over (a group that is not sharded owns them all).
func (f *stateMachine) ownsAll(rs []SlotOwner) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.fence == nil {
		return true
	}
	for _, r := range rs {
		for s := r.Lo; s <= r.Hi; s++ {
			// A slot a migration has touched is the migration's to
			// serve or refuse (TRYAGAIN while it moves), not missing.
			if !f.fence.has(s) && (f.slots == nil || f.slots[s].epoch == 0) {
				return false
			}
		}
	}
	return true
}
