package cluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Resharding with real processes: a sharded cluster of 2 groups of 3
// sluice processes takes load from go-redis's ClusterClient on keys of
// slots 0-999 while those slots move to group 2 and back, the source's
// leader killed with kill -9 during the first move and the target's
// during the second.

// startReshardProcs starts groups of 3 processes each, as docs/cluster.md
// describes: group 1's first node starts the meta group, every other
// node joins it through that node.
func startReshardProcs(t *testing.T, groups int) [][]*proc {
	ps := newProcs(t, 3*groups)
	n := fmt.Sprint(groups)
	var out [][]*proc
	for g := 0; g < groups; g++ {
		gs := ps[3*g : 3*g+3]
		// Every start passes the cluster flags (a restart too); the seed
		// is the first node, once it has its port.
		for i, p := range gs {
			p.always = []string{"--cluster-group", fmt.Sprint(g + 1), "--cluster-groups", n, "--raft-fsync", "no"}
			if g > 0 || i > 0 {
				p.always = append(p.always, "--cluster-seed", ps[0].addr())
			}
			if i == 0 {
				p.always = append(p.always, "--bootstrap", "yes")
			} else {
				p.always = append(p.always, "--join", gs[0].addr())
			}
			p.start()
		}
		out = append(out, gs)
	}
	waitFor(t, 30*time.Second, func() bool {
		for _, g := range out {
			if g[0].info("members") != "3" || g[2].info("leader_id") == "" || g[1].info("leader_id") == "" {
				return false
			}
		}
		for _, p := range ps {
			if len(clusterSlots(p)) != groups {
				return false
			}
		}
		return true
	})
	return out
}

// clusterSlots is CLUSTER SLOTS as p answers it: each range's first slot
// to "last master", or nil if p does not answer.
func clusterSlots(p *proc) map[int64]string {
	rdb := redis.NewClient(&redis.Options{Addr: p.addr(), Protocol: 2, DialTimeout: 300 * time.Millisecond,
		ReadTimeout: time.Second, MaxRetries: -1})
	defer rdb.Close()
	slots, err := rdb.ClusterSlots(context.Background()).Result()
	if err != nil {
		return nil
	}
	out := map[int64]string{}
	for _, s := range slots {
		if len(s.Nodes) > 0 {
			out[int64(s.Start)] = fmt.Sprint(s.End, " ", s.Nodes[0].Addr)
		}
	}
	return out
}

func groupLeaderProc(t *testing.T, g []*proc) *proc {
	t.Helper()
	var ld *proc
	waitFor(t, 15*time.Second, func() bool { ld = leaderOf(g); return ld != nil && ld.info("ready") == "true" })
	return ld
}

// reshardClient is a cluster client seeded with a node of each of the
// first two groups, with room for the redirects a migration causes.
func reshardClient(groups [][]*proc) *redis.ClusterClient {
	return redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{groups[0][0].addr(), groups[1][0].addr()}, Protocol: 2,
		MaxRedirects: 40, MinRetryBackoff: 5 * time.Millisecond, MaxRetryBackoff: 200 * time.Millisecond,
		DialTimeout: 300 * time.Millisecond})
}

func TestProcessReshardKill9(t *testing.T) {
	groups := startReshardProcs(t, 2)
	all := append(append([]*proc(nil), groups[0]...), groups[1]...)
	cc := reshardClient(groups)
	defer cc.Close()
	ctx := context.Background()
	keys := movingKeys(0, 999, 60)
	l := startLoad(cc, keys, 4, isUnknown)
	time.Sleep(time.Second)

	move := func(to int, victim []*proc) {
		t.Helper()
		ld := groupLeaderProc(t, victim)
		epoch, err := cc.Do(ctx, "SLUICE.MIGRATE", "0-999", to, "TIMEOUT", 20000).Int64()
		if err != nil {
			t.Fatalf("SLUICE.MIGRATE 0-999 %d: %v", to, err)
		}
		time.Sleep(150 * time.Millisecond) // somewhere between the plan and the commit
		ld.kill()
		killed := time.Now()
		var state string
		waitFor(t, 60*time.Second, func() bool {
			for _, p := range all {
				if p == ld {
					continue
				}
				if state = migrationState(p, epoch); state != "committed" && state != "aborted" {
					return false
				}
			}
			return true
		})
		t.Logf("migration %d to group %d, %s's leader %s killed: %s %v after the kill", epoch, to,
			map[bool]string{true: "source", false: "target"}[victim[0] != groups[to-1][0]], ld.id, state,
			time.Since(killed).Round(time.Millisecond))
		// Every live node's CLUSTER SLOTS settles on the same owners.
		var views []string
		deadline := time.Now().Add(20 * time.Second)
		for {
			views = views[:0]
			same := true
			for _, p := range all {
				if p == ld {
					continue
				}
				s := fmt.Sprint(clusterSlots(p))
				views = append(views, p.id+": "+s)
				same = same && s == strings.SplitN(views[0], ": ", 2)[1] && s != "map[]"
			}
			if same {
				break
			}
			checkAlive(t)
			if time.Now().After(deadline) {
				t.Fatalf("CLUSTER SLOTS differ after 20 s:\n%s", strings.Join(views, "\n"))
			}
			time.Sleep(50 * time.Millisecond)
		}
		ld.start()
		time.Sleep(time.Second)
	}
	move(2, groups[0]) // kill -9 the source's leader
	move(1, groups[0]) // kill -9 the target's leader
	time.Sleep(500 * time.Millisecond)
	l.finish(t, cc)
}

