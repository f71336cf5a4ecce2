package cluster

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-rl/sluice/keyslot"
)

// Unchanged cluster clients against a sharded cluster of real processes:
// 3 data groups of 3 nodes. Every client decides on keys in all three
// groups, exactly; every node reports the same slot map; a command sent
// to the wrong group answers MOVED and the client follows it; keys in
// different slots answer CROSSSLOT and consume nothing; READONLY reads are
// served by the followers; policies and users set on one node apply on
// every group.

const shardedGroups = 3

// groupOfKey is the data group that owns key's slot on a new cluster of
// shardedGroups groups (the even split the meta leader seeds).
func groupOfKey(key string) int {
	s := keyslot.Of([]byte(key))
	for _, r := range evenSlots(shardedGroups) {
		if s >= int(r.lo) && s <= int(r.hi) {
			return int(r.group)
		}
	}
	return 0
}

// keysOverGroups returns prefix:0, prefix:1 … until each group owns
// perGroup of them, in group order: perGroup keys of group 1, then of 2 ….
func keysOverGroups(prefix string, perGroup int) []string {
	by := make([][]string, shardedGroups)
	for i := 0; ; i++ {
		k := fmt.Sprintf("%s:%d", prefix, i)
		g := groupOfKey(k) - 1
		if len(by[g]) < perGroup {
			by[g] = append(by[g], k)
		}
		full := true
		for _, ks := range by {
			full = full && len(ks) == perGroup
		}
		if full {
			return slices.Concat(by...)
		}
	}
}

// errorCount returns how many error replies with code p has written
// (INFO errorstats).
func errorCount(t *testing.T, p *proc, code string) int {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: p.addr(), Protocol: 2, MaxRetries: -1})
	defer rdb.Close()
	text, err := rdb.Info(context.Background(), "errorstats").Result()
	if err != nil {
		t.Fatalf("INFO errorstats on %s: %v", p.id, err)
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "errorstat_"+code+":count="); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// movedReplies is the number of MOVED replies all of ps have written.
func movedReplies(t *testing.T, ps []*proc) int {
	n := 0
	for _, p := range ps {
		n += errorCount(t, p, "MOVED")
	}
	return n
}

// movedHook counts the MOVED replies a go-redis ClusterClient's node
// clients receive (ClusterClient.OnNewNode adds it to each).
type movedHook struct{ n atomic.Int64 }

func (h *movedHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *movedHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err != nil && strings.HasPrefix(err.Error(), "MOVED ") {
			h.n.Add(1)
		}
		return err
	}
}

