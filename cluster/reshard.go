package cluster

import (
	"fmt"

	"github.com/sluice-rl/sluice/keyslot"
	"github.com/sluice-rl/sluice/policy"
)

// A data group's side of a slot migration (docs/cluster.md, "Resharding";
// migrate.go has the meta group's). Each step is an entry of the group's
// own log, so every replica takes it at the same index:
//
//   - seal (at the source): from this index the range is refused, with
//     TRYAGAIN (nothing applied); its keys stay as the last decision
//     before the seal left them, and make the image the source ships;
//   - install (at the target): the image's keys replace whatever the
//     group held in the range, its applied time rises to the image's, and
//     from this index the group owns the range;
//   - refuse (at the target): the migration's epoch is refused here, so a
//     late install of it changes nothing. Install and refuse of one epoch
//     are exclusive: whichever the target's log holds first decides the
//     migration, and the meta group only records that decision;
//   - drop (at the source, once committed): the range's keys are freed;
//   - unseal (at the source, once aborted): the group owns the range again.
//
// Each slot carries the epoch of the last migration step its group took
// on it; a step applies only to slots that are all below its epoch, or
// reports the outcome if they are all at it, so every step can be retried
// by any leader: none applies twice.

type fenceKind uint8

const (
	fenceSeal fenceKind = 1 + iota
	fenceInstall
	fenceRefuse
	fenceDrop
	fenceUnseal
	fenceState // snapshots only: the per-slot migration state
	fencePart  // one chunk of a shipment's image, staged at the target
)

func (k fenceKind) String() string {
	return [...]string{"?", "seal", "install", "refuse", "drop", "unseal", "state", "part"}[min(int(k), 7)]
}

// staging is the shipment a target is receiving in parts: the image of a
// range larger than one forwarded submission can carry arrives as part
// entries, each loading its chunk into the store under slots the group
// does not serve, and an install that names the shipment and its count
// of parts completes it. Part 0 starts a shipment, dropping whatever the
// group held in the range; a part or install of another shipment, or out
// of order, is refused, so two leaders of the source shipping at once
// cannot mix their parts. Raft's FSM goroutine only; not in snapshots (a
// restored target refuses the install, and the source ships again).
type staging struct {
	epoch, ship uint64
	lo, hi      int
	parts       int // received, in order
}

// slotState is a slot's state after its group's last migration step.
type slotState uint8

const (
	slotNone   slotState = iota // not served (dropped, refused)
	slotOwned                   // served (installed, unsealed)
	slotSealed                  // refused with TRYAGAIN, keys kept (sealed)
)

// slotMig is one slot's migration state: the epoch of its group's last
// step on it (0: none; then the own entries decide, fence.go) and the
// state it left.
type slotMig struct {
	epoch uint64
	state slotState
}

// slotRun is a run of slots with one migration state, for snapshots.
type slotRun struct {
	lo, hi uint16
	epoch  uint64
	state  slotState
}

// The outcomes an install or a refuse reports for its epoch (result.n).
const (
	outcomeInstalled = 1
	outcomeRefused   = 2
)

