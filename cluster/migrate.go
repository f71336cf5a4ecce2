package cluster

import (
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/sluice-rl/sluice/internal/replyerr"
	"github.com/sluice-rl/sluice/keyslot"
)

// The meta group records each slot migration (docs/cluster.md,
// "Resharding"): SLUICE.MIGRATE asks for one, the meta group's FSM
// checks it against the slot table and gives it the next epoch, and the
// record stays planned until the target group's own log has decided it
// (reshard.go): an install of the range there commits it, a refusal of
// its epoch there aborts it. Only then does the meta group record the
// outcome, and a commit moves the range to the target in the slot table.

// MigrationState is where a migration stands in the meta group's record.
type MigrationState uint8

const (
	MigrationPlanned   MigrationState = 1 + iota // recorded; the range may be sealed at the source
	MigrationCommitted                           // the target installed the range and owns it
	MigrationAborted                             // the target refused the epoch; the source keeps the range
)

func (s MigrationState) String() string {
	switch s {
	case MigrationPlanned:
		return "planned"
	case MigrationCommitted:
		return "committed"
	case MigrationAborted:
		return "aborted"
	}
	return "state" + strconv.Itoa(int(s))
}

// Migration is the meta group's record of the move of slots Lo-Hi from
// the data group From to the data group To. Times are the meta group's
// applied instants in Unix nanoseconds; Finished is 0 while planned.
type Migration struct {
	Epoch    uint64
	Lo, Hi   int
	From, To uint16
	State    MigrationState
	Started  int64
	Deadline int64 // past it, a planned migration that is not installed is aborted
	Finished int64
}

// keepFinished is how many finished migrations the meta group keeps
// listing; unfinished ones are always kept.
const keepFinished = 256

var (
	errMigrateRange  = replyerr.Generic("SLUICE.MIGRATE: slots must be 0-16383, as slot or lo-hi")
	errMigrateTarget = replyerr.Generic("SLUICE.MIGRATE: no such data group")
	errNoMetaState   = replyerr.Generic("this node is not a replica of a sharded cluster's meta group")
	errRebalanceArgs = replyerr.Generic("SLUICE.REBALANCE: no data group to spread the slots over")
)

// applyMigration records a new migration (state planned, epoch 0), or the
// outcome of a planned one. n is the new migration's epoch, or 1 for an
// outcome that was applied. at is the entry's applied instant.
func (f *stateMachine) applyMigration(at int64, o *op, r *result) {
	if f.meta == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	m, req := f.meta, o.mig
	if req.State == MigrationPlanned && req.Epoch == 0 {
		mg, err := m.plan(at, req)
		if err != nil {
			r.out.Err = err
			return
		}
		r.n = int64(mg.Epoch)
		return
	}
	mg := m.migrations[req.Epoch]
	if mg == nil || mg.State != MigrationPlanned || req.State == MigrationPlanned {
		return
	}
	mg.State, mg.Finished = req.State, at
	if req.State == MigrationCommitted {
		for s := mg.Lo; s <= mg.Hi; s++ {
			m.owner[s] = mg.To
		}
		m.epoch++
	}
	m.trim()
	r.n = 1
}

// plan checks a requested migration against the table: every slot of the
// range has the same owner, another group than the target, which the meta
// group knows, and no slot is in an unfinished migration. Under f.mu.
func (m *metaState) plan(at int64, req Migration) (*Migration, error) {
	if req.Lo < 0 || req.Hi >= keyslot.Slots || req.Lo > req.Hi {
		return nil, errMigrateRange
	}
	if m.groups[req.To] == nil {
		return nil, fmt.Errorf("%w %d", errMigrateTarget, req.To)
	}
	from := m.owner[req.Lo]
	for s := req.Lo; s <= req.Hi; s++ {
		if m.owner[s] != from {
			return nil, replyerr.Generic(fmt.Sprintf("SLUICE.MIGRATE: slots %d-%d have more than one owner (%d owns %d, %d owns %d)",
				req.Lo, req.Hi, from, req.Lo, m.owner[s], s))
		}
	}
	switch {
	case from == 0:
		return nil, replyerr.Generic("SLUICE.MIGRATE: the slots have no owner yet")
	case from == req.To:
		return nil, replyerr.Generic(fmt.Sprintf("SLUICE.MIGRATE: group %d owns the slots already", from))
	}
	for _, mg := range m.migrations {
		if mg.State == MigrationPlanned && mg.Lo <= req.Hi && req.Lo <= mg.Hi {
			return nil, replyerr.Generic(fmt.Sprintf("SLUICE.MIGRATE: slots %d-%d are moving already (epoch %d)", mg.Lo, mg.Hi, mg.Epoch))
		}
	}
	m.epoch++
	mg := &Migration{Epoch: m.epoch, Lo: req.Lo, Hi: req.Hi, From: from, To: req.To, State: MigrationPlanned,
		Started: at, Deadline: at + req.Deadline}
	m.migrations[mg.Epoch] = mg
	return mg, nil
}

