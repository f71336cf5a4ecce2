package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A sharded cluster of real processes: groups data groups of perGroup
// nodes each, every node also a replica of the meta group (docs/cluster.md).
// Node gGnI's Raft traffic uses its own loopback address 127.0.0.GI (g1n1
// on 127.0.0.11, g3n2 on 127.0.0.32), so that tests can tell callers
// apart; every port is chosen by the kernel and read from the ports file.

// startShardedProcs starts the cluster and returns its nodes by group
// (ps[0] is group 1; each group's first node bootstrapped it). extra are
// flags every node passes at every start. It returns once every node's
// CLUSTER SHARDS names all groups, each with a primary and perGroup
// nodes at known addresses, and every group owns its slots. A node that
// exits unexpectedly fails the test at once with its log (waitFor).
func startShardedProcs(t *testing.T, groups, perGroup int, extra ...string) [][]*proc {
	t.Helper()
	bin := buildSluice(t)
	base := t.TempDir()
	ps := make([][]*proc, groups)
	var all []*proc
	for g := 1; g <= groups; g++ {
		for i := 1; i <= perGroup; i++ {
			id := fmt.Sprintf("g%dn%d", g, i)
			p := &proc{t: t, bin: bin, id: id, raftIP: fmt.Sprintf("127.0.0.%d%d", g, i),
				dir: filepath.Join(base, id), logPath: filepath.Join(base, id+".log"),
				portsPath: filepath.Join(base, id+".ports")}
			p.always = append([]string{"--cluster-group", fmt.Sprint(g), "--cluster-groups", fmt.Sprint(groups)}, extra...)
			ps[g-1] = append(ps[g-1], p)
			all = append(all, p)
		}
	}
	t.Cleanup(func() {
		for _, p := range all {
			p.kill()
		}
		if t.Failed() {
			for _, p := range all {
				t.Logf("--- %s log:\n%s", p.id, p.logTail())
			}
		}
	})
	seed := ps[0][0]
	seed.start("--bootstrap", "yes")
	waitFor(t, 15*time.Second, func() bool { return seed.info("role") == "leader" && seed.info("ready") == "true" })
	for _, g := range ps[1:] {
		g[0].start("--bootstrap", "yes", "--cluster-seed", seed.addr())
	}
	for _, g := range ps {
		for _, p := range g[1:] {
			p.start("--join", g[0].addr(), "--cluster-seed", seed.addr())
		}
	}
	waitFor(t, 45*time.Second, func() bool {
		for _, p := range all {
			if !clusterComplete(p, groups, perGroup) {
				return false
			}
		}
		return true
	})
	return ps
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
