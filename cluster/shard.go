package cluster

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-rl/sluice/internal/replyerr"
)

// A node of a sharded cluster keeps two things in step, from its group's
// leader (docs/cluster.md):
//   - the meta group's leader splits the slots evenly among
//     InitialGroups data groups when its table is empty (a new cluster);
//   - a data group's leader reports the group's members and addresses to
//     the meta group (opGroup), so that every node can route to it, and
//     appends to its own log the slots the meta group's table gives it
//     (opOwn), from which index on it serves them (fence.go).
//
// Slots only ever gain an owner here, at a cluster's start; moving a slot
// from one group to another needs a seal in the old owner's log before
// the new owner's install, which is the resharding protocol's job
// (moveSlots, mover.go), not the own entries': they never take a slot from
// a group that owns it, and never touch a slot a migration step has.

// shardDutyPeriod is how often a leader compares its group with the meta
// group's view of it.
const shardDutyPeriod = 250 * time.Millisecond

// startShardDuties starts the leader's loop on a sharded node.
func (n *Node) startShardDuties() {
	if !n.cfg.Meta && (n.cfg.Shard == 0 || n.cfg.MetaNode == nil) {
		return
	}
	var warned time.Time   // when a claimed group number was last logged
	var warnedEmpty uint64 // the table's epoch when a group without slots was last logged
	n.everyAsLeader(shardDutyPeriod, func() {
		var err error
		if n.cfg.Meta {
			err = n.seedSlots()
		} else if err = n.reportGroup(); errors.Is(err, errGroupClaimed) {
			if time.Since(warned) > 10*time.Second {
				n.log.Error("cluster: not serving any slot", "err", err)
				warned = time.Now()
			}
			return
		} else if terr := n.takeSlots(); errors.Is(terr, errNoSlots) {
			if epoch, _, _, _ := n.cfg.MetaNode.SlotTable(); epoch != warnedEmpty {
				n.log.Warn("cluster: serving no slot", "err", terr)
				warnedEmpty = epoch
			}
		} else {
			err = errors.Join(err, terr)
		}
		if !n.cfg.Meta {
			if merr := n.moveSlots(); merr != nil {
				n.log.Warn("cluster: migration step failed; retrying", "err", merr)
			}
		}
		if err != nil {
			n.log.Debug("cluster: shard duties", "err", err)
		}
	})
}

// everyAsLeader runs duty every period while this node is the ready
// leader, on a goroutine of its own, until the node stops.
func (n *Node) everyAsLeader(period time.Duration, duty func()) {
	n.stopped.Add(1)
	go func() {
		defer n.stopped.Done()
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-n.stop:
				return
			case <-t.C:
			}
			if n.ready.Load() {
				duty()
			}
		}
	}()
}

// seedSlots gives every slot an owner on a new cluster's meta group.
func (n *Node) seedSlots() error {
	if n.cfg.InitialGroups <= 0 {
		return nil
	}
	epoch, _, _, _ := n.SlotTable()
	if epoch != 0 {
		return nil
	}
	_, err := n.batcher.submit(0, []op{{code: opSlots, epoch: 1, ranges: evenSlots(n.cfg.InitialGroups)}})
	if err == nil {
		n.log.Info("cluster: slots split among the data groups", "groups", n.cfg.InitialGroups)
	}
	return err
}

// groupRecord is this data group as its leader reports it to the meta
// group: its members from raft's configuration, with the RESP addresses
// of the member table.
func (n *Node) groupRecord() (op, error) {
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return op{}, err
	}
	resp := n.fsm.Members()
	o := op{code: opGroup, group: n.cfg.Shard, term: n.raft.CurrentTerm(), id: n.cfg.ID}
	for _, s := range f.Configuration().Servers {
		o.nodes = append(o.nodes, GroupNode{ID: string(s.ID), RESPAddr: resp[string(s.ID)], RaftAddr: string(s.Address)})
	}
	return o, nil
}

// reportGroup submits this group's record to the meta group when the meta
// group's differs. It refuses (errGroupClaimed) when the meta group's
// record of this group's number names none of this group's members:
// another group of that number holds it, and this one must neither take
// its record (every MOVED would lead here) nor serve its slots.
func (n *Node) reportGroup() error {
	o, err := n.groupRecord()
	if err != nil {
		return err
	}
	meta := n.cfg.MetaNode
	_, _, groups, _ := meta.SlotTable()
	for _, g := range groups {
		if g.Group != o.group {
			continue
		}
		if g.Term == o.term && g.Leader == o.id && sameNodes(g.Nodes, o.nodes) {
			return nil
		}
		if len(g.Nodes) > 0 && !shareNode(g.Nodes, o.nodes) {
			return fmt.Errorf("%w: the meta group records data group %d as the nodes %s, none of which is a member of this "+
				"node's group (%s): this group was started as a second group %d (--bootstrap yes instead of --join "+
				"on a later node?); stop its nodes and start them with --join <a node of %s>, after removing their --dir",
				errGroupClaimed, o.group, nodeIDs(g.Nodes), nodeIDs(o.nodes), o.group, g.Leader)
		}
	}
	_, err = meta.submit(time.Now().UnixNano(), []op{o})
	return err
}

// shareNode reports whether a and b name a node id in common: a group's
// members change one at a time, so its successive records always do.
func shareNode(a, b []GroupNode) bool {
	for _, x := range a {
		for _, y := range b {
			if x.ID == y.ID {
				return true
			}
		}
	}
	return false
}

func nodeIDs(nodes []GroupNode) string {
	ids := make([]string, len(nodes))
	for i, nd := range nodes {
		ids[i] = nd.ID
	}
	return strings.Join(ids, ", ")
}

