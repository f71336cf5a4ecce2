package cluster

import (
	"sort"

	"github.com/sluice-rl/sluice/keyslot"
)

// The meta group of a sharded cluster is a small Raft group (usually three
// voters, every other process a non-voter that applies its log) whose
// state is the cluster's configuration: the slot table (which data group
// owns each of the 16384 slots, at an epoch) and each data group's record
// (its members' ids and addresses, and the leader that reported them).
// Command-defined policies and ACL users live in its log too, as they do
// in a single group's (policies.go, acl.go), so that they apply
// cluster-wide. Every node answers CLUSTER SLOTS, SHARDS and NODES, and
// routes (MOVED), from its own replica of this state; a stale view costs a
// redirect, never a wrong decision, because each data group fences its own
// log (fence.go).

// GroupNode is one member of a data group as the meta group records it.
type GroupNode struct {
	ID       string // --node-id
	RESPAddr string // where clients and followers reach it
	RaftAddr string // its Raft port
}

// GroupRecord is the meta group's record of one data group.
type GroupRecord struct {
	Group  uint16
	Term   uint64      // the term of the leader that reported it
	Leader string      // that leader's id
	Nodes  []GroupNode // every member, sorted by id
}

// SlotOwner is one range of the slot table.
type SlotOwner struct {
	Lo, Hi int    // inclusive
	Group  uint16 // the data group that owns it
}

// metaState is the meta group's replicated state.
type metaState struct {
	epoch  uint64
	owner  [keyslot.Slots]uint16 // 0: no owner
	groups map[uint16]*GroupRecord
	// migrations are the slot migrations by epoch (migrate.go): every
	// unfinished one and the latest finished ones.
	migrations map[uint64]*Migration
}

func newMetaState() *metaState {
	return &metaState{groups: map[uint16]*GroupRecord{}, migrations: map[uint64]*Migration{}}
}

// applySlots replaces the slot table with an op's at a later epoch; n is
// 1 if it was applied.
func (f *stateMachine) applySlots(o *op, r *result) {
	if f.meta == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if o.epoch <= f.meta.epoch {
		return
	}
	f.meta.owner = [keyslot.Slots]uint16{}
	for _, rg := range o.ranges {
		for s := int(rg.lo); s <= int(rg.hi); s++ {
			f.meta.owner[s] = rg.group
		}
	}
	f.meta.epoch = o.epoch
	r.n = 1
}

// applyGroup records a data group's members, as its leader of a term not
// below the record's reports them; n is 1 if it was applied. A group op
// with no leader and no nodes forgets the group (applyForget).
func (f *stateMachine) applyGroup(o *op, r *result) {
	if f.meta == nil {
		return
	}
	if o.id == "" && len(o.nodes) == 0 {
		f.applyForget(o, r)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if old := f.meta.groups[o.group]; old != nil && o.term < old.Term {
		return
	}
	nodes := append([]GroupNode(nil), o.nodes...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].ID < nodes[j].ID })
	f.meta.groups[o.group] = &GroupRecord{Group: o.group, Term: o.term, Leader: o.id, Nodes: nodes}
	r.n = 1
}

// metaOps is the meta state as the ops that rebuild it, for a snapshot:
// the slot table, then each group's record in group order, then each
// migration's record by epoch.
func (m *metaState) ops() []op {
	out := []op{{code: opSlots, epoch: m.epoch, ranges: m.table()}}
	ids := make([]int, 0, len(m.groups))
	for g := range m.groups {
		ids = append(ids, int(g))
	}
	sort.Ints(ids)
	for _, g := range ids {
		rec := m.groups[uint16(g)]
		out = append(out, op{code: opGroup, group: rec.Group, term: rec.Term, id: rec.Leader, nodes: rec.Nodes})
	}
	return append(out, m.migrationOps()...)
}

// table returns the slot table as maximal ranges of one owner, leaving
// out slots with none.
func (m *metaState) table() []slotRange {
	var out []slotRange
	for s := 0; s < keyslot.Slots; s++ {
		g := m.owner[s]
		if g == 0 {
			continue
		}
		e := s
		for e+1 < keyslot.Slots && m.owner[e+1] == g {
			e++
		}
		out = append(out, slotRange{lo: uint16(s), hi: uint16(e), group: g})
		s = e
	}
	return out
}

// SlotTable returns the meta state this replica has applied: the slot
// table's epoch and ranges, and every data group's record. ok is false on
// a node that is not a replica of the meta group.
func (n *Node) SlotTable() (epoch uint64, owners []SlotOwner, groups []GroupRecord, ok bool) {
	f := n.fsm
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.meta == nil {
		return 0, nil, nil, false
	}
	for _, r := range f.meta.table() {
		owners = append(owners, SlotOwner{Lo: int(r.lo), Hi: int(r.hi), Group: r.group})
	}
	for _, rec := range f.meta.groups {
		groups = append(groups, *rec)
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].Group < groups[j].Group })
	return f.meta.epoch, owners, groups, true
}

// SlotOwner returns the data group that owns slot in this replica's slot
// table (0: none) and that group's leader's RESP address ("" unknown).
func (n *Node) SlotOwner(slot int) (group uint16, leader string) {
	f := n.fsm
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.meta == nil || slot < 0 || slot >= keyslot.Slots {
		return 0, ""
	}
	group = f.meta.owner[slot]
	if rec := f.meta.groups[group]; rec != nil {
		for _, nd := range rec.Nodes {
			if nd.ID == rec.Leader {
				return group, nd.RESPAddr
			}
		}
	}
	return group, ""
}