// migrationState is the state SLUICE.MIGRATIONS on p gives epoch, or "".
func migrationState(p *proc, epoch int64) string {
	rdb := redis.NewClient(&redis.Options{Addr: p.addr(), Protocol: 2, DialTimeout: 300 * time.Millisecond,
		ReadTimeout: time.Second, MaxRetries: -1})
	defer rdb.Close()
	list, err := rdb.Do(context.Background(), "SLUICE.MIGRATIONS").Slice()
	if err != nil {
		return ""
	}
	for _, item := range list {
		kv, _ := item.([]any)
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[fmt.Sprint(kv[i])] = kv[i+1]
		}
		if m["epoch"] == epoch {
			return strings.TrimSpace(fmt.Sprint(m["state"]))
		}
	}
	return ""
}

// TestProcessAddRebalanceRemoveGroup adds a third group to a running
// cluster of two, spreads the slots over the three, drains the third and
// removes it, under load on keys of every part of the slot space.
func TestProcessAddRebalanceRemoveGroup(t *testing.T) {
	groups := startReshardProcs(t, 2)
	all := append(append([]*proc(nil), groups[0]...), groups[1]...)
	cc := reshardClient(groups)
	defer cc.Close()
	ctx := context.Background()
	// A client that still routes to a stopped node of the drained group
	// sees its connection refused: an attempt not sent, counted as unknown.
	l := startLoad(cc, movingKeys(0, 16383, 90), 4, isUnknown)
	time.Sleep(500 * time.Millisecond)

	// The third group: three more processes, joining the meta group.
	third := newProcs(t, 3)
	for i, p := range third {
		p.id = fmt.Sprintf("g3n%d", i+1)
		p.raftIP = fmt.Sprintf("127.0.0.%d", 30+i)
		p.always = []string{"--cluster-group", "3", "--cluster-groups", "3", "--raft-fsync", "no", "--cluster-seed", all[0].addr()}
		if i == 0 {
			p.always = append(p.always, "--bootstrap", "yes")
		} else {
			p.always = append(p.always, "--join", third[0].addr())
		}
		p.start()
	}
	waitFor(t, 30*time.Second, func() bool {
		return third[0].info("members") == "3" && strings.Contains(fmt.Sprint(clusterNodes(all[0])), third[0].addr())
	})
	rebalance := func(args ...any) {
		t.Helper()
		epochs, err := cc.Do(ctx, append([]any{"SLUICE.REBALANCE", "CHUNK", 1024, "TIMEOUT", 30000}, args...)...).Int64Slice()
		if err != nil || len(epochs) == 0 {
			t.Fatalf("SLUICE.REBALANCE %v = %v, %v", args, epochs, err)
		}
		start := time.Now()
		waitFor(t, 90*time.Second, func() bool {
			for _, e := range epochs {
				if st := migrationState(all[1], e); st != "committed" {
					if st == "aborted" {
						t.Fatalf("migration %d aborted", e)
					}
					return false
				}
			}
			return true
		})
		t.Logf("SLUICE.REBALANCE %v: %d migrations committed in %v", args, len(epochs), time.Since(start).Round(time.Millisecond))
	}
	rebalance()
	if slots := clusterSlots(all[2]); len(slots) < 3 {
		t.Fatalf("after adding group 3, CLUSTER SLOTS %v", slots)
	}
	rebalance("GROUPS", 1, 2)
	// Drained: stop its nodes, remove them from the meta group, forget it.
	admin := redis.NewClient(&redis.Options{Addr: all[1].addr(), Protocol: 2})
	defer admin.Close()
	for _, p := range third {
		p.kill()
		if err := admin.Do(ctx, "META.REMOVE", p.id).Err(); err != nil {
			t.Fatalf("META.REMOVE %s: %v", p.id, err)
		}
	}
	if err := admin.Do(ctx, "SLUICE.FORGET", 3).Err(); err != nil {
		t.Fatalf("SLUICE.FORGET 3: %v", err)
	}
	waitFor(t, 10*time.Second, func() bool {
		nodes := clusterNodes(all[4])
		for _, p := range third {
			if strings.Contains(nodes, p.addr()) {
				return false
			}
		}
		return nodes != ""
	})
	if slots := fmt.Sprint(clusterSlots(all[4])); strings.Contains(slots, third[0].addr()) {
		t.Fatalf("CLUSTER SLOTS after removing group 3: %s", slots)
	}
	time.Sleep(300 * time.Millisecond)
	l.finish(t, cc)
}

