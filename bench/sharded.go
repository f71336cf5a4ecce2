package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/sluice-rl/sluice/internal/resp"
	"github.com/sluice-rl/sluice/keyslot"
)

// A sharded cluster on 127.0.0.1 (docs/cluster.md): -cluster-groups data
// groups of -cluster nodes each, every node also a replica of the meta
// group, started for every round of a cluster scenario as the docs start one
// by hand: group 1's first node with --bootstrap yes (it also starts the
// meta group), every other group's first node with --bootstrap yes
// --cluster-seed <g1n1>, the others with --join <their group's first node>
// --cluster-seed <g1n1>. The load reaches it as a cluster client does: it
// reads CLUSTER SLOTS once and sends each key to its slot's leader.

const (
	maxClusterGroups = 8
	clusterStartup   = 60 * time.Second // bound on a cluster's start: elections, meta joins, slot ownership
)

// clusterTarget says how to start a cluster scenario's cluster.
type clusterTarget struct {
	groups, size int
	fsync        bool
}

// cluster is a running sharded cluster.
type cluster struct {
	dir     string
	groups  []*group  // groups[i] is data group i+1
	leaders []*member // leaders[i] led groups[i] when the cluster was ready
}

// slotMap is a cluster client's view of CLUSTER SLOTS: the RESP address of
// each group's primary (its Raft leader), and which of them owns each slot.
type slotMap struct {
	addrs []string
	owner [keyslot.Slots]uint8 // index into addrs
}

// clusterFlags are the flags every node of group g (1-based) passes.
func clusterFlags(g, groups int) []string {
	return []string{"--cluster-group", strconv.Itoa(g), "--cluster-groups", strconv.Itoa(groups)}
}

// startCluster starts the cluster and returns it once every group has a
// ready leader that all its members name, every node's CLUSTER SLOTS names
// those leaders for all 16384 slots, and each leader decides a key of its
// own slots.
func startCluster(ctx context.Context, bin, parent string, ct clusterTarget) (*cluster, *slotMap, error) {
	if ct.groups < 1 || ct.groups > maxClusterGroups || ct.size < 1 || ct.size > maxGroupSize {
		return nil, nil, fmt.Errorf("a cluster of %d groups of %d: want 1 to %d groups of 1 to %d", ct.groups, ct.size,
			maxClusterGroups, maxGroupSize)
	}
	dir, err := os.MkdirTemp(parent, "cluster-")
	if err != nil {
		return nil, nil, err
	}
	c := &cluster{dir: dir}
	for g := 1; g <= ct.groups; g++ {
		grp := &group{cfg: groupConfig{bin: bin, dir: dir, size: ct.size, fsync: ct.fsync}}
		for i := 1; i <= ct.size; i++ {
			id := fmt.Sprintf("g%dn%d", g, i)
			grp.members = append(grp.members, &member{id: id, dir: filepath.Join(dir, id)})
		}
		c.groups = append(c.groups, grp)
	}
	sm, err := c.start(ctx, ct)
	if err != nil {
		c.stop()
		return nil, nil, err
	}
	return c, sm, nil
}

