package cluster

import (
	"errors"
	"fmt"
	"time"

	"github.com/sluice-rl/sluice/policy"
)

// A data group's leader carries out the migrations the meta group records
// for its group (migrate.go, reshard.go), one step per check, each step
// first reading the state its group's log left, so that a new leader
// takes over wherever its predecessor stopped:
//
//   - the source's leader seals the range in its log, builds the image
//     from its own store (the range cannot change once sealed), and sends
//     the target's leader an install of it (RAFT.FORWARD); past the
//     deadline it sends a refuse of the epoch instead. Either reports the
//     epoch's outcome in the target's log, which the source's leader
//     records in the meta group (committed or aborted);
//   - the target's leader records an outcome its log holds already (a
//     source leader may have stopped after the install), and past the
//     deadline refuses the epoch in its own log, which aborts the
//     migration even while the source group is down;
//   - once the meta group records the outcome, the source's leader drops
//     the sealed range (committed) or unseals it (aborted).
//
// The deadline is compared with this leader's clock: a migration past it
// is aborted only if the target has not installed it, so a clock that
// runs ahead costs an abort, never a double owner.

// moveSlots takes the next step of every migration of this group.
func (n *Node) moveSlots() error {
	meta, g := n.cfg.MetaNode, n.cfg.Shard
	var errs []error
	var v *slotFence // read once: the migrations of a pass have disjoint ranges
	for _, m := range meta.Migrations() {
		if m.From != g && m.To != g || m.State != MigrationPlanned && m.From != g {
			continue
		}
		if v == nil {
			var ok bool
			if v, ok = n.fsm.fenceView(); !ok {
				return nil
			}
		}
		var err error
		switch {
		case m.State == MigrationPlanned && m.From == g:
			err = n.moveOut(m, v)
		case m.State == MigrationPlanned && m.To == g:
			err = n.moveIn(m, v)
		case m.State == MigrationCommitted && m.From == g && v.rangeAt(m.Lo, m.Hi, m.Epoch, slotSealed):
			err = n.step(m, fenceDrop)
		case m.State == MigrationAborted && m.From == g && v.rangeAt(m.Lo, m.Hi, m.Epoch, slotSealed):
			err = n.step(m, fenceUnseal)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("migration %d (slots %d-%d, group %d to %d): %w", m.Epoch, m.Lo, m.Hi, m.From, m.To, err))
		}
	}
	return errors.Join(errs...)
}

// moveOut is the source leader's step of a planned migration: seal, then
// ship the image (or, past the deadline, the target's refusal), and
// record the outcome.
func (n *Node) moveOut(m Migration, v *slotFence) error {
	if n.stopAt("planned") {
		return errMoveStopped
	}
	sealed := v.rangeAt(m.Lo, m.Hi, m.Epoch, slotSealed)
	if !sealed && time.Now().UnixNano() <= m.Deadline {
		if err := n.step(m, fenceSeal); err != nil {
			return err
		}
		sealed = true
		if n.stopAt("sealed") {
			return errMoveStopped
		}
	}
	expired := time.Now().UnixNano() > m.Deadline
	addr := n.groupLeader(m.To)
	if addr == "" {
		return fmt.Errorf("group %d has no known leader", m.To)
	}
	o := op{code: opFence, fence: fenceRefuse, epoch: m.Epoch, ranges: []slotRange{{lo: uint16(m.Lo), hi: uint16(m.Hi)}}}
	if sealed && !expired {
		// The sealed range changes no more, and the applied time read
		// after the seal is at or past every decision in it. An image
		// larger than one part goes first in parts (reshard.go, staging).
		o.fence, o.applied = fenceInstall, n.fsm.AppliedTime()
		chunks, _ := n.st.Export(o.applied, func(key []byte) bool {
			s := policy.StoredSlot(key)
			return s >= m.Lo && s <= m.Hi
		}, shipPart)
		if len(chunks) == 1 {
			o.image = chunks[0]
		} else if len(chunks) > 1 {
			o.ship, o.part = uint64(time.Now().UnixNano())|1, len(chunks)
			for i, c := range chunks {
				part := o
				part.fence, part.part, part.image = fencePart, i, c
				r, err := n.sendTo(addr, part)
				if err != nil {
					return fmt.Errorf("part %d of %d: %w", i, len(chunks), err)
				}
				if r.out.Err != nil {
					// Refused: the target's log has decided the epoch
					// already (the install reports how), or another
					// shipment took over (the install is refused too).
					break
				}
			}
		}
	}
	r, err := n.sendTo(addr, o)
	if err != nil {
		return err
	}
	if n.stopAt("shipped") {
		return errMoveStopped
	}
	if err := n.record(m, r); err != nil {
		return err
	}
	if n.stopAt("recorded") {
		return errMoveStopped
	}
	if done, _ := n.cfg.MetaNode.migration(m.Epoch); done.State == MigrationCommitted {
		return n.step(m, fenceDrop)
	} else if done.State == MigrationAborted {
		return n.step(m, fenceUnseal)
	}
	return nil
}

