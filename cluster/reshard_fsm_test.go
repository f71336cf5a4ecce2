package cluster

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/keyslot"
	"github.com/sluice-rl/sluice/store"
)

// The migration steps of a data group's log (reshard.go), applied to one
// state machine as scripts of entries.

type fenceFSM struct {
	t     *testing.T
	f     *stateMachine
	index uint64
}

func newFenceFSM(t *testing.T) *fenceFSM {
	f := newStateMachine(store.New(2), nil, nil)
	f.fence, f.slots = &slotSet{}, &[keyslot.Slots]slotMig{}
	return &fenceFSM{t: t, f: f}
}

func (x *fenceFSM) apply(now int64, ops ...op) []result {
	x.t.Helper()
	x.index++
	resp := x.f.Apply(&raft.Log{Type: raft.LogCommand, Index: x.index, Data: appendBatch(nil, now, ops)}).(applyResponse)
	if resp.err != nil {
		x.t.Fatal(resp.err)
	}
	return resp.results
}

func fenceOp(k fenceKind, epoch uint64, lo, hi int) op {
	return op{code: opFence, fence: k, epoch: epoch, ranges: []slotRange{{lo: uint16(lo), hi: uint16(hi)}}}
}

func takeOp(key string, n int64) op {
	return op{code: opDecide, req: algorithms.Request{Key: []byte(key), N: n,
		Limit: algorithms.Limit{Algo: algorithms.Token, Count: 10, Period: int64(time.Hour)}}}
}

// keyIn returns a key whose slot is in lo-hi.
func keyIn(t *testing.T, lo, hi int) string {
	for i := 0; i < 1<<20; i++ {
		k := "k" + strconv.Itoa(i)
		if s := keyslot.Of([]byte(k)); s >= lo && s <= hi {
			return k
		}
	}
	t.Fatal("no key")
	return ""
}

func remaining(rs []result) int64 { return rs[0].out.Result.Remaining }