func sameNodes(a, b []GroupNode) bool {
	if len(a) != len(b) {
		return false
	}
	seen := make(map[GroupNode]bool, len(a))
	for _, x := range a {
		seen[x] = true
	}
	for _, y := range b {
		if !seen[y] {
			return false
		}
	}
	return true
}

// takeSlots appends an own entry when the meta group's table gives this
// group slots its log does not own yet and no migration step has touched;
// errNoSlots if neither gives it any. It never drops a slot (see the
// comment at the top of the file).
func (n *Node) takeSlots() error {
	epoch, owners, _, ok := n.cfg.MetaNode.SlotTable()
	if !ok || epoch == 0 {
		return nil
	}
	v, ok := n.fsm.fenceView()
	if !ok {
		return nil
	}
	set := v.owned
	before := set.count()
	var top uint16
	for _, o := range owners {
		top = max(top, o.Group)
		if o.Group != n.cfg.Shard {
			continue
		}
		for s := o.Lo; s <= o.Hi; s++ {
			if !v.migrated.has(s) {
				set.add(slotRange{lo: uint16(s), hi: uint16(s)})
			}
		}
	}
	if set.count() == 0 {
		return fmt.Errorf("%w: the slot table (epoch %d) gives data group %d no slot, and its groups go up to %d: a new "+
			"cluster splits the slots among the --cluster-groups of group 1's first node; this group serves nothing until "+
			"slots move to it", errNoSlots, epoch, n.cfg.Shard, top)
	}
	if set.count() == before {
		return nil
	}
	_, err := n.batcher.submit(0, []op{{code: opOwn, epoch: epoch, ranges: set.ranges()}})
	if err == nil {
		n.log.Info("cluster: serving slots", "group", n.cfg.Shard, "ranges", len(set.ranges()), "epoch", epoch)
	}
	return err
}

// Route says where a command on slot runs: nil on this node's data group,
// else MOVED to the owning group's leader, or CLUSTERDOWN while the slot
// has no owner or its owner no known leader. Every such reply means
// nothing was applied.
//
// A slot this group's own log serves runs here whatever the meta
// replica says: right after a migration the target's log owns the range
// before every node's replica of the meta group records the move, and
// sending the client back to the source then would bounce it between
// the two groups (clients follow MOVED at once, without a pause).
func (n *Node) Route(slot int) error {
	meta := n.cfg.MetaNode
	if meta == nil {
		return nil
	}
	if n.fsm.serves(slot) {
		return nil
	}
	g, leader := meta.SlotOwner(slot)
	switch {
	case g == n.cfg.Shard && g != 0:
		return nil
	case g == 0:
		return errSlotUnserved
	case leader == "":
		return replyerr.New(replyerr.CLUSTERDOWN, "the data group "+strconv.Itoa(int(g))+" that owns slot "+
			strconv.Itoa(slot)+" has no known leader; nothing was applied")
	}
	return replyerr.New(replyerr.MOVED, strconv.Itoa(slot)+" "+leader)
}

// settle turns each refusal of an operation outside this group's slots
// into the redirect Route gives for its slot, if that is not this group.
func (n *Node) settle(rs []result) {
	for i := range rs {
		if e, ok := rs[i].out.Err.(notOwnedError); ok {
			if err := n.Route(int(e)); err != nil {
				rs[i].out.Err = err
			}
		}
	}
}

// ClusterShards is the sharded cluster as this node sees it, for the
// CLUSTER commands: its own group first, from its own replica of its
// group (the live leader), with the slots the meta group's table gives
// it; then each other group from the meta group's record of it.
func (n *Node) ClusterShards() []Shard {
	own := n.ClusterShard()
	meta := n.cfg.MetaNode
	if meta == nil {
		return []Shard{own}
	}
	_, owners, groups, _ := meta.SlotTable()
	own.Slots = slotsOf(owners, n.cfg.Shard)
	if !n.fsm.ownsAll(own.Slots) {
		// Its own log does not serve them all yet (a new cluster, before
		// its own entry): CLUSTER INFO says fail, as Redis's does while a
		// slot is not served, so that nobody waiting for ok sends first.
		own.Down = true
	}
	out := []Shard{own}
	for _, g := range groups {
		if g.Group == n.cfg.Shard {
			continue
		}
		sh := Shard{Self: own.Self, Epoch: int64(g.Term), Slots: slotsOf(owners, g.Group), Down: true}
		for _, nd := range g.Nodes {
			node := ShardNode{ID: NodeID(nd.ID), Addr: nd.RESPAddr, Primary: nd.ID == g.Leader}
			if _, port, err := net.SplitHostPort(nd.RaftAddr); err == nil {
				node.BusPort, _ = strconv.Atoi(port)
			}
			if node.Primary {
				sh.Down = nd.RESPAddr == ""
				sh.Nodes = append([]ShardNode{node}, sh.Nodes...)
			} else {
				sh.Nodes = append(sh.Nodes, node)
			}
		}
		if len(sh.Nodes) > 0 && !sh.Nodes[0].Primary {
			sh.Nodes[0].Primary = true // no known leader: one stands as primary, and the shard is down
		}
		out = append(out, sh)
	}
	return out
}

// slotsOf returns group's ranges of the table; an empty, non-nil slice
// if it owns none (nil would mean every slot).
func slotsOf(owners []SlotOwner, group uint16) []SlotOwner {
	out := []SlotOwner{}
	for _, o := range owners {
		if o.Group == group {
			out = append(out, o)
		}
	}
	return out
}
