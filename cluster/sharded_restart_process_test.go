package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestProcessShardedRestartFromSnapshots snapshots both groups of every
// process (RAFT.SNAPSHOT, META.SNAPSHOT), kills every process and starts
// them again on their --dir with their first flags (--bootstrap, --join
// and --cluster-seed are then ignored): every process routes every
// group's slots again and every key keeps its count. The shard section's
// own round trip is TestShardStateSurvivesSnapshotAndRestore's.
func TestProcessShardedRestartFromSnapshots(t *testing.T) {
	c := startShardedCluster(t, 2, nil)
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
			// Raft refuses a snapshot until the replica has applied the
			// latest configuration entry (a member's join, just before).
			var err error
			waitFor(t, 15*time.Second, func() bool {
				_, err = p.doOn(cmd)
				return err == nil || !strings.Contains(err.Error(), "cannot take snapshot now")
			})
			if err != nil {
				t.Fatalf("%s on %s: %v", cmd, p.id, err)
			}
		}
	}
	before := c.settledSlots()
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
	if after := c.settledSlots(); after != before {
		t.Fatalf("CLUSTER SLOTS after the restart: %s; before: %s", after, before)
	}
	members, err := metaMembers(c.groups[1][0])
	if err != nil || len(members) != 6 {
		t.Fatalf("META.MEMBERS after the restart: %v %v", members, err)
	}
}

// settledSlots waits until every process's CLUSTER SLOTS lists the same
// ranges, each with its group's three processes, and returns them as
// text: each range with its nodes' addresses in order (the primary may
// differ from one call to the next).
func (c *shardedProcs) settledSlots() string {
	c.t.Helper()
	var view string
	waitFor(c.t, 15*time.Second, func() bool {
		views := map[string]bool{}
		for _, p := range c.all() {
			rdb := redis.NewClient(&redis.Options{Addr: p.addr(), Protocol: 2, MaxRetries: -1})
			slots, err := rdb.ClusterSlots(context.Background()).Result()
			rdb.Close()
			if err != nil {
				return false
			}
			var parts []string
			for _, s := range slots {
				var addrs []string
				for _, n := range s.Nodes {
					addrs = append(addrs, n.Addr)
				}
				if len(addrs) != 3 {
					return false
				}
				sort.Strings(addrs)
				parts = append(parts, fmt.Sprintf("%d-%d %v", s.Start, s.End, addrs))
			}
			sort.Strings(parts)
			view = strings.Join(parts, "; ")
			views[view] = true
		}
		return len(views) == 1
	})
	return view
}