// clusterNodes is CLUSTER NODES as p answers it.
func clusterNodes(p *proc) string {
	rdb := redis.NewClient(&redis.Options{Addr: p.addr(), Protocol: 2, DialTimeout: 300 * time.Millisecond, MaxRetries: -1})
	defer rdb.Close()
	s, _ := rdb.ClusterNodes(context.Background()).Result()
	return s
}

// TestProcessReshardSoak interleaves migrations of random ranges, kill -9
// of random leaders at random instants and pauses (SIGSTOP) of random
// nodes, for SLUICE_RESHARD_SOAK rounds (unset: skipped).
func TestProcessReshardSoak(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("SLUICE_RESHARD_SOAK"))
	if rounds <= 0 {
		t.Skip("set SLUICE_RESHARD_SOAK=<rounds> to run the resharding soak")
	}
	groups := startReshardProcs(t, 2)
	all := append(append([]*proc(nil), groups[0]...), groups[1]...)
	cc := reshardClient(groups)
	defer cc.Close()
	ctx := context.Background()
	l := startLoad(cc, movingKeys(0, 16383, 120), 4, isUnknown)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("seed %d", seed)
	for r := 0; r < rounds; r++ {
		lo := rng.IntN(16000)
		hi := lo + rng.IntN(min(1000, 16383-lo))
		owner := slotOwnerGroup(t, all, lo, hi)
		if owner == 0 {
			continue // the range spans owners: pick again
		}
		epoch, err := cc.Do(ctx, "SLUICE.MIGRATE", fmt.Sprintf("%d-%d", lo, hi), 3-owner, "TIMEOUT", 5000).Int64()
		if err != nil {
			t.Logf("round %d: SLUICE.MIGRATE %d-%d: %v", r, lo, hi, err)
			continue
		}
		time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
		var victim *proc
		switch rng.IntN(3) {
		case 0:
			victim = leaderOf(groups[rng.IntN(2)])
			if victim != nil {
				victim.kill()
				time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
				victim.start()
			}
		case 1:
			victim = all[rng.IntN(len(all))]
			victim.signal(syscall.SIGSTOP)
			time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
			victim.signal(syscall.SIGCONT)
		}
		var state string
		waitFor(t, 60*time.Second, func() bool {
			state = migrationState(all[rng.IntN(len(all))], epoch)
			return state == "committed" || state == "aborted"
		})
		t.Logf("round %d: %d-%d from group %d: %s", r, lo, hi, owner, state)
	}
	time.Sleep(time.Second)
	l.finish(t, cc)
}

// slotOwnerGroup is the group (1 or 2, by its first node's address among
// all's) that CLUSTER SLOTS on a live node gives every slot of lo-hi, or
// 0 if they have more than one owner.
func slotOwnerGroup(t *testing.T, all []*proc, lo, hi int) int {
	t.Helper()
	var slots []redis.ClusterSlot
	for _, p := range all {
		rdb := redis.NewClient(&redis.Options{Addr: p.addr(), Protocol: 2, DialTimeout: 300 * time.Millisecond, MaxRetries: -1})
		slots, _ = rdb.ClusterSlots(context.Background()).Result()
		rdb.Close()
		if len(slots) > 0 {
			break
		}
	}
	group := 0
	for _, s := range slots {
		if s.End < lo || s.Start > hi {
			continue
		}
		if s.Start > lo || s.End < hi {
			return 0
		}
		for i, p := range all {
			for _, nd := range s.Nodes {
				if nd.Addr == p.addr() {
					group = 1 + i/3
				}
			}
		}
	}
	return group
}
