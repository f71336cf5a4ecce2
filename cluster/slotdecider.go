package cluster

import (
	"strconv"
	"sync"
	"time"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/internal/replyerr"
	"github.com/sluice-rl/sluice/policy"
)

// SlotDecider decides requests on the data groups that own their keys'
// slots, for a front end whose clients do not route by slot (the Envoy
// RLS gRPC service): the requests of this node's own group go through its
// keyspace (Node.Decide), those of each other group to that group's leader
// as one forwarded submission (RAFT.FORWARD, one log entry there), the
// groups in parallel. Each group's fence still decides what it owns.
//
// Decide is safe for concurrent use. Outcomes of a group with no known
// leader, after the node's LeaderWait, are CLUSTERDOWN (nothing applied
// there); a forward that broke after it was sent is UNKNOWN. The other
// groups' decisions stand either way. Consecutive requests with the same
// nonzero Group (one all-or-nothing decision) must share a slot, else each
// of them is refused with CROSSSLOT and nothing of theirs is applied.
type SlotDecider struct {
	n *Node
}

// NewSlotDecider returns a decider that routes from n, a sharded cluster's
// data node; without a meta group (one group) it decides everything
// through n.
func NewSlotDecider(n *Node) *SlotDecider { return &SlotDecider{n: n} }

var errCrossSlotGroup = replyerr.New(replyerr.CROSSSLOT,
	"Keys in request don't hash to the same slot (an all-or-nothing decision's keys must share one)")

// groupPart is the requests of one call that one data group decides.
type groupPart struct {
	group uint16
	slot  int   // one of its slots, to look up its leader
	idx   []int // into the call's reqs, in order
}

// Decide carries out reqs on their owning groups and writes each outcome
// to the same index of out.
func (d *SlotDecider) Decide(now int64, reqs []algorithms.Request, out []algorithms.Outcome) {
	n := d.n
	meta := n.cfg.MetaNode
	if meta == nil {
		n.Decide(now, reqs, out)
		return
	}
	var parts []*groupPart
	byGroup := map[uint16]*groupPart{}
	for i := 0; i < len(reqs); {
		end := i + 1
		for g := reqs[i].Group; g != 0 && end < len(reqs) && reqs[end].Group == g; end++ {
		}
		slot := policy.StoredSlot(reqs[i].Key)
		cross := false
		for j := i + 1; j < end; j++ {
			cross = cross || policy.StoredSlot(reqs[j].Key) != slot
		}
		if cross {
			for j := i; j < end; j++ {
				out[j] = algorithms.Outcome{Err: errCrossSlotGroup}
			}
			i = end
			continue
		}
		g, _ := meta.SlotOwner(slot)
		p := byGroup[g]
		if p == nil {
			p = &groupPart{group: g, slot: slot}
			byGroup[g] = p
			parts = append(parts, p)
		}
		for ; i < end; i++ {
			p.idx = append(p.idx, i)
		}
	}
	var wg sync.WaitGroup
	var local *groupPart
	for _, p := range parts {
		switch {
		case p.group == 0:
			for _, i := range p.idx {
				out[i] = algorithms.Outcome{Err: errSlotUnserved}
			}
		case p.group == n.cfg.Shard:
			local = p
		default:
			wg.Add(1)
			go func(p *groupPart) {
				defer wg.Done()
				d.remote(now, p, reqs, out)
			}(p)
		}
	}
	if local != nil {
		if len(local.idx) == len(reqs) {
			n.Decide(now, reqs, out)
		} else {
			sub, subOut := gather(reqs, local.idx), make([]algorithms.Outcome, len(local.idx))
			n.Decide(now, sub, subOut)
			for k, i := range local.idx {
				out[i] = subOut[k]
			}
		}
	}
	wg.Wait()
}

// gather returns the requests of reqs at idx, in order.
func gather(reqs []algorithms.Request, idx []int) []algorithms.Request {
	sub := make([]algorithms.Request, len(idx))
	for k, i := range idx {
		sub[k] = reqs[i]
	}
	return sub
}

// remote sends p's requests to its group's leader as one submission and
// writes their outcomes. While nothing was applied (no known leader, the
// node asked is no longer the leader, the connection could not be made) it
// asks again, the leader looked up afresh, until LeaderWait has passed.
func (d *SlotDecider) remote(now int64, p *groupPart, reqs []algorithms.Request, out []algorithms.Outcome) {
	n := d.n
	ops := make([]op, len(p.idx))
	for k, i := range p.idx {
		ops[k] = op{code: opDecide, req: reqs[i]}
	}
	blob := appendBatch(nil, now, ops)
	deadline := time.Now().Add(n.cfg.LeaderWait)
	rs, err := d.send(p, blob)
	for err != nil && retryable(err) && time.Now().Before(deadline) {
		select {
		case <-n.stop:
			deadline = time.Time{}
			continue
		case <-time.After(20 * time.Millisecond):
		}
		rs, err = d.send(p, blob)
	}
	if err != nil && retryable(err) {
		err = replyerr.New(replyerr.CLUSTERDOWN, "the data group "+strconv.Itoa(int(p.group))+
			" that owns slot "+strconv.Itoa(p.slot)+" has no leader that answers; nothing was applied")
	}
	for k, i := range p.idx {
		switch {
		case err != nil:
			out[i] = algorithms.Outcome{Err: err}
		case k < len(rs):
			out[i] = rs[k].out
		default:
			out[i] = algorithms.Outcome{Err: errUnknown("the leader's reply was short")}
		}
	}
}

// send sends blob to the leader of p's group, as the meta group names it.
func (d *SlotDecider) send(p *groupPart, blob []byte) ([]result, error) {
	_, leader := d.n.cfg.MetaNode.SlotOwner(p.slot)
	if leader == "" {
		return nil, errNoLeader
	}
	return d.n.forward(leader, blob)
}