func (c *cluster) start(ctx context.Context, ct clusterTarget) (*slotMap, error) {
	deadline := time.Now().Add(clusterStartup)
	seed := c.groups[0].members[0]
	if err := c.groups[0].launch(seed, append(clusterFlags(1, ct.groups), "--bootstrap", "yes")...); err != nil {
		return nil, err
	}
	if _, err := c.groups[0].waitLeader(ctx, 1, time.Until(deadline)); err != nil {
		return nil, err
	}
	for i, g := range c.groups[1:] {
		flags := append(clusterFlags(i+2, ct.groups), "--bootstrap", "yes", "--cluster-seed", seed.resp)
		if err := g.launch(g.members[0], flags...); err != nil {
			return nil, err
		}
	}
	for i, g := range c.groups {
		for _, m := range g.members[1:] {
			flags := append(clusterFlags(i+1, ct.groups), "--join", g.members[0].resp, "--cluster-seed", seed.resp)
			if err := g.launch(m, flags...); err != nil {
				return nil, err
			}
		}
	}
	c.leaders = make([]*member, len(c.groups))
	for i, g := range c.groups {
		l, err := g.waitLeader(ctx, ct.size, time.Until(deadline))
		if err != nil {
			return nil, fmt.Errorf("group %d: %w", i+1, err)
		}
		c.leaders[i] = l
	}
	var last error
	for {
		sm, err := c.ready()
		if err == nil {
			return sm, nil
		}
		last = err
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the cluster was not ready within %v (%v); logs in %s", clusterStartup, last, c.dir)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ready returns the slot table when every node's CLUSTER SLOTS gives every
// slot to a group's leader and each leader decides a key of its slots; else
// why not.
func (c *cluster) ready() (*slotMap, error) {
	want := map[string]bool{}
	for _, l := range c.leaders {
		want[l.resp] = true
	}
	var first *slotMap
	for _, g := range c.groups {
		for _, m := range g.members {
			select {
			case <-m.srv.done:
				return nil, fmt.Errorf("%s exited; its log ends with:\n%s", m.id, tail(m.srv.log))
			default:
			}
			sm, err := readSlotMap(m.resp)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", m.id, err)
			}
			if len(sm.addrs) != len(c.groups) {
				return nil, fmt.Errorf("%s: CLUSTER SLOTS names %d primaries, want %d", m.id, len(sm.addrs), len(c.groups))
			}
			for _, a := range sm.addrs {
				if !want[a] {
					return nil, fmt.Errorf("%s: CLUSTER SLOTS names %s, not a group's leader", m.id, a)
				}
			}
			if first == nil {
				first = sm
			} else if !first.same(sm) {
				return nil, fmt.Errorf("%s: CLUSTER SLOTS differs from %s's", m.id, c.groups[0].members[0].id)
			}
		}
	}
	for i, addr := range first.addrs {
		v, err := (&server{addr: addr}).call(2*time.Second, "RL.TOKEN", first.keyOf(i), "1", "1", "0")
		if err != nil {
			return nil, err
		}
		if v.Kind != '*' {
			return nil, fmt.Errorf("RL.TOKEN on %s, a key of its slots: %s", addr, v.String())
		}
	}
	return first, nil
}

// keyOf returns a key of a slot of the group at addrs[i] (outside every
// scenario's key prefix).
func (sm *slotMap) keyOf(i int) string {
	for n := 0; ; n++ {
		k := "cluster-probe:" + strconv.Itoa(n)
		if int(sm.owner[keyslot.Of([]byte(k))]) == i {
			return k
		}
	}
}

func (sm *slotMap) same(o *slotMap) bool {
	if len(sm.addrs) != len(o.addrs) {
		return false
	}
	for s := range sm.owner {
		if sm.addrs[sm.owner[s]] != o.addrs[o.owner[s]] {
			return false
		}
	}
	return true
}

// readSlotMap reads CLUSTER SLOTS at addr: every slot must be covered.
func readSlotMap(addr string) (*slotMap, error) {
	v, err := (&server{addr: addr}).call(2*time.Second, "CLUSTER", "SLOTS")
	if err != nil {
		return nil, err
	}
	return parseSlotMap(v)
}

// parseSlotMap reads a CLUSTER SLOTS reply: [[start, end, [host, port, id,
// …], replicas…]…]. Every slot must be covered once.
func parseSlotMap(v *resp.Value) (*slotMap, error) {
	if v.Kind != '*' {
		return nil, fmt.Errorf("CLUSTER SLOTS: %s", v.String())
	}
	sm := &slotMap{}
	index := map[string]int{}
	covered := 0
	var seen [keyslot.Slots]bool
	for _, r := range v.Elems {
		if r.Kind != '*' || len(r.Elems) < 3 || !r.Elems[0].IsInt() || !r.Elems[1].IsInt() {
			return nil, fmt.Errorf("CLUSTER SLOTS: a range %s", r.String())
		}
		lo, hi := r.Elems[0].Num, r.Elems[1].Num
		p := r.Elems[2]
		if lo < 0 || hi < lo || hi >= keyslot.Slots || p.Kind != '*' || len(p.Elems) < 2 || !p.Elems[1].IsInt() {
			return nil, fmt.Errorf("CLUSTER SLOTS: a range %s", r.String())
		}
		addr := net.JoinHostPort(string(p.Elems[0].Text), strconv.FormatInt(p.Elems[1].Num, 10))
		i, ok := index[addr]
		if !ok {
			if len(sm.addrs) == maxClusterGroups {
				return nil, fmt.Errorf("CLUSTER SLOTS: more than %d primaries", maxClusterGroups)
			}
			i = len(sm.addrs)
			index[addr] = i
			sm.addrs = append(sm.addrs, addr)
		}
		for s := lo; s <= hi; s++ {
			if seen[s] {
				return nil, fmt.Errorf("CLUSTER SLOTS: slot %d in two ranges", s)
			}
			seen[s] = true
			sm.owner[s] = uint8(i)
			covered++
		}
	}
	if covered != keyslot.Slots {
		return nil, fmt.Errorf("CLUSTER SLOTS covers %d of %d slots", covered, keyslot.Slots)
	}
	return sm, nil
}

// roles returns every process of the cluster with its role.
func (c *cluster) roles() []procRole {
	var out []procRole
	for i, g := range c.groups {
		for _, m := range g.members {
			if m.srv == nil {
				continue
			}
			role := roleFollower
			if m == c.leaders[i] {
				role = roleLeader
			}
			out = append(out, procRole{pid: m.srv.pid, role: role, name: m.id})
		}
	}
	return out
}

// stop stops every node, at once, and removes the cluster's directory.
func (c *cluster) stop() {
	done := make(chan struct{}, len(c.groups))
	for _, g := range c.groups {
		go func() { g.stopMembers(); done <- struct{}{} }()
	}
	for range c.groups {
		<-done
	}
	os.RemoveAll(c.dir)
}

// openCluster starts a fresh cluster for one run.
func (t *target) openCluster(ctx context.Context) (*server, error) {
	c, sm, err := startCluster(ctx, t.bin, t.dir, t.cl)
	if err != nil {
		return nil, err
	}
	first := c.leaders[0]
	return &server{kind: "sluice", addr: first.resp, pid: first.srv.pid, cluster: c, shards: sm}, nil
}
