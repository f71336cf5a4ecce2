package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestProcessShardedRestartFromSnapshots snapshots both groups of every
// process (RAFT.SNAPSHOT, META.SNAPSHOT), kills every process and starts
// them again on their --dir with their first flags (--bootstrap, --join
// and --cluster-seed are then ignored): every process routes every
// group's slots again and every key keeps its count. The shard section's
// own round trip is TestShardStateSurvivesSnapshotAndRestore's.
func TestProcessShardedRestartFromSnapshots(t *testing.T) {
	c := startShardedProcs(t, 2, nil)
	ctx := context.Background()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{c.groups[1][2].addr()}, Protocol: 2})
	defer cc.Close()
	take := func(key string) (bool, int64) {
		t.Helper()
		v, err := cc.Do(ctx, "RL.TOKEN", key, "1/h", 10).Slice()
		if err != nil {
			t.Fatalf("RL.TOKEN %s: %v", key, err)
		}
		return v[0] == int64(1), v[2].(int64)
	}
	keys := []string{c.keyIn(1, "snap"), c.keyIn(2, "snap")}
	for _, k := range keys {
		for i := 0; i < 6; i++ {
			take(k)
		}
	}
	for _, p := range c.all() {
		for _, cmd := range []string{"RAFT.SNAPSHOT", "META.SNAPSHOT"} {
			if _, err := p.doOn(cmd); err != nil {
				t.Fatalf("%s on %s: %v", cmd, p.id, err)
			}
		}
	}
	slotsBefore := fmt.Sprint(cc.ClusterSlots(ctx).Val())
	for _, p := range c.all() {
		p.kill()
	}
	for _, p := range c.all() {
		c.restart(p)
	}
	c.waitRouted()
	cc.ReloadState(ctx)
	for _, k := range keys {
		// A retry on a redirect is the client's; a refusal by the fence
		// would come back as TRYAGAIN until the client gives up.
		if ok, left := take(k); !ok || left != 3 {
			t.Fatalf("the 7th take on %s after the restart: allowed=%v remaining=%d; want true 3", k, ok, left)
		}
	}
	for _, p := range c.all() {
		rdb := redis.NewClient(&redis.Options{Addr: p.addr(), Protocol: 2})
		got := fmt.Sprint(rdb.ClusterSlots(ctx).Val())
		rdb.Close()
		if len(got) == 0 || strings.Count(got, "{") != strings.Count(slotsBefore, "{") {
			t.Fatalf("%s: CLUSTER SLOTS %s; before the restart %s", p.id, got, slotsBefore)
		}
	}
	members, err := metaMembers(c.groups[1][0])
	if err != nil || len(members) != 6 {
		t.Fatalf("META.MEMBERS after the restart: %v %v", members, err)
	}
}
