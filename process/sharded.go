package process

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"

	"github.com/sluice-rl/sluice/cluster"
	"github.com/sluice-rl/sluice/commands"
	"github.com/sluice-rl/sluice/store"
)

// A node of a sharded cluster (--cluster-group, docs/cluster.md) is two
// Raft members behind one RESP port and one Raft port: a replica of its
// data group, whose log holds its slots' state, and a replica of the meta
// group, whose log holds the slot table, the groups' members, the
// command-defined policies and the ACL users. The nodes --cluster-meta
// lists vote in the meta group; the others join it as non-voters, so that
// every node answers CLUSTER SLOTS and routes from its own replica.

// metaGroup is the meta group's group number on the shared Raft port (the
// data group's is 0, the wire format of an unsharded group's port).
const metaGroup = 1

// openSharded opens the Raft port, the meta replica and the data
// replica; ccfg is the data node's configuration as openReplicated made it.
func (p *Process) openSharded(ccfg cluster.Config) error {
	cfg := &p.cfg
	port, err := cluster.OpenRaftPort(cluster.PortConfig{Bind: ccfg.RaftBind, Advertise: ccfg.RaftAdvertise,
		Allow: ccfg.RaftAllow, ServerTLS: ccfg.RaftServerTLS, ClientTLS: ccfg.RaftClientTLS, Logger: p.log})
	if err != nil {
		return err
	}
	p.onClose(func() { port.Close() })
	// The port holds the Raft addresses, --raft-allow and TLS for both.
	ccfg.RaftBind, ccfg.RaftAdvertise, ccfg.RaftAllow, ccfg.RaftServerTLS, ccfg.RaftClientTLS = "", "", nil, nil, nil
	mcfg := metaConfig(ccfg, cfg.clusterMeta, cfg.clusterGroups)
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
	p.log.Info("sharded cluster node", "group", ccfg.Shard, "meta_voter", yesNo(!mcfg.NonVoter), "raft", port.Addr())
	return nil
}

// metaConfig is the meta replica's configuration beside the data node's
// ccfg, its state in --dir/meta. The first --cluster-meta address starts
// the meta group when its node is started with --bootstrap (asking the
// other voters first, as a group's bootstrap does); the other voters join
// it as voters and every other node as a non-voter, through that first
// address. Start-up never waits in a circle: only the first voter and
// each data group's bootstrapping node wait for peers, and those peers
// (joiners) answer at once.
func metaConfig(ccfg cluster.Config, voters []string, groups int) cluster.Config {
	m := ccfg
	m.Dir = filepath.Join(ccfg.Dir, "meta")
	m.Meta, m.Shard, m.MetaNode, m.InitialGroups = true, 0, nil, groups
	m.Peers, m.Join, m.Bootstrap, m.NonVoter = nil, "", cluster.NoBootstrap, !slices.Contains(voters, ccfg.RESPAddr)
	if ccfg.RESPAddr == voters[0] && ccfg.Bootstrap != cluster.NoBootstrap {
		m.Bootstrap, m.Peers = ccfg.Bootstrap, voters[1:]
		return m
	}
	m.Join = voters[0]
	return m
}

// checkSharded refuses a sharded node's options that cannot work.
func (c Options) checkSharded() error {
	if c.cluster.Shard == 0 {
		if len(c.clusterMeta) > 0 {
			return errors.New("--cluster-meta needs --cluster-group: it names a sharded cluster's meta group")
		}
		return nil
	}
	if len(c.clusterMeta) == 0 {
		return errors.New("--cluster-group needs --cluster-meta: the RESP addresses of the meta group's voters")
	}
	for _, a := range c.clusterMeta {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("--cluster-meta: %w", err)
		}
	}
	if int(c.cluster.Shard) > c.clusterGroups {
		return fmt.Errorf("--cluster-group %d is above --cluster-groups %d", c.cluster.Shard, c.clusterGroups)
	}
	if c.port == autoPort {
		return errors.New("--cluster-group needs a fixed --port: the other nodes route to it by address")
	}
	return nil
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

// shardedTopology is a sharded node as the CLUSTER commands see it.
type shardedTopology struct{ node *cluster.Node }

func (t shardedTopology) ClusterShards() []commands.Shard {
	var out []commands.Shard
	for _, sh := range t.node.ClusterShards() {
		out = append(out, shardOf(sh))
	}
	return out
}

