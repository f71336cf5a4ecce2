package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// startShardedProcs starts a sharded cluster of real processes
// (startShardedCluster: groups data groups of three, every node also a
// replica of the meta group; extra are flags every node passes at every
// start) and returns its nodes by group (ps[0] is group 1; each group's
// first node bootstrapped it), once every node's CLUSTER SHARDS names all
// groups, each with a primary and three nodes at known addresses, and
// CLUSTER INFO says ok. A node that exits unexpectedly fails the test at
// once with its log (waitFor).
func startShardedProcs(t *testing.T, groups int, extra ...string) [][]*proc {
	t.Helper()
	c := startShardedCluster(t, groups, func(*proc) []string { return extra })
	waitFor(t, 45*time.Second, func() bool {
		for _, p := range c.all() {
			if !clusterComplete(p, groups, 3) {
				return false
			}
		}
		return true
	})
	return c.groups
}

// clusterComplete reports whether p's CLUSTER SHARDS names groups shards,
// each owning slots, with perGroup nodes at known addresses, a primary
// among them, and the cluster state ok.
func clusterComplete(p *proc, groups, perGroup int) bool {
	rdb := redis.NewClient(&redis.Options{Addr: p.addr(), Protocol: 2, MaxRetries: -1,
		DialTimeout: 300 * time.Millisecond, ReadTimeout: time.Second})
	defer rdb.Close()
	ctx := context.Background()
	info, err := rdb.ClusterInfo(ctx).Result()
	if err != nil || len(info) < 16 || info[:16] != "cluster_state:ok" {
		return false
	}
	shards, err := rdb.ClusterShards(ctx).Result()
	if err != nil || len(shards) != groups {
		return false
	}
	for _, sh := range shards {
		if len(sh.Slots) == 0 || len(sh.Nodes) != perGroup {
			return false
		}
		primaries := 0
		for _, n := range sh.Nodes {
			if n.Port == 0 || n.IP == "" {
				return false
			}
			if n.Role == "master" {
				primaries++
			}
		}
		if primaries != 1 {
			return false
		}
	}
	return true
}

// flat returns the nodes of every group in one slice.
func flat(ps [][]*proc) []*proc {
	var out []*proc
	for _, g := range ps {
		out = append(out, g...)
	}
	return out
}