// trim forgets the oldest finished migrations beyond keepFinished.
func (m *metaState) trim() {
	var done []uint64
	for e, mg := range m.migrations {
		if mg.State != MigrationPlanned {
			done = append(done, e)
		}
	}
	if len(done) <= keepFinished {
		return
	}
	sort.Slice(done, func(i, j int) bool { return done[i] < done[j] })
	for _, e := range done[:len(done)-keepFinished] {
		delete(m.migrations, e)
	}
}

// migrationOps is the migration records as snapshot ops, by epoch.
func (m *metaState) migrationOps() []op {
	var out []op
	for _, mg := range m.sortedMigrations() {
		out = append(out, op{code: opMigration, mig: mg})
	}
	return out
}

func (m *metaState) sortedMigrations() []Migration {
	out := make([]Migration, 0, len(m.migrations))
	for _, mg := range m.migrations {
		out = append(out, *mg)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Epoch < out[j].Epoch })
	return out
}

// restoreMigration puts a snapshot's record back as it was.
func (f *stateMachine) restoreMigration(o *op) {
	if f.meta == nil || o.mig.Epoch == 0 {
		return
	}
	f.mu.Lock()
	mg := o.mig
	f.meta.migrations[mg.Epoch] = &mg
	f.mu.Unlock()
}

// Migrations returns the migrations this meta replica records, by epoch.
func (n *Node) Migrations() []Migration {
	f := n.fsm
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.meta == nil {
		return nil
	}
	return f.meta.sortedMigrations()
}

// migration returns the record of epoch on this meta replica.
func (n *Node) migration(epoch uint64) (Migration, bool) {
	f := n.fsm
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.meta == nil || f.meta.migrations[epoch] == nil {
		return Migration{}, false
	}
	return *f.meta.migrations[epoch], true
}

// Migrate asks the meta group to move slots lo-hi to the data group to,
// aborting the move if it is not installed within timeout, and returns
// the migration's epoch. n is a node of a sharded cluster (its data node
// or its meta replica); the groups' leaders carry the migration out
// (shard.go), and Migrations reports how it stands.
func (n *Node) Migrate(lo, hi int, to uint16, timeout time.Duration) (uint64, error) {
	meta := n
	if !n.cfg.Meta {
		meta = n.cfg.MetaNode
	}
	if meta == nil {
		return 0, errNoMetaState
	}
	o := op{code: opMigration, mig: Migration{Lo: lo, Hi: hi, To: to, State: MigrationPlanned, Deadline: int64(timeout)}}
	rs, err := meta.submit(time.Now().UnixNano(), []op{o})
	if err != nil {
		return 0, err
	}
	if len(rs) != 1 {
		return 0, errCorrupt
	}
	if rs[0].out.Err != nil {
		return 0, rs[0].out.Err
	}
	return uint64(rs[0].n), nil
}

// MigrationsOf returns the migrations of n's cluster from n's meta
// replica (n being a data node or the meta replica itself).
func (n *Node) MigrationsOf() []Migration {
	if !n.cfg.Meta && n.cfg.MetaNode != nil {
		return n.cfg.MetaNode.Migrations()
	}
	return n.Migrations()
}

// A planned move of a run of slots, for Rebalance.
type move struct {
	lo, hi   int
	from, to uint16
}