func (h *movedHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// clusterClient is a go-redis ClusterClient seeded with seed, counting
// the MOVED replies it follows.
func clusterClient(t *testing.T, seed *proc, opt redis.ClusterOptions) (*redis.ClusterClient, *movedHook) {
	t.Helper()
	opt.Addrs = []string{seed.addr()}
	cc := redis.NewClusterClient(&opt)
	t.Cleanup(func() { cc.Close() })
	h := &movedHook{}
	cc.OnNewNode(func(rdb *redis.Client) { rdb.AddHook(h) })
	return cc, h
}

// takeSeven takes key (capacity 5) seven times through do and returns how
// many were admitted, failing on a reply whose remaining count is wrong.
func takeSeven(t *testing.T, key string, do func(args ...any) ([]int64, error), args ...any) int {
	t.Helper()
	admitted := 0
	for i := range 7 {
		v, err := do(args...)
		if err != nil {
			t.Fatalf("%s: take %d: %v", key, i+1, err)
		}
		if want := int64(max(0, 4-i)); v[2] != want {
			t.Fatalf("%s: take %d remaining = %d; want %d (%v)", key, i+1, v[2], want, v)
		}
		admitted += int(v[0])
	}
	return admitted
}

// leaders returns each group's leader (ps by group).
func leaders(t *testing.T, ps [][]*proc) []*proc {
	t.Helper()
	out := make([]*proc, len(ps))
	waitFor(t, 15*time.Second, func() bool {
		for i, g := range ps {
			if out[i] = leaderOf(g); out[i] == nil {
				return false
			}
		}
		return true
	})
	return out
}

func TestProcessShardedClients(t *testing.T) {
	ps := startShardedProcs(t, shardedGroups)
	all := flat(ps)
	ld := leaders(t, ps)
	ctx := context.Background()

	t.Run("slots-and-shards-agree", func(t *testing.T) {
		// range → master address then replica addresses, sorted.
		type view map[string][]string
		slotsView := func(p *proc) view {
			rdb := redis.NewClient(&redis.Options{Addr: p.addr(), Protocol: 2, MaxRetries: -1})
			defer rdb.Close()
			slots, err := rdb.ClusterSlots(ctx).Result()
			if err != nil {
				t.Fatalf("CLUSTER SLOTS on %s: %v", p.id, err)
			}
			v := view{}
			for _, s := range slots {
				var addrs []string
				for _, n := range s.Nodes {
					addrs = append(addrs, n.Addr)
				}
				slices.Sort(addrs[1:])
				v[fmt.Sprintf("%d-%d", s.Start, s.End)] = addrs
			}
			return v
		}
		shardsView := func(p *proc) view {
			rdb := redis.NewClient(&redis.Options{Addr: p.addr(), Protocol: 2, MaxRetries: -1})
			defer rdb.Close()
			shards, err := rdb.ClusterShards(ctx).Result()
			if err != nil {
				t.Fatalf("CLUSTER SHARDS on %s: %v", p.id, err)
			}
			v := view{}
			for _, sh := range shards {
				var master string
				var replicas []string
				for _, n := range sh.Nodes {
					addr := fmt.Sprintf("%s:%d", n.IP, n.Port)
					if n.Role == "master" {
						master = addr
					} else {
						replicas = append(replicas, addr)
					}
				}
				slices.Sort(replicas)
				for _, r := range sh.Slots {
					v[fmt.Sprintf("%d-%d", r.Start, r.End)] = append([]string{master}, replicas...)
				}
			}
			return v
		}
		want := view{}
		for g, r := range evenSlots(shardedGroups) {
			var replicas []string
			for _, p := range othersThan(ps[g], ld[g]) {
				replicas = append(replicas, p.addr())
			}
			slices.Sort(replicas)
			want[fmt.Sprintf("%d-%d", r.lo, r.hi)] = append([]string{ld[g].addr()}, replicas...)
		}
		for _, p := range all {
			if got := slotsView(p); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("CLUSTER SLOTS on %s = %v; want %v (each group's leader first)", p.id, got, want)
			}
			if got := shardsView(p); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("CLUSTER SHARDS on %s = %v; want %v", p.id, got, want)
			}
		}
	})

	t.Run("wrong-node-answers-moved", func(t *testing.T) {
		key := keysOverGroups("wrong", 1)[1] // group 2's
		slot := keyslot.Of([]byte(key))
		want := fmt.Sprintf("MOVED %d %s", slot, ld[1].addr())
		for _, p := range []*proc{ld[0], othersThan(ps[2], ld[2])[0]} {
			rdb := redis.NewClient(&redis.Options{Addr: p.addr(), Protocol: 2, MaxRetries: -1})
			err := rdb.Do(ctx, "RL.TOKEN", key, "1/h", 5).Err()
			rdb.Close()
			if err == nil || err.Error() != want {
				t.Errorf("RL.TOKEN %s on %s (group %s) = %v; want %s", key, p.id, p.id[:2], err, want)
			}
		}
		// Nothing was applied: the owner still holds the full bucket.
		cc, _ := clusterClient(t, ld[1], redis.ClusterOptions{})
		if v, err := cc.Do(ctx, "RL.TOKEN", key, "1/h", 5, 0).Int64Slice(); err != nil || v[2] != 5 {
			t.Fatalf("peek %s after two MOVED = %v, %v; want 5 remaining", key, v, err)
		}
		// redis-cli -c follows the redirect: one MOVED, then the owner
		// decides.
		cli, err := exec.LookPath("redis-cli")
		if err != nil {
			t.Skip("redis-cli is missing")
		}
		before := errorCount(t, ld[0], "MOVED")
		out, err := exec.Command(cli, "-c", "-p", fmt.Sprint(ld[0].port), "RL.TOKEN", key, "1/h", "5").CombinedOutput()
		if err != nil || strings.Join(strings.Fields(string(out))[:3], " ") != "1 5 4" {
			t.Fatalf("redis-cli -c RL.TOKEN %s through group 1 = %q, %v; want admitted with 4 left", key, out, err)
		}
		if n := errorCount(t, ld[0], "MOVED") - before; n != 1 {
			t.Errorf("group 1's leader wrote %d MOVED to redis-cli -c; want 1", n)
		}
	})

	t.Run("go-redis", func(t *testing.T) {
		before := movedReplies(t, all)
		cc, moved := clusterClient(t, ps[2][1], redis.ClusterOptions{})
		keys := keysOverGroups("go-redis", 3)
		for _, k := range keys {
			do := func(args ...any) ([]int64, error) { return cc.Do(ctx, args...).Int64Slice() }
			if n := takeSeven(t, k, do, "RL.TOKEN", k, "1/h", 5); n != 5 {
				t.Errorf("%s (group %d): a key of capacity 5 taken 7 times admitted %d; want 5", k, groupOfKey(k), n)
			}
		}
		// Each group decided its own keys: their state is on their owners.
		for _, k := range keys {
			if got := peek(t, ld[groupOfKey(k)-1], k, 5); got != 0 {
				t.Errorf("%s on its group's leader: remaining %d; want 0", k, got)
			}
		}
		if n := moved.n.Load(); n != 0 {
			t.Errorf("go-redis followed %d MOVED for RL.TOKEN; want 0 (it routes by argument 1)", n)
		}
		t.Logf("go-redis %d decisions on %d keys over %d groups: %d MOVED followed by the client, %d written by the nodes",
			7*len(keys), len(keys), shardedGroups, moved.n.Load(), movedReplies(t, all)-before)
	})

	t.Run("redis-cli", func(t *testing.T) {
		cli, err := exec.LookPath("redis-cli")
		if err != nil {
			t.Skip("redis-cli is missing")
		}
		before := movedReplies(t, all)
		keys := keysOverGroups("redis-cli", 1)
		for _, k := range keys {
			do := func(args ...any) ([]int64, error) {
				out, err := exec.Command(cli, "-c", "-p", fmt.Sprint(ps[0][1].port), "RL.TOKEN", k, "1/h", "5").CombinedOutput()
				if err != nil {
					return nil, fmt.Errorf("%v: %s", err, out)
				}
				var v []int64
				for _, f := range strings.Fields(string(out)) {
					if n, err := strconv.ParseInt(f, 10, 64); err == nil {
						v = append(v, n)
					}
				}
				if len(v) != 5 {
					return nil, fmt.Errorf("reply %q", out)
				}
				return v, nil
			}
			if n := takeSeven(t, k, do); n != 5 {
				t.Errorf("%s (group %d): redis-cli -c admitted %d of 7 at capacity 5; want 5", k, groupOfKey(k), n)
			}
		}
		// Every call is a fresh redis-cli: 7 per key of another group
		// than the one asked.
		if got := movedReplies(t, all) - before; got != 14 {
			t.Errorf("the nodes wrote %d MOVED to redis-cli -c; want 14 (7 per key of groups 2 and 3)", got)
		}
	})

	// The Node, Python and newest go-redis cluster clients of the client
	// matrix, each seeded with a node of another group. go-redis 9.23
	// also decides RL.CHECK on each key as a subject, routed by the
	// subject from COMMAND's key positions.
	matrixPolicy := redis.NewClient(&redis.Options{Addr: all[0].addr(), Protocol: 2})
	if err := matrixPolicy.Do(ctx, "RL.POLICY", "SET", "matrix", "TOKEN", "1/h", 5).Err(); err != nil {
		t.Fatal(err)
	}
	matrixPolicy.Close()
	type matrixRun struct {
		client, name string
		byKey        bool // ioredis: route RL.TOKEN by its key (a Command with its keys set)
	}
	runs := []matrixRun{{"ioredis5", "ioredis5", false}, {"ioredis5", "ioredis5/by-key", true},
		{"ioredis6", "ioredis6", false}, {"ioredis6", "ioredis6/by-key", true},
		{"redis4", "redis4", false}, {"redis5", "redis5", false}, {"redis6", "redis6", false},
		{"redis-py", "redis-py", false}, {"go-redis-9.23", "go-redis-9.23", false}}
	for i, r := range runs {
		seed := all[(2*i+1)%len(all)]
		t.Run(r.name, func(t *testing.T) {
			keys := keysOverGroups(strings.ReplaceAll(r.name, "/", "-")+":"+strconv.FormatInt(time.Now().UnixNano(), 36), 2)
			env := []string{"SLUICE_KEYS=" + strings.Join(keys, ",")}
			admitted, decisions := 5*len(keys), 7*len(keys)+2
			switch {
			case r.client == "go-redis-9.23":
				env, admitted, decisions = append(env, "SLUICE_POLICY=matrix"), 2*admitted, 14*len(keys)
			case r.byKey:
				env = append(env, "SLUICE_ROUTE_BY_KEY=1")
			}
			before := movedReplies(t, all)
			got := runClusterScript(t, seed.port, r.client, env...)
			want := fmt.Sprintf("admitted=%d slots=0-5460:3,5461-10921:3,10922-16383:3", admitted)
			if got != want {
				t.Fatalf("%s through %s: %s; want %s", r.name, seed.id, got, want)
			}
			for _, k := range keys {
				if got := peek(t, ld[groupOfKey(k)-1], k, 5); got != 0 {
					t.Errorf("%s on its group's leader: remaining %d; want 0", k, got)
				}
			}
			moved := movedReplies(t, all) - before
			t.Logf("%s: %d decisions on %d keys over %d groups, %d MOVED written by the nodes",
				r.name, decisions, len(keys), shardedGroups, moved)
			// Every client but ioredis's call() routes each command by its
			// key, from its own table or COMMAND's key positions.
			if (r.byKey || !strings.HasPrefix(r.client, "ioredis")) && moved != 0 {
				t.Errorf("%s caused %d MOVED; want 0: every command routed by its key", r.name, moved)
			}
		})
	}

	t.Run("crossslot", func(t *testing.T) {
		cc, _ := clusterClient(t, ps[1][2], redis.ClusterOptions{})
		keys := keysOverGroups("cross", 1)
		a, b := keys[0], keys[2] // groups 1 and 3
		for _, k := range []string{a, b} {
			if err := cc.Do(ctx, "RL.TOKEN", k, "10/s", 20).Err(); err != nil {
				t.Fatal(err)
			}
		}
		const crossslot = "CROSSSLOT Keys in request don't hash to the same slot"
		for _, p := range all {
			rdb := redis.NewClient(&redis.Options{Addr: p.addr(), Protocol: 2, MaxRetries: -1})
			err := rdb.Do(ctx, "RL.ALL", 1, "TOKEN", a, "10/s", 20, "TOKEN", b, "10/s", 20).Err()
			rdb.Close()
			if err == nil || err.Error() != crossslot {
				t.Errorf("RL.ALL on keys of groups 1 and 3 through %s = %v; want %s", p.id, err, crossslot)
			}
		}
		if err := cc.Do(ctx, "RL.ALL", 1, "TOKEN", a, "10/s", 20, "TOKEN", b, "10/s", 20).Err(); err == nil || err.Error() != crossslot {
			t.Errorf("RL.ALL across slots through the cluster client = %v; want %s", err, crossslot)
		}
		for _, k := range []string{a, b} {
			if v, err := cc.Do(ctx, "RL.TOKEN", k, "10/s", 20, 0).Int64Slice(); err != nil || v[2] != 19 {
				t.Errorf("peek %s after the CROSSSLOT RL.ALLs = %v, %v; want 19 left (one take before)", k, v, err)
			}
		}
		// With one hash tag the keys share a slot.
		v, err := cc.Do(ctx, "RL.ALL", 1, "TOKEN", "{u42}:s", "10/s", 20, "TOKEN", "{u42}:d", "1000/d", 1000).Slice()
		if err != nil || len(v) != 3 || v[0] != int64(1) {
			t.Fatalf("RL.ALL 1 TOKEN {u42}:s 10/s 20 TOKEN {u42}:d 1000/d 1000 = %v, %v; want allowed", v, err)
		}
		owner := ld[groupOfKey("{u42}")-1]
		if s, d := peek(t, owner, "{u42}:s", 20), peek(t, owner, "{u42}:d", 1000); d != 999 || s != 19 {
			t.Errorf("after the tagged RL.ALL: {u42}:d %d, {u42}:s %d left; want 999 and 19", d, s)
		}
		// RL.CHECK with subjects in two slots.
		if err := cc.Do(ctx, "RL.POLICY", "SET", "cross-pol", "TOKEN", "10/s", 20).Err(); err != nil {
			t.Fatal(err)
		}
		err = cc.Do(ctx, "RL.CHECK", "cross-pol", a, "cross-pol", b).Err()
		if err == nil || err.Error() != crossslot {
			t.Errorf("RL.CHECK with subjects of groups 1 and 3 = %v; want %s", err, crossslot)
		}
	})

	t.Run("readonly-reads-on-followers", func(t *testing.T) {
		keys := keysOverGroups("ro", 1)
		rw, _ := clusterClient(t, ps[0][0], redis.ClusterOptions{})
		for _, k := range keys {
			if err := rw.Do(ctx, "RL.TOKEN", k, "1/h", 5).Err(); err != nil {
				t.Fatal(err)
			}
		}
		// A follower's READONLY reads are of its own replica: wait until
		// every one has applied the takes.
		waitFor(t, 10*time.Second, func() bool {
			for _, k := range keys {
				for _, p := range ps[groupOfKey(k)-1] {
					if peek(t, p, k, 5) != 4 {
						return false
					}
				}
			}
			return true
		})
		before := map[string]int{}
		for _, p := range all {
			before[p.id], _ = strconv.Atoi(commandCalls(t, p, "rl.info"))
		}
		ro, moved := clusterClient(t, ps[1][0], redis.ClusterOptions{ReadOnly: true})
		const rounds = 5
		for range rounds {
			for _, k := range keys {
				v, err := ro.Do(ctx, "RL.INFO", k).Result()
				if err != nil || !strings.Contains(fmt.Sprint(v), "token") {
					t.Fatalf("RL.INFO %s through a ReadOnly ClusterClient = %v, %v", k, v, err)
				}
			}
		}
		for g, grp := range ps {
			served := 0
			for _, p := range grp {
				n, _ := strconv.Atoi(commandCalls(t, p, "rl.info"))
				if p == ld[g] && n != before[p.id] {
					t.Errorf("group %d's leader %s served %d RL.INFO; want the followers to", g+1, p.id, n-before[p.id])
				}
				served += n - before[p.id]
			}
			if served != rounds {
				t.Errorf("group %d served %d RL.INFO of its key; want %d", g+1, served, rounds)
			}
		}
		if n := moved.n.Load(); n != 0 {
			t.Errorf("the ReadOnly client followed %d MOVED; want 0", n)
		}
	})

	t.Run("policies-and-users-cluster-wide", func(t *testing.T) {
		// Set on a follower of group 2; in force there on the reply, and
		// on every node once its meta replica has applied it.
		admin := redis.NewClient(&redis.Options{Addr: othersThan(ps[1], ld[1])[0].addr(), Protocol: 2, MaxRetries: -1})
		defer admin.Close()
		if err := admin.Do(ctx, "RL.POLICY", "SET", "wide", "TOKEN", "1/h", 5).Err(); err != nil {
			t.Fatalf("RL.POLICY SET on a follower: %v", err)
		}
		set := time.Now()
		waitFor(t, 5*time.Second, func() bool {
			for _, p := range all {
				rdb := redis.NewClient(&redis.Options{Addr: p.addr(), Protocol: 2, MaxRetries: -1})
				err := rdb.Do(ctx, "RL.POLICY", "GET", "wide").Err()
				rdb.Close()
				if err != nil {
					return false
				}
			}
			return true
		})
		t.Logf("RL.POLICY SET on %s: known on all %d nodes within %v", othersThan(ps[1], ld[1])[0].id, len(all), time.Since(set).Round(time.Millisecond))
		cc, moved := clusterClient(t, ps[2][0], redis.ClusterOptions{})
		before := movedReplies(t, all)
		subjects := keysOverGroups("subject", 2)
		for _, s := range subjects {
			do := func(args ...any) ([]int64, error) { return cc.Do(ctx, args...).Int64Slice() }
			if n := takeSeven(t, s, do, "RL.CHECK", "wide", s); n != 5 {
				t.Errorf("RL.CHECK wide %s (group %d) admitted %d of 7; want 5", s, groupOfKey(s), n)
			}
		}
		// go-redis routes a Do by argument 1, here the policy: each
		// subject of another group than the policy name's costs a MOVED;
		// with the subject's position set (as the client package does)
		// none does.
		t.Logf("RL.CHECK through go-redis Do: %d decisions on %d subjects, %d MOVED followed (%d written by the nodes)",
			7*len(subjects), len(subjects), moved.n.Load(), movedReplies(t, all)-before)
		followed := moved.n.Load()
		for _, s := range subjects {
			cmd := redis.NewSliceCmd(ctx, "RL.CHECK", "wide", s, 0)
			cmd.SetFirstKeyPos(2)
			if err := cc.Process(ctx, cmd); err != nil {
				t.Fatalf("RL.CHECK wide %s 0 with the subject's position: %v", s, err)
			}
		}
		if n := moved.n.Load() - followed; n != 0 {
			t.Errorf("RL.CHECK routed by its subject followed %d MOVED; want 0", n)
		}

		// A user made on group 3's leader logs in on every node.
		if err := redis.NewClient(&redis.Options{Addr: ld[2].addr(), Protocol: 2}).Do(ctx,
			"ACL", "SETUSER", "wide-user", "on", ">wide-pw", "~*", "+@all").Err(); err != nil {
			t.Fatalf("ACL SETUSER: %v", err)
		}
		set = time.Now()
		waitFor(t, 5*time.Second, func() bool {
			for _, p := range all {
				rdb := redis.NewClient(&redis.Options{Addr: p.addr(), Protocol: 2, MaxRetries: -1})
				err := rdb.Do(ctx, "AUTH", "wide-user", "wide-pw").Err()
				rdb.Close()
				if err != nil {
					return false
				}
			}
			return true
		})
		t.Logf("ACL SETUSER on %s: AUTH works on all %d nodes within %v", ld[2].id, len(all), time.Since(set).Round(time.Millisecond))
		auth, _ := clusterClient(t, ps[0][2], redis.ClusterOptions{Username: "wide-user", Password: "wide-pw"})
		for _, k := range keysOverGroups("as-user", 1) {
			if err := auth.Do(ctx, "RL.TOKEN", k, "1/h", 5).Err(); err != nil {
				t.Errorf("RL.TOKEN %s as wide-user: %v", k, err)
			}
		}
	})
}