func TestFenceSealRefusesAndInstallCarriesState(t *testing.T) {
	t0 := time.Unix(1000, 0).UnixNano()
	t1, t2, t3 := t0+int64(time.Second), t0+2*int64(time.Second), t0+3*int64(time.Second)
	src, dst := newFenceFSM(t), newFenceFSM(t)
	src.apply(t0, op{code: opOwn, epoch: 1, ranges: []slotRange{{lo: 0, hi: 99}}})
	key := keyIn(t, 10, 20)
	if rs := src.apply(t0, takeOp(key, 4)); rs[0].out.Err != nil || remaining(rs) != 6 {
		t.Fatalf("Take(t0, n=4) at the source = %+v; want admitted, 6 left", rs[0].out)
	}
	// Sealed: refused with TRYAGAIN, nothing applied.
	if rs := src.apply(t1, fenceOp(fenceSeal, 5, 10, 20)); rs[0].n != 1 {
		t.Fatalf("seal = n %d, %v", rs[0].n, rs[0].out.Err)
	}
	rs := src.apply(t1, takeOp(key, 1))
	if err := rs[0].out.Err; err == nil || !strings.HasPrefix(err.Error(), "TRYAGAIN ") {
		t.Fatalf("Take(t1) on a sealed slot = %+v; want TRYAGAIN", rs[0].out)
	}
	// An own entry of a later epoch does not take the sealed slots back.
	src.apply(t1, op{code: opOwn, epoch: 9, ranges: []slotRange{{lo: 0, hi: 99}}})
	if v, _ := src.f.fenceView(); v.owned.has(15) || !v.owned.has(5) {
		t.Fatalf("after an own entry: owns 15 %v, 5 %v; want false, true", v.owned.has(15), v.owned.has(5))
	}
	// The image: the key as the last decision before the seal left it.
	chunks, n := src.f.st.Export(src.f.AppliedTime(), func(k []byte) bool { return string(k) == key }, 1<<20)
	if n != 1 || len(chunks) != 1 {
		t.Fatalf("export: %d entries", n)
	}
	install := fenceOp(fenceInstall, 5, 10, 20)
	install.applied, install.image = t2, chunks[0]
	// The target's clock is behind the image's: its applied time rises.
	if rs := dst.apply(t0, install); rs[0].n != outcomeInstalled || rs[0].out.Err != nil {
		t.Fatalf("install = n %d, %v", rs[0].n, rs[0].out.Err)
	}
	if got := dst.f.AppliedTime(); got != t2 {
		t.Fatalf("applied time after the install = %d; want the image's %d", got, t2)
	}
	if rs := dst.apply(t0, takeOp(key, 1)); rs[0].out.Err != nil || remaining(rs) != 5 {
		t.Fatalf("Take(n=1) at the target = %+v; want admitted, 5 left", rs[0].out)
	}
	// A second install of the epoch (a retried shipment) reports the
	// outcome and loads nothing: the decision after the first stays.
	if rs := dst.apply(t3, install); rs[0].n != outcomeInstalled {
		t.Fatalf("second install = n %d, %v", rs[0].n, rs[0].out.Err)
	}
	if rs := dst.apply(t3, takeOp(key, 0)); remaining(rs) != 5 {
		t.Fatalf("after a second install %d left; want 5", remaining(rs))
	}
	// A refuse after the install reports the install.
	if rs := dst.apply(t3, fenceOp(fenceRefuse, 5, 10, 20)); rs[0].n != outcomeInstalled {
		t.Fatalf("refuse after install = n %d, %v", rs[0].n, rs[0].out.Err)
	}
	// The source drops the range: the key is gone there.
	if rs := src.apply(t3, fenceOp(fenceDrop, 5, 10, 20)); rs[0].n != 1 {
		t.Fatalf("drop = n %d, %v", rs[0].n, rs[0].out.Err)
	}
	if _, n := src.f.st.Export(t3, func([]byte) bool { return true }, 1<<20); n != 0 {
		t.Fatalf("the source holds %d keys after the drop", n)
	}
	// An unseal after the drop changes nothing.
	if rs := src.apply(t3, fenceOp(fenceUnseal, 5, 10, 20)); rs[0].n != 0 || src.f.serves(15) {
		t.Fatalf("unseal after drop = %+v, serves %v", rs[0], src.f.serves(15))
	}
}

func TestFenceRefusedEpochRefusesALateInstall(t *testing.T) {
	t0 := time.Unix(1000, 0).UnixNano()
	src, dst := newFenceFSM(t), newFenceFSM(t)
	src.apply(t0, op{code: opOwn, epoch: 1, ranges: []slotRange{{lo: 0, hi: 99}}})
	key := keyIn(t, 30, 40)
	src.apply(t0, takeOp(key, 3))
	src.apply(t0, fenceOp(fenceSeal, 7, 30, 40))
	chunks, _ := src.f.st.Export(t0, func([]byte) bool { return true }, 1<<20)
	if rs := dst.apply(t0, fenceOp(fenceRefuse, 7, 30, 40)); rs[0].n != outcomeRefused {
		t.Fatalf("refuse = n %d, %v", rs[0].n, rs[0].out.Err)
	}
	late := fenceOp(fenceInstall, 7, 30, 40)
	late.applied, late.image = t0, chunks[0]
	if rs := dst.apply(t0, late); rs[0].n != outcomeRefused {
		t.Fatalf("late install = n %d, %v; want the refusal reported", rs[0].n, rs[0].out.Err)
	}
	if dst.f.serves(35) {
		t.Fatal("the target serves the slots of a refused epoch")
	}
	if _, n := dst.f.st.Export(t0, func([]byte) bool { return true }, 1<<20); n != 0 {
		t.Fatalf("the target loaded %d keys of a refused epoch", n)
	}
	// The source unseals: the key's state is as before the seal.
	if rs := src.apply(t0, fenceOp(fenceUnseal, 7, 30, 40)); rs[0].n != 1 {
		t.Fatalf("unseal = n %d, %v", rs[0].n, rs[0].out.Err)
	}
	if rs := src.apply(t0, takeOp(key, 0)); rs[0].out.Err != nil || remaining(rs) != 7 {
		t.Fatalf("after unseal: %+v; want 7 left", rs[0].out)
	}
	// A seal of an older epoch than the slots' changes nothing.
	if rs := src.apply(t0, fenceOp(fenceSeal, 6, 30, 40)); rs[0].n != 0 || !src.f.serves(35) {
		t.Fatalf("seal of an older epoch = n %d, %v", rs[0].n, rs[0].out.Err)
	}
}