// rebalancePlan returns the moves that leave each group of groups with
// an even share of the slots (16384/len(groups), the first groups one
// more while slots remain), moving as few slots as it can: each group
// above its share gives its highest slots to the groups below theirs, in
// group order. A group not in groups has a share of 0 (draining it).
// Runs longer than chunk slots are cut, so that each migration's pause
// stays short. owner is the slot table (0: no owner, never moved).
func rebalancePlan(owner *[keyslot.Slots]uint16, groups []uint16, chunk int) []move {
	sort.Slice(groups, func(i, j int) bool { return groups[i] < groups[j] })
	share := map[uint16]int{}
	for i, g := range groups {
		share[g] = keyslot.Slots / len(groups)
		if i < keyslot.Slots%len(groups) {
			share[g]++
		}
	}
	count := map[uint16]int{}
	for _, g := range owner {
		if g != 0 {
			count[g]++
		}
	}
	// give[s] is the group slot s goes to, 0 if it stays.
	var give [keyslot.Slots]uint16
	takers := append([]uint16(nil), groups...)
	for s := keyslot.Slots - 1; s >= 0; s-- {
		g := owner[s]
		if g == 0 || count[g] <= share[g] {
			continue
		}
		for len(takers) > 0 && count[takers[0]] >= share[takers[0]] {
			takers = takers[1:]
		}
		if len(takers) == 0 {
			break
		}
		to := takers[0]
		give[s] = to
		count[g]--
		count[to]++
	}
	var out []move
	for s := 0; s < keyslot.Slots; s++ {
		if give[s] == 0 {
			continue
		}
		e := s
		for e+1 < keyslot.Slots && give[e+1] == give[s] && owner[e+1] == owner[s] && e+1-s < chunk {
			e++
		}
		out = append(out, move{lo: s, hi: e, from: owner[s], to: give[s]})
		s = e
	}
	return out
}

// Rebalance records the migrations that spread the slots evenly over
// groups (every data group the meta group records if none), moving at
// most chunk slots per migration, and returns their epochs. A group left
// out is drained. The migrations run side by side (their ranges are
// disjoint); SLUICE.MIGRATIONS shows their progress.
func (n *Node) Rebalance(groups []uint16, chunk int, timeout time.Duration) ([]uint64, error) {
	meta := n
	if !n.cfg.Meta {
		meta = n.cfg.MetaNode
	}
	if meta == nil {
		return nil, errNoMetaState
	}
	// The plan is made from this replica's slot table: first bring it up
	// to the meta leader's commit index, or a move committed a moment ago
	// elsewhere is planned around (a drain left a slot behind).
	if err := meta.CatchUp(time.Second); err != nil {
		return nil, err
	}
	f := meta.fsm
	f.mu.RLock()
	owner := f.meta.owner
	known := map[uint16]bool{}
	for g := range f.meta.groups {
		known[g] = true
	}
	f.mu.RUnlock()
	if len(groups) == 0 {
		for g := range known {
			groups = append(groups, g)
		}
	}
	for _, g := range groups {
		if !known[g] {
			return nil, fmt.Errorf("%w %d", errMigrateTarget, g)
		}
	}
	if len(groups) == 0 || chunk < 1 {
		return nil, errRebalanceArgs
	}
	var epochs []uint64
	for _, mv := range rebalancePlan(&owner, groups, chunk) {
		e, err := n.Migrate(mv.lo, mv.hi, mv.to, timeout)
		if err != nil {
			return epochs, err
		}
		epochs = append(epochs, e)
	}
	return epochs, nil
}

// applyForget removes a data group's record (SLUICE.FORGET): refused
// while the group owns a slot or is in an unfinished migration. n is 1
// if it was removed. Under no lock.
func (f *stateMachine) applyForget(o *op, r *result) {
	if f.meta == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.meta
	if m.groups[o.group] == nil {
		r.out.Err = fmt.Errorf("%w %d", errMigrateTarget, o.group)
		return
	}
	for s := range m.owner {
		if m.owner[s] == o.group {
			r.out.Err = replyerr.Generic(fmt.Sprintf("SLUICE.FORGET: group %d still owns slot %d; move its slots away first", o.group, s))
			return
		}
	}
	for _, mg := range m.migrations {
		if mg.State == MigrationPlanned && (mg.From == o.group || mg.To == o.group) {
			r.out.Err = replyerr.Generic(fmt.Sprintf("SLUICE.FORGET: group %d is in migration %d", o.group, mg.Epoch))
			return
		}
	}
	delete(m.groups, o.group)
	r.n = 1
}

// Forget removes data group g's record from the meta group, once it owns
// no slot: CLUSTER SLOTS, SHARDS and NODES no longer list it. Its nodes
// must be stopped first, or their leader reports the group again.
func (n *Node) Forget(g uint16) error {
	meta := n
	if !n.cfg.Meta {
		meta = n.cfg.MetaNode
	}
	if meta == nil {
		return errNoMetaState
	}
	rs, err := meta.submit(time.Now().UnixNano(), []op{{code: opGroup, group: g}})
	if err == nil && len(rs) == 1 {
		err = rs[0].out.Err
	}
	return err
}