// applyFence carries out a migration step and returns the instant the
// entry's later ops apply at: an install raises it to the image's applied
// time, so that time never runs backwards for the range's keys. n is 1
// for a step done (now or before), or for install and refuse the epoch's
// outcome here; 0 with an error when the slots are not in a state the
// step applies to.
func (f *stateMachine) applyFence(at int64, o *op, r *result) int64 {
	if f.fence == nil || len(o.ranges) != 1 {
		return at
	}
	lo, hi, e := int(o.ranges[0].lo), int(o.ranges[0].hi), o.epoch
	f.mu.Lock()
	below, atE := true, true
	var owned, sealed, none int
	for s := lo; s <= hi; s++ {
		m := f.slots[s]
		below = below && m.epoch < e
		atE = atE && m.epoch == e
		switch {
		case f.fence.has(s):
			owned++
		case m.epoch > 0 && m.state == slotSealed:
			sealed++
		default:
			none++
		}
	}
	all := hi - lo + 1
	set := func(st slotState) {
		for s := lo; s <= hi; s++ {
			f.slots[s] = slotMig{epoch: e, state: st}
			if st == slotOwned {
				f.fence.add(slotRange{lo: uint16(s), hi: uint16(s)})
			} else {
				f.fence[s>>6] &^= 1 << (s & 63)
			}
		}
	}
	var drop, install bool
	switch o.fence {
	case fenceSeal:
		switch {
		case atE && sealed == all:
			r.n = 1
		case below:
			set(slotSealed)
			r.n = 1
		}
	case fenceInstall, fenceRefuse, fencePart:
		staged := o.ship != 0 && f.stage.ship == o.ship && f.stage.epoch == e && f.stage.lo == lo && f.stage.hi == hi
		switch {
		case o.fence == fencePart && below && owned == 0:
			switch {
			case o.part == 0:
				f.stage = staging{epoch: e, ship: o.ship, lo: lo, hi: hi, parts: 1}
				drop, install, r.n = true, true, 1
			case staged && f.stage.parts == o.part:
				f.stage.parts++
				install, r.n = true, 1
			}
		case o.fence == fencePart:
		case atE && owned == all:
			r.n = outcomeInstalled
		case atE && none == all:
			r.n = outcomeRefused
		case below && owned == 0 && o.fence == fenceInstall && (o.part == 0 || staged && f.stage.parts == o.part):
			// Without parts the image is whole here and replaces the
			// range; with them the parts replaced it already.
			drop, install = o.part == 0, true
			if o.applied > f.applied {
				f.applied = o.applied
			}
			at = f.applied
			set(slotOwned)
			f.stage = staging{}
			r.n = outcomeInstalled
		case below && owned == 0 && o.fence == fenceRefuse:
			drop = true // an earlier migration's keys not dropped yet, or staged parts
			set(slotNone)
			f.stage = staging{}
			r.n = outcomeRefused
		}
	case fenceDrop:
		switch {
		case atE && none == all:
			r.n = 1
		case atE && sealed == all:
			set(slotNone)
			drop, r.n = true, 1
		}
	case fenceUnseal:
		switch {
		case atE && owned == all:
			r.n = 1
		case atE && sealed == all:
			set(slotOwned)
			r.n = 1
		}
	}
	f.mu.Unlock()
	if r.n == 0 {
		r.out.Err = fmt.Errorf("%w: %s of slots %d-%d at epoch %d: %d owned, %d sealed, %d neither; epochs below %v, at %v",
			errFenceStep, o.fence, lo, hi, e, owned, sealed, none, below, atE)
		return at
	}
	in := func(key []byte) bool {
		s := policy.StoredSlot(key)
		return s >= lo && s <= hi
	}
	if drop {
		f.st.DeleteMatching(at, in)
	}
	if install {
		if _, err := f.st.Import(at, o.image); err != nil {
			r.out.Err = fmt.Errorf("%w: %v", errFenceStep, err)
		}
	}
	return at
}

// slotFence is a data group's view of its slots for its leader's duties:
// the slots it serves, and those a migration step has touched, which the
// own entries no longer change.
type slotFence struct {
	owned, migrated slotSet
	mig             [keyslot.Slots]slotMig
}

// fenceView returns the group's slot fence; ok is false for a group that
// is not sharded.
func (f *stateMachine) fenceView() (v *slotFence, ok bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.fence == nil {
		return nil, false
	}
	v = &slotFence{owned: *f.fence, mig: *f.slots}
	for s := range f.slots {
		if f.slots[s].epoch > 0 {
			v.migrated.add(slotRange{lo: uint16(s), hi: uint16(s)})
		}
	}
	return v, true
}

// rangeAt reports whether every slot of lo-hi is at epoch in state st.
func (v *slotFence) rangeAt(lo, hi int, epoch uint64, st slotState) bool {
	for s := lo; s <= hi; s++ {
		if v.mig[s].epoch != epoch || v.mig[s].state != st {
			return false
		}
	}
	return true
}

// migrationRuns returns the slots a migration step has touched as runs of
// one state, for a snapshot. Under f.mu.
func (f *stateMachine) migrationRuns() []slotRun {
	var out []slotRun
	for s := 0; s < keyslot.Slots; s++ {
		m := f.slots[s]
		if m.epoch == 0 {
			continue
		}
		e := s
		for e+1 < keyslot.Slots && f.slots[e+1] == m {
			e++
		}
		out = append(out, slotRun{lo: uint16(s), hi: uint16(e), epoch: m.epoch, state: m.state})
		s = e
	}
	return out
}

// restoreRuns sets a snapshot's per-slot migration state, after its own
// op has set the fence.
func (f *stateMachine) restoreRuns(runs []slotRun) {
	if f.fence == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range runs {
		for s := int(r.lo); s <= int(r.hi); s++ {
			f.slots[s] = slotMig{epoch: r.epoch, state: r.state}
			if r.state == slotOwned {
				f.fence.add(slotRange{lo: uint16(s), hi: uint16(s)})
			} else {
				f.fence[s>>6] &^= 1 << (s & 63)
			}
		}
	}
}