func TestFenceSnapshotCarriesMigrationState(t *testing.T) {
	t0 := time.Unix(1000, 0).UnixNano()
	src := newFenceFSM(t)
	src.apply(t0, op{code: opOwn, epoch: 1, ranges: []slotRange{{lo: 0, hi: 99}}})
	src.apply(t0, fenceOp(fenceSeal, 4, 10, 20))
	src.apply(t0, fenceOp(fenceRefuse, 5, 200, 210))
	snap, err := src.f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := snap.(*fsmSnapshot).bytes()
	if err != nil {
		t.Fatal(err)
	}
	back := newFenceFSM(t)
	if err := back.f.Restore(io.NopCloser(bytes.NewReader(b))); err != nil {
		t.Fatal(err)
	}
	v, _ := back.f.fenceView()
	if v.owned.has(15) || !v.owned.has(5) || !v.rangeAt(10, 20, 4, slotSealed) || !v.rangeAt(200, 210, 5, slotNone) {
		t.Fatalf("restored fence: owns 15 %v, 5 %v; migration state %v %v", v.owned.has(15), v.owned.has(5), v.mig[15], v.mig[205])
	}

	// The meta group's migration records.
	meta := newStateMachine(store.New(1), nil, nil)
	meta.meta = newMetaState()
	mx := &fenceFSM{t: t, f: meta}
	mx.apply(t0, op{code: opSlots, epoch: 1, ranges: evenSlots(2)})
	mx.apply(t0, op{code: opGroup, group: 2, term: 1, id: "n"})
	rs := mx.apply(t0, op{code: opMigration, mig: Migration{Lo: 0, Hi: 9, To: 2, State: MigrationPlanned, Deadline: int64(time.Second)}})
	if rs[0].out.Err != nil || rs[0].n != 2 {
		t.Fatalf("migration = n %d, %v", rs[0].n, rs[0].out.Err)
	}
	mx.apply(t0, op{code: opMigration, mig: Migration{Epoch: 2, Lo: 0, Hi: 9, From: 1, To: 2, State: MigrationCommitted}})
	snap, _ = meta.Snapshot()
	b, _ = snap.(*fsmSnapshot).bytes()
	meta2 := newStateMachine(store.New(1), nil, nil)
	meta2.meta = newMetaState()
	if err := meta2.Restore(io.NopCloser(bytes.NewReader(b))); err != nil {
		t.Fatal(err)
	}
	ms := meta2.meta.sortedMigrations()
	if len(ms) != 1 || ms[0].State != MigrationCommitted || ms[0].From != 1 || meta2.meta.owner[5] != 2 || meta2.meta.owner[10] != 1 {
		t.Fatalf("restored migrations %+v, owners of 5 and 10: %d %d", ms, meta2.meta.owner[5], meta2.meta.owner[10])
	}
}

