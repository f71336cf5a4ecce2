package cluster

import (
	"bytes"
	"io"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/keyslot"
	"github.com/sluice-rl/sluice/store"
)

// keyInSlotRange returns a key whose slot is in [lo, hi], with prefix.
func keyInSlotRange(t *testing.T, prefix string, lo, hi int) []byte {
	t.Helper()
	for i := 0; i < 100000; i++ {
		k := []byte(prefix + string(rune('a'+i%26)) + string(rune('0'+i%10)) + string(rune(i)))
		if s := keyslot.Of(k); s >= lo && s <= hi {
			return k
		}
	}
	t.Fatal("no key found")
	return nil
}

func applyOps(t *testing.T, f *stateMachine, index uint64, ops ...op) []result {
	t.Helper()
	r := f.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: appendBatch(nil, 1_800_000_000e9, ops)})
	resp := r.(applyResponse)
	if resp.err != nil {
		t.Fatal(resp.err)
	}
	return resp.results
}

func token(key []byte, group int32) op {
	return op{code: opDecide, req: algorithms.Request{Key: key, N: 1, Group: group,
		Limit: algorithms.Limit{Algo: algorithms.Token, Count: 5, Period: 1e9}}}
}

// TestFenceRefusesOtherSlotsAtApplyTime: a sharded data group's state
// machine applies decisions, key commands and transactions on its own
// slots only, from the index of its own entry on; every other one is
// refused with a not-applied error and changes nothing. An RL.ALL group
// with one refused member is refused whole.
func TestFenceRefusesOtherSlotsAtApplyTime(t *testing.T) {
	st := store.New(2)
	f := newStateMachine(st, nil, nil)
	f.fence, f.slots = &slotSet{}, &[keyslot.Slots]slotMig{}
	mine := keyInSlotRange(t, "m", 0, 8191)
	other := keyInSlotRange(t, "o", 8192, 16383)

	// Before any own entry the group owns nothing.
	if rs := applyOps(t, f, 1, token(mine, 0)); rs[0].out.Err == nil {
		t.Fatal("a decision applied before the group owned any slot")
	}
	applyOps(t, f, 2, op{code: opOwn, epoch: 1, ranges: []slotRange{{lo: 0, hi: 8191}}})
	rs := applyOps(t, f, 3,
		token(mine, 0), token(other, 0),
		token(mine, 9), token(other, 9), // one RL.ALL group across the fence
		op{code: opDelete, keys: [][]byte{other}},
		op{code: opTx, count: 1}, token(other, 0),
	)
	if rs[0].out.Err != nil || !rs[0].out.Result.Allowed {
		t.Fatalf("own slot: %+v", rs[0].out)
	}
	for i, want := range map[int]bool{1: true, 2: true, 3: true, 4: true, 5: true} {
		if _, refused := rs[i].out.Err.(notOwnedError); refused != want {
			t.Errorf("op %d: %v", i, rs[i].out.Err)
		}
	}
	if n, _ := st.Exists(1_800_000_000e9, [][]byte{other}); n != 0 {
		t.Fatal("a refused decision left state")
	}
	ki, _ := st.Info(1_800_000_000e9, mine)
	if ki.Algo != algorithms.Token {
		t.Fatal("the own decision left no state")
	}
	// The RL.ALL group's own-slot member took nothing: one token spent.
	out := make([]algorithms.Outcome, 1)
	st.Decide(1_800_000_000e9, []algorithms.Request{{Key: mine, Limit: algorithms.Limit{Algo: algorithms.Token, Count: 5, Period: 1e9}}}, out)
	if out[0].Result.Remaining != 4 {
		t.Fatalf("remaining %d after one admitted decision; the refused group's member must not count", out[0].Result.Remaining)
	}
}

// TestSnapshotCarriesTheShardState: a data group's fence and the meta
// group's slot table and group records survive a snapshot and restore.
func TestSnapshotCarriesTheShardState(t *testing.T) {
	data := newStateMachine(store.New(1), nil, nil)
	data.fence, data.slots = &slotSet{}, &[keyslot.Slots]slotMig{}
	applyOps(t, data, 1, op{code: opOwn, epoch: 5, ranges: []slotRange{{lo: 10, hi: 20}, {lo: 100, hi: 100}}})
	meta := newStateMachine(store.New(1), nil, nil)
	meta.meta = newMetaState()
	applyOps(t, meta, 1,
		op{code: opSlots, epoch: 2, ranges: evenSlots(3)},
		op{code: opGroup, group: 2, term: 4, id: "b", nodes: []GroupNode{{ID: "b", RESPAddr: "h:2", RaftAddr: "h:3"}}})
	for _, f := range []*stateMachine{data, meta} {
		snap, err := f.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		b, err := snap.(*fsmSnapshot).bytes()
		if err != nil {
			t.Fatal(err)
		}
		g := newStateMachine(store.New(1), nil, nil)
		if f.fence != nil {
			g.fence, g.slots = &slotSet{}, &[keyslot.Slots]slotMig{}
		}
		if f.meta != nil {
			g.meta = newMetaState()
		}
		if err := g.Restore(io.NopCloser(bytes.NewReader(b))); err != nil {
			t.Fatal(err)
		}
		again, _ := g.Snapshot()
		b2, _ := again.(*fsmSnapshot).bytes()
		if !bytes.Equal(b, b2) {
			t.Fatal("the restored state snapshots differently")
		}
	}
	rs, epoch, _ := data.owned()
	if epoch != 5 || len(rs) != 2 || rs[1].lo != 100 {
		t.Fatalf("fence %v at %d", rs, epoch)
	}
	// An older own entry changes nothing.
	applyOps(t, data, 2, op{code: opOwn, epoch: 4, ranges: nil})
	if rs, _, _ := data.owned(); len(rs) != 2 {
		t.Fatal("an older own entry replaced the fence")
	}
	// A stale slot table and an older term's group record are ignored.
	applyOps(t, meta, 2, op{code: opSlots, epoch: 2, ranges: evenSlots(1)},
		op{code: opGroup, group: 2, term: 3, id: "c"})
	if g := meta.meta.owner[16383]; g != 3 || meta.meta.groups[2].Leader != "b" {
		t.Fatalf("owner %d, leader %s", g, meta.meta.groups[2].Leader)
	}
}