// moveIn is the target leader's step of a planned migration: it records
// an outcome its log holds, or past the deadline refuses the epoch.
func (n *Node) moveIn(m Migration, v *slotFence) error {
	var r result
	switch {
	case v.rangeAt(m.Lo, m.Hi, m.Epoch, slotOwned):
		r.n = outcomeInstalled
	case v.rangeAt(m.Lo, m.Hi, m.Epoch, slotNone):
		r.n = outcomeRefused
	case time.Now().UnixNano() > m.Deadline:
		rs, err := n.batcher.submit(time.Now().UnixNano(), []op{{code: opFence, fence: fenceRefuse, epoch: m.Epoch,
			ranges: []slotRange{{lo: uint16(m.Lo), hi: uint16(m.Hi)}}}})
		if err != nil {
			return err
		}
		r = rs[0]
	default:
		return nil
	}
	return n.record(m, r)
}

// shipPart is the most image bytes one forwarded submission carries: well
// under the RESP port's default proto-max-bulk-len (1 MiB).
const shipPart = 512 << 10

// sendTo appends o to the log of the group whose leader is at addr
// (RAFT.FORWARD) and returns its result.
func (n *Node) sendTo(addr string, o op) (result, error) {
	reply, err := n.fwd.call(addr, []byte("RAFT.FORWARD"), appendBatch(nil, time.Now().UnixNano(), []op{o}))
	if err != nil {
		return result{}, err
	}
	rs, err := decodeResults(reply)
	if err != nil {
		return result{}, err
	}
	if len(rs) != 1 {
		return result{}, errCorrupt
	}
	return rs[0], nil
}

// record writes the outcome an install or refuse reported in the target's
// log to the meta group.
func (n *Node) record(m Migration, r result) error {
	if r.out.Err != nil {
		return r.out.Err
	}
	state := MigrationCommitted
	switch r.n {
	case outcomeInstalled:
	case outcomeRefused:
		state = MigrationAborted
	default:
		return fmt.Errorf("the target reported outcome %d", r.n)
	}
	_, err := n.cfg.MetaNode.submit(time.Now().UnixNano(), []op{{code: opMigration, mig: Migration{Epoch: m.Epoch, Lo: m.Lo, Hi: m.Hi,
		From: m.From, To: m.To, State: state}}})
	if err == nil {
		n.log.Info("cluster: migration "+state.String(), "epoch", m.Epoch, "slots", slotRange{lo: uint16(m.Lo), hi: uint16(m.Hi)}.String(),
			"from", m.From, "to", m.To)
	}
	return err
}

// step appends one migration step of m to this group's log.
func (n *Node) step(m Migration, k fenceKind) error {
	rs, err := n.batcher.submit(time.Now().UnixNano(), []op{{code: opFence, fence: k, epoch: m.Epoch,
		ranges: []slotRange{{lo: uint16(m.Lo), hi: uint16(m.Hi)}}}})
	if err != nil {
		return err
	}
	if rs[0].out.Err != nil {
		return rs[0].out.Err
	}
	return nil
}

// errMoveStopped ends a leader's pass at a step a test stops it at.
var errMoveStopped = errors.New("stopped by a test")

// stopAt reports whether a test stops this pass at step: planned (before
// the seal), sealed, shipped (the target answered), recorded (the meta
// group has the outcome).
func (n *Node) stopAt(step string) bool {
	h := n.moveHook.Load()
	return h != nil && (*h)(step)
}

// groupLeader returns the RESP address of group's leader in the meta
// group's record, or "".
func (n *Node) groupLeader(group uint16) string {
	_, _, groups, _ := n.cfg.MetaNode.SlotTable()
	for _, g := range groups {
		if g.Group != group {
			continue
		}
		for _, nd := range g.Nodes {
			if nd.ID == g.Leader {
				return nd.RESPAddr
			}
		}
	}
	return ""
}