func TestRebalancePlanMovesTheFewestSlots(t *testing.T) {
	table := func(rs []slotRange) *[keyslot.Slots]uint16 {
		var o [keyslot.Slots]uint16
		for _, r := range rs {
			for s := r.lo; s <= r.hi; s++ {
				o[s] = r.group
			}
		}
		return &o
	}
	for _, c := range []struct {
		name   string
		owner  *[keyslot.Slots]uint16
		groups []uint16
		moved  int
		counts map[uint16]int
	}{
		{"a third group", table(evenSlots(2)), []uint16{1, 2, 3}, 5461, map[uint16]int{1: 5462, 2: 5461, 3: 5461}},
		{"draining group 3", table(evenSlots(3)), []uint16{1, 2}, 5462, map[uint16]int{1: 8192, 2: 8192}},
		{"already even", table(evenSlots(2)), []uint16{1, 2}, 0, map[uint16]int{1: 8192, 2: 8192}},
	} {
		owner := *c.owner
		moves := rebalancePlan(c.owner, c.groups, 300)
		moved := 0
		for _, mv := range moves {
			if mv.hi-mv.lo+1 > 300 || mv.from == mv.to {
				t.Fatalf("%s: move %+v", c.name, mv)
			}
			for s := mv.lo; s <= mv.hi; s++ {
				if owner[s] != mv.from {
					t.Fatalf("%s: move %+v of slot %d owned by %d", c.name, mv, s, owner[s])
				}
				owner[s] = mv.to
			}
			moved += mv.hi - mv.lo + 1
		}
		counts := map[uint16]int{}
		for _, g := range owner {
			counts[g]++
		}
		if moved != c.moved || fmt.Sprint(counts) != fmt.Sprint(c.counts) {
			t.Errorf("%s: %d slots moved, counts %v; want %d, %v", c.name, moved, counts, c.moved, c.counts)
		}
	}
}

func TestFenceShipmentInPartsCannotMix(t *testing.T) {
	t0 := time.Unix(1000, 0).UnixNano()
	src, dst := newFenceFSM(t), newFenceFSM(t)
	src.apply(t0, op{code: opOwn, epoch: 1, ranges: []slotRange{{lo: 0, hi: 999}}})
	var keys []string
	for i := 0; len(keys) < 40; i++ {
		k := "p" + strconv.Itoa(i)
		if keyslot.Of([]byte(k)) < 1000 {
			keys = append(keys, k)
			src.apply(t0, takeOp(k, 3))
		}
	}
	src.apply(t0, fenceOp(fenceSeal, 3, 0, 999))
	chunks, n := src.f.st.Export(t0, func([]byte) bool { return true }, 200)
	if n != 40 || len(chunks) < 3 {
		t.Fatalf("export: %d keys in %d chunks", n, len(chunks))
	}
	part := func(ship uint64, i int) op {
		o := fenceOp(fencePart, 3, 0, 999)
		o.ship, o.part, o.image = ship, i, chunks[i]
		return o
	}
	install := func(ship uint64) op {
		o := fenceOp(fenceInstall, 3, 0, 999)
		o.applied, o.ship, o.part = t0, ship, len(chunks)
		return o
	}
	// Shipment 1 starts, shipment 2 starts over it: 1's next part and its
	// install are refused, 2 completes.
	for _, c := range []struct {
		o    op
		want int64
	}{{part(1, 0), 1}, {part(1, 1), 1}, {part(2, 0), 1}, {part(1, 2), 0}, {install(1), 0}} {
		if rs := dst.apply(t0, c.o); rs[0].n != c.want {
			t.Fatalf("%s ship %d part %d: n %d, %v; want n %d", c.o.fence, c.o.ship, c.o.part, rs[0].n, rs[0].out.Err, c.want)
		}
	}
	if dst.f.serves(5) {
		t.Fatal("the target serves the range before a complete install")
	}
	for i := 1; i < len(chunks); i++ {
		if rs := dst.apply(t0, part(2, i)); rs[0].n != 1 {
			t.Fatalf("ship 2 part %d: n %d, %v", i, rs[0].n, rs[0].out.Err)
		}
	}
	if rs := dst.apply(t0, install(2)); rs[0].n != outcomeInstalled {
		t.Fatalf("install of ship 2: n %d, %v", rs[0].n, rs[0].out.Err)
	}
	for _, k := range keys {
		if rs := dst.apply(t0, takeOp(k, 0)); rs[0].out.Err != nil || remaining(rs) != 7 {
			t.Fatalf("%s at the target: %+v; want 7 left", k, rs[0].out)
		}
	}
	// A late part after the install is refused and changes nothing.
	if rs := dst.apply(t0, part(1, 0)); rs[0].n != 0 {
		t.Fatalf("late part: n %d", rs[0].n)
	}
	if _, n := dst.f.st.Export(t0, func([]byte) bool { return true }, 1<<20); n != 40 {
		t.Fatalf("the target holds %d keys; want 40", n)
	}
}