// TestOwnsAllFollowsTheOwnEntry: a sharded group serves the table's
// slots only once its own log's entry names them all (CLUSTER INFO says
// fail until then, Node.ClusterShards); an unsharded group serves all.
func TestOwnsAllFollowsTheOwnEntry(t *testing.T) {
	f := newStateMachine(store.New(1), nil, nil)
	table := []SlotOwner{{Lo: 0, Hi: 99, Group: 1}, {Lo: 200, Hi: 200, Group: 1}}
	if !f.ownsAll(table) {
		t.Fatal("an unsharded group does not serve every slot")
	}
	f.fence, f.slots = &slotSet{}, &[keyslot.Slots]slotMig{}
	if f.ownsAll(table) {
		t.Fatal("a group with no own entry serves slots")
	}
	applyOps(t, f, 1, op{code: opOwn, epoch: 1, ranges: []slotRange{{lo: 0, hi: 99}}})
	if f.ownsAll(table) {
		t.Fatal("slot 200 served before the own entry names it")
	}
	applyOps(t, f, 2, op{code: opOwn, epoch: 1, ranges: []slotRange{{lo: 0, hi: 99}, {lo: 200, hi: 200}}})
	if !f.ownsAll(table) {
		t.Fatal("the table's slots are not all served after the own entry names them")
	}
}

// TestReplicaWithoutResultsReachesTheSameState: a replica applies the
// entries it did not propose with results nobody reads, kept in a scratch
// from entry to entry; it must reach exactly the state of a replica that
// gives every entry fresh results. The second entry puts an own-slot RL.ALL
// group where the first left refusals, beside a refused decision that makes
// the group check read its members' errors.
func TestReplicaWithoutResultsReachesTheSameState(t *testing.T) {
	mine := keyInSlotRange(t, "m", 0, 8191)
	mine2 := keyInSlotRange(t, "n", 0, 8191)
	other := keyInSlotRange(t, "o", 8192, 16383)
	replicas := make([]*stateMachine, 2)
	for i := range replicas {
		f := newStateMachine(store.New(2), nil, nil)
		f.fence, f.slots = &slotSet{}, &[keyslot.Slots]slotMig{}
		replicas[i] = f
	}
	replicas[1].proposals = &proposals{} // proposes nothing: every entry is another node's
	entries := [][]op{
		{{code: opOwn, epoch: 1, ranges: []slotRange{{lo: 0, hi: 8191}}}},
		{token(mine, 0), token(other, 0), token(mine, 9), token(other, 9)},
		{token(other, 0), token(mine2, 0), token(mine, 9), token(mine2, 9)},
		{op{code: opTx, count: 2}, token(mine, 0), token(other, 0), token(mine2, 7), token(mine, 7)},
		{op{code: opDelete, keys: [][]byte{other}}, token(other, 3), token(mine, 3), token(mine2, 3)},
	}
	for i, ops := range entries {
		data := appendBatch(nil, 1_800_000_000e9, ops)
		for k, f := range replicas {
			r := f.Apply(&raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: data})
			if _, ok := r.(applyResponse); ok != (k == 0) {
				t.Fatalf("entry %d, replica %d: response %#v", i, k, r)
			}
		}
	}
	remaining := func(f *stateMachine, key []byte) int64 {
		out := make([]algorithms.Outcome, 1)
		f.st.Decide(1_800_000_000e9, []algorithms.Request{{Key: key, Limit: algorithms.Limit{Algo: algorithms.Token, Count: 5, Period: 1e9}}}, out)
		return out[0].Result.Remaining
	}
	for _, key := range [][]byte{mine, mine2} {
		a, b := remaining(replicas[0], key), remaining(replicas[1], key)
		if a != b {
			t.Fatalf("key %q: %d tokens left with results, %d without", key, a, b)
		}
	}
	// mine spent one token in entry 2 (alone), 3 (its group) and 4 (group 7,
	// after the refused transaction); entry 5's group holds other: refused.
	if got := remaining(replicas[0], mine); got != 2 {
		t.Fatalf("mine: %d tokens left, want 2", got)
	}
}
