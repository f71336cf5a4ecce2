package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-rl/sluice/keyslot"
)

// Partitions of a sharded cluster of real processes, each node's Raft
// port behind a proxy that cuts callers off by their source address (a
// node's Raft traffic, for both its groups, leaves from its own
// 127.0.0.GI). A data group decides its own slots from its own log: a
// leader cut off from the meta group keeps deciding them, and losing the
// meta group's leader stops no group's decisions.

// startShardedProcsBehindProxies is startShardedProcs with every node's
// Raft port behind a proxy.
func startShardedProcsBehindProxies(t *testing.T, groups, perGroup int) [][]*proc {
	t.Helper()
	bin := buildSluice(t)
	base := t.TempDir()
	ps := make([][]*proc, groups)
	var all []*proc
	for g := 1; g <= groups; g++ {
		for i := 1; i <= perGroup; i++ {
			id := fmt.Sprintf("g%dn%d", g, i)
			p := &proc{t: t, bin: bin, id: id, raftIP: fmt.Sprintf("127.0.0.%d%d", g, i),
				dir: filepath.Join(base, id), logPath: filepath.Join(base, id+".log"), portsPath: filepath.Join(base, id+".ports")}
			p.always = []string{"--cluster-group", fmt.Sprint(g), "--cluster-groups", fmt.Sprint(groups)}
			p.px = startProxy(t, p.raftIP)
			p.advPort = p.px.port
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

// cut cuts p's Raft links with each of others, both ways.
func cut(p *proc, others ...*proc) {
	for _, o := range others {
		p.px.block(o.raftIP)
		o.px.block(p.raftIP)
	}
}

// keyOfGroup returns a key in the slots of data group g of 2.
func keyOfGroup(g int, prefix string) string {
	for i := 0; ; i++ {
		k := fmt.Sprintf("%s%d", prefix, i)
		if keyslot.Of([]byte(k))/(keyslot.Slots/2) == g-1 {
			return k
		}
	}
}

// decides takes one token of key through rdb, retrying redirects and
// CLUSTERDOWN until within; it fails t if no decision arrives.
func decides(t *testing.T, rdb interface {
	Do(context.Context, ...any) *redis.Cmd
}, key string, within time.Duration) {
	t.Helper()
	var err error
	for end := time.Now().Add(within); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		checkAlive(t)
		var v []any
		if v, err = rdb.Do(context.Background(), "RL.TOKEN", key, "1/h", 1000000).Slice(); err == nil {
			if v[0] != int64(1) {
				t.Fatalf("%s: %v; want admitted (capacity 1000000)", key, v)
			}
			return
		}
	}
	t.Fatalf("%s: no decision within %v: %v", key, within, err)
}

func TestProcessShardedPartitions(t *testing.T) {
	ps := startShardedProcsBehindProxies(t, 2, 3)
	g1, g2 := ps[0], ps[1]
	k1, k2 := keyOfGroup(1, "a"), keyOfGroup(2, "b")

	// Group 2's leader cut off from every node of group 1 (the meta
	// group's other voters): it keeps its group and decides its slots.
	l2 := leaderOf(g2)
	if l2 == nil {
		t.Fatal("group 2 has no leader")
	}
	cut(l2, g1...)
	direct := redis.NewClient(&redis.Options{Addr: l2.addr(), Protocol: 2, MaxRetries: -1})
	defer direct.Close()
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); {
		decides(t, direct, k2, time.Second)
		if role := l2.info("role"); role != "leader" {
			t.Fatalf("%s, cut off from the meta group only, is %s; want still leader of its group", l2.id, role)
		}
	}
	for _, p := range flat(ps) {
		p.px.heal()
	}

	// The meta group's leader cut off from every node: both groups decide
	// again, through cluster clients on the others.
	var ml *proc
	waitFor(t, 15*time.Second, func() bool { ml = metaLeaderOf(flat(ps)); return ml != nil })
	var rest []*proc
	var addrs []string
	for _, p := range flat(ps) {
		if p != ml {
			rest = append(rest, p)
			addrs = append(addrs, p.addr())
		}
	}
	cut(ml, rest...)
	// A client that starts afresh after each failed call, as an
	// application's reconnect does: go-redis keeps sending a slot to the
	// node it last knew while that node answers CLUSTERDOWN (the cut-off
	// old leader does until the others' meta replicas name the new one).
	cc := freshClusterClient{addrs: addrs}
	decides(t, &cc, k1, 30*time.Second)
	decides(t, &cc, k2, 30*time.Second)
	t.Logf("meta leader %s cut off; new meta leader %s", ml.id, idOf(metaLeaderOf(rest)))
}

// freshClusterClient is a go-redis ClusterClient made anew for every call,
// so that each call reads CLUSTER SLOTS again.
type freshClusterClient struct{ addrs []string }

func (f *freshClusterClient) Do(ctx context.Context, args ...any) *redis.Cmd {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: f.addrs, Protocol: 2, MaxRedirects: 8,
		DialTimeout: 300 * time.Millisecond, ReadTimeout: 5 * time.Second})
	defer cc.Close()
	return cc.Do(ctx, args...)
}

// metaLeaderOf returns the node among ps whose META.MEMBERS names itself
// leader, or nil.
func metaLeaderOf(ps []*proc) *proc {
	for _, p := range ps {
		rdb := redis.NewClient(&redis.Options{Addr: p.addr(), Protocol: 2, MaxRetries: -1, ReadTimeout: time.Second})
		v, err := rdb.Do(context.Background(), "META.MEMBERS").Slice()
		rdb.Close()
		if err != nil {
			continue
		}
		for _, m := range v {
			fields, _ := m.([]any)
			if len(fields) == 8 && fields[1] == p.id && fields[7] == "leader" {
				return p
			}
		}
	}
	return nil
}
