package process

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/sluice-rl/sluice/cluster"
	"github.com/sluice-rl/sluice/commands"
	"github.com/sluice-rl/sluice/store"
)

// A node of a sharded cluster (--cluster-group, docs/cluster.md) is two
// Raft members behind one RESP port and one Raft port: a replica of its
// data group, whose log holds its slots' state, and a replica of the meta
// group, whose log holds the slot table, the groups' members, the
// command-defined policies and the ACL users. Group 1's bootstrapping node
// starts the meta group; every other node joins it through --cluster-seed,
// the first ones as voters (cluster.MetaVoters), the rest as non-voters,
// so that every node answers CLUSTER SLOTS and routes from its own replica.

// metaSyncWait bounds how long a command that found no such policy or
// user waits for the meta replica to catch up before it answers so
// (commands.Config.MetaSync).
const metaSyncWait = time.Second

// metaGroup is the meta group's group number on the shared Raft port (the
// data group's is 0, the wire format of an unsharded group's port).
const metaGroup = 1

// openSharded opens the Raft port, the meta replica and the data
// replica; ccfg is the data node's configuration as openReplicated made it.
func (p *Process) openSharded(ccfg cluster.Config) error {
	cfg := &p.cfg
	if err := cluster.CheckGroupDir(ccfg.Dir, ccfg.Shard); err != nil {
		return err // before the meta replica starts in a --dir that is not this group's
	}
	port, err := cluster.OpenRaftPort(cluster.PortConfig{Bind: ccfg.RaftBind, Advertise: ccfg.RaftAdvertise,
		Allow: ccfg.RaftAllow, ServerTLS: ccfg.RaftServerTLS, ClientTLS: ccfg.RaftClientTLS, Logger: p.log})
	if err != nil {
		return err
	}
	p.onClose(func() { port.Close() })
	// The port holds the Raft addresses, --raft-allow and TLS for both.
	ccfg.RaftBind, ccfg.RaftAdvertise, ccfg.RaftAllow, ccfg.RaftServerTLS, ccfg.RaftClientTLS = "", "", nil, nil, nil
	mcfg := metaConfig(ccfg, cfg.clusterSeed, cfg.clusterGroups)
	mcfg.Port, mcfg.Group = port, metaGroup
	if p.meta, err = cluster.Open(mcfg, store.New(1)); err != nil {
		return fmt.Errorf("the meta group: %w", err)
	}
	p.onClose(func() { p.meta.Close() })
	// The data group replicates neither users nor policies: the meta
	// group does, for the whole cluster.
	ccfg.Port, ccfg.Group, ccfg.MetaNode = port, 0, p.meta
	ccfg.ACL, ccfg.SeedACL, ccfg.Policies, ccfg.RulesHash = nil, false, nil, nil
	if p.node, err = cluster.Open(ccfg, p.st); err != nil {
		return err
	}
	p.onClose(func() { p.node.Close() })
	p.log.Info("sharded cluster node", "group", ccfg.Shard, "seed", cfg.clusterSeed, "raft", port.Addr())
	return nil
}

// metaConfig is the meta replica's configuration beside the data node's
// ccfg, its state in --dir/meta: without a seed it starts the meta group
// (group 1's bootstrapping node, which Check requires), else it joins
// through the seed.
func metaConfig(ccfg cluster.Config, seed string, groups int) cluster.Config {
	m := ccfg
	m.Dir = filepath.Join(ccfg.Dir, "meta")
	m.Meta, m.Shard, m.MetaNode, m.InitialGroups = true, 0, nil, groups
	m.Peers, m.Join, m.Bootstrap, m.NonVoter = nil, seed, cluster.NoBootstrap, false
	if seed == "" {
		m.Bootstrap = ccfg.Bootstrap
	}
	return m
}

// checkSharded refuses a sharded node's options that cannot work.
func (c Options) checkSharded() error {
	switch {
	case c.cluster.Shard == 0 && c.clusterSeed != "":
		return errors.New("--cluster-seed needs --cluster-group: it joins a sharded cluster's meta group")
	case c.cluster.Shard == 0 && c.clusterProxy:
		return errors.New("--cluster-proxy needs --cluster-group: only a sharded cluster's node has slots of other groups")
	case c.cluster.Shard == 0:
		return nil
	case !c.replicated():
		return errors.New("--cluster-group needs --node-id and --raft-bind: a data group is a replicated group")
	case c.clusterSeed == "" && (c.cluster.Shard != 1 || c.cluster.Bootstrap == cluster.NoBootstrap) && !metaMember(c.dir):
		return errors.New("--cluster-group needs --cluster-seed, a cluster node's RESP address, on every node but group 1's " +
			"bootstrapping one, which starts the meta group (a node that is a member already restarts without it)")
	case int(c.cluster.Shard) > c.clusterGroups:
		return fmt.Errorf("--cluster-group %d is above --cluster-groups %d", c.cluster.Shard, c.clusterGroups)
	}
	if c.clusterSeed != "" {
		if _, _, err := net.SplitHostPort(c.clusterSeed); err != nil {
			return fmt.Errorf("--cluster-seed: %w", err)
		}
	}
	return nil
}

// metaMember reports whether dir's meta replica was a member of a meta
// group (its marker, cluster/bootstrap.go): such a node restarts on its
// state, and needs no seed to join through.
func metaMember(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "meta", cluster.MarkerFile))
	return err == nil
}

// shardedCluster is a sharded node as the commands see it: the data
// node's keyspace and RAFT.* commands, with the meta group's replication
// of users and policies, which apply cluster-wide.
type shardedCluster struct {
	*cluster.Node
	meta *cluster.Node
}

func (s shardedCluster) ReplicateACL(now int64, argv [][]byte) (int64, error) {
	return s.meta.ReplicateACL(now, argv)
}

func (s shardedCluster) ReplicatePolicy(now int64, argv [][]byte) (int64, error) {
	return s.meta.ReplicatePolicy(now, argv)
}

func (s shardedCluster) LeaderRulesHash() ([32]byte, bool) { return s.meta.LeaderRulesHash() }

// resharder is a sharded node's SLUICE.MIGRATE and SLUICE.MIGRATIONS.
type resharder struct{ node *cluster.Node }

func (r resharder) Migrate(lo, hi int, to uint16, timeout time.Duration) (uint64, error) {
	return r.node.Migrate(lo, hi, to, timeout)
}

func (r resharder) Rebalance(groups []uint16, chunk int, timeout time.Duration) ([]uint64, error) {
	return r.node.Rebalance(groups, chunk, timeout)
}

func (r resharder) Forget(group uint16) error { return r.node.Forget(group) }

func (r resharder) MigrationList() []commands.Migration {
	var out []commands.Migration
	for _, m := range r.node.MigrationsOf() {
		c := commands.Migration{Epoch: m.Epoch, Lo: m.Lo, Hi: m.Hi, From: int(m.From), To: int(m.To), State: m.State.String(),
			Started: time.Unix(0, m.Started), Deadline: time.Unix(0, m.Deadline)}
		if m.Finished != 0 {
			c.Finished = time.Unix(0, m.Finished)
		}
		out = append(out, c)
	}
	return out
}

// shardedTopology is a sharded node as the CLUSTER commands see it.
type shardedTopology struct{ node *cluster.Node }

func (t shardedTopology) ClusterShards() []commands.Shard {
	var out []commands.Shard
	for _, sh := range t.node.ClusterShards() {
		out = append(out, shardOf(sh))
	}
	return out
}
