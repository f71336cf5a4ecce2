package cluster

import (
	"reflect"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/sluice-rl/sluice/keyslot"
	"github.com/sluice-rl/sluice/store"
)

// snapshotRoundTrip persists from's snapshot and restores it into to.
func snapshotRoundTrip(t *testing.T, from, to *stateMachine) {
	t.Helper()
	snap, err := from.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	ss := raft.NewInmemSnapshotStore()
	sink, err := ss.Create(raft.SnapshotVersionMax, 10, 1, raft.Configuration{}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	_, rc, err := ss.Open(sink.ID())
	if err != nil {
		t.Fatal(err)
	}
	if err := to.Restore(rc); err != nil {
		t.Fatal(err)
	}
}

func TestShardStateSurvivesSnapshotAndRestore(t *testing.T) {
	var r result
	// A data group's fence.
	data := newStateMachine(store.New(1), nil, nil)
	data.fence, data.slots = &slotSet{}, &[keyslot.Slots]slotMig{}
	data.applyOwn(&op{code: opOwn, epoch: 3, ranges: []slotRange{{lo: 0, hi: 99}, {lo: 200, hi: 299}}}, &r)
	restored := newStateMachine(store.New(1), nil, nil)
	restored.fence, restored.slots = &slotSet{}, &[keyslot.Slots]slotMig{}
	restored.applyOwn(&op{code: opOwn, epoch: 9, ranges: []slotRange{{lo: 5000, hi: 5001}}}, &r) // replaced by the snapshot's
	snapshotRoundTrip(t, data, restored)
	want, wantEpoch, _ := data.owned()
	got, gotEpoch, _ := restored.owned()
	if !reflect.DeepEqual(got, want) || gotEpoch != wantEpoch {
		t.Fatalf("restored fence %v at epoch %d; want %v at epoch %d", got, gotEpoch, want, wantEpoch)
	}

	// The meta group's table and records.
	meta := newStateMachine(store.New(1), nil, nil)
	meta.meta = newMetaState()
	meta.applySlots(&op{code: opSlots, epoch: 2, ranges: []slotRange{{lo: 0, hi: 8191, group: 1}, {lo: 8192, hi: 16383, group: 2}}}, &r)
	for g := uint16(1); g <= 2; g++ {
		meta.applyGroup(&op{code: opGroup, group: g, term: 7 + uint64(g), id: "b", nodes: []GroupNode{
			{ID: "a", RESPAddr: "127.0.0.1:7001", RaftAddr: "127.0.0.11:7101"},
			{ID: "b", RESPAddr: "127.0.0.1:7002", RaftAddr: "127.0.0.12:7102"},
		}}, &r)
	}
	restoredMeta := newStateMachine(store.New(1), nil, nil)
	restoredMeta.meta = newMetaState()
	snapshotRoundTrip(t, meta, restoredMeta)
	if !reflect.DeepEqual(restoredMeta.meta, meta.meta) {
		t.Fatalf("restored meta state epoch %d, table %v, groups %v; want epoch %d, table %v, groups %v",
			restoredMeta.meta.epoch, restoredMeta.meta.table(), restoredMeta.meta.groups, meta.meta.epoch, meta.meta.table(), meta.meta.groups)
	}
}
