package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A group of three processes that load the same --policies file: RL.CHECK
// through any node decides on the one state the group replicates, with
// the same rules; RL.POLICY SET and DEL through a follower reach every
// node through the log and survive a snapshot and restart; every node
// reports the same rules hash.
func TestProcessGroupDecidesPoliciesFromTheSameRulesFile(t *testing.T) {
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	text := "policies:\n  - name: api\n    algorithm: fixed\n    limit: 5\n    window: 1h\n"
	if err := os.WriteFile(rules, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	ps := newProcs(t, 3)
	ps[0].start("--bootstrap", "yes", "--policies", rules)
	waitFor(t, 10*time.Second, func() bool { return ps[0].info("role") == "leader" && ps[0].info("ready") == "true" })
	for _, p := range ps[1:] {
		p.start("--join", ps[0].addr(), "--policies", rules)
	}
	waitFor(t, 15*time.Second, func() bool { return ps[0].info("members") == "3" && ps[2].info("leader_id") != "" })

	// Five units in all, asked through the leader and both followers.
	var got []string
	for i, p := range []*proc{ps[0], ps[1], ps[2], ps[1], ps[0], ps[2]} {
		v, err := p.do("RL.CHECK", "api", "user:42")
		if err != nil {
			t.Fatalf("call %d through %s: %v", i, p.id, err)
		}
		list := v.([]any)
		got = append(got, fmt.Sprintf("%v/%v", list[0], list[2]))
	}
	if want := "1/4 1/3 1/2 1/1 1/0 0/0"; strings.Join(got, " ") != want {
		t.Fatalf("allowed/remaining through n1 n2 n3 n2 n1 n3 = %s; want %s", strings.Join(got, " "), want)
	}

	// RL.POLICY SET on a follower goes through the log: every node then
	// decides with it, on the one replicated state; a file's name stays
	// read-only.
	if _, err := ps[1].do("RL.POLICY", "SET", "other", "TOKEN", "1/h", "10"); err != nil {
		t.Fatalf("RL.POLICY SET through a follower: %v", err)
	}
	for i, p := range ps {
		v, err := p.do("RL.CHECK", "other", "u")
		if err != nil {
			t.Fatalf("RL.CHECK other through %s: %v", p.id, err)
		}
		if got, want := fmt.Sprint(v.([]any)[:3]), fmt.Sprintf("[1 10 %d]", 9-i); got != want {
			t.Fatalf("RL.CHECK other through %s = %s; want %s", p.id, got, want)
		}
	}
	if _, err := ps[2].do("RL.POLICY", "SET", "api", "TOKEN", "1/h", "10"); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("RL.POLICY SET of the file's policy = %v; want read-only", err)
	}
	// Overrides set through a follower go through the log too: every node
	// decides the overridden subjects with them, on the one state.
	for _, args := range [][]any{
		{"RL.OVERRIDE", "SET", "api", "vip", "FIXED", "50", "1h"},
		{"RL.OVERRIDE", "SET", "api", "evil", "DENY"},
		{"RL.OVERRIDE", "SET", "api", "ops", "UNLIMITED"},
	} {
		if _, err := ps[2].do(args...); err != nil {
			t.Fatalf("%v through a follower: %v", args, err)
		}
	}
	for i, p := range ps {
		for _, c := range []struct{ subject, want string }{
			{"vip", fmt.Sprintf("[1 50 %d 0]", 49-i)}, {"evil", "[0 5 0 -1]"}, {"ops", "[1 5 5 0]"},
		} {
			v, err := p.do("RL.CHECK", "api", c.subject)
			if err != nil {
				t.Fatalf("RL.CHECK api %s through %s: %v", c.subject, p.id, err)
			}
			if got := fmt.Sprint(v.([]any)[:4]); got != c.want {
				t.Fatalf("RL.CHECK api %s through %s = %s; want %s", c.subject, p.id, got, c.want)
			}
		}
	}
	// A follower snapshots, is killed and restarts: the policy and the
	// overrides come back from its snapshot.
	if _, err := ps[2].do("RAFT.SNAPSHOT"); err != nil {
		t.Fatalf("RAFT.SNAPSHOT: %v", err)
	}
	ps[2].kill()
	ps[2].start("--policies", rules)
	waitFor(t, 15*time.Second, func() bool { return ps[2].info("leader_id") != "" })
	waitFor(t, 10*time.Second, func() bool {
		v, err := ps[2].do("RL.POLICY", "GET", "other")
		return err == nil && strings.Contains(strings.ToLower(fmt.Sprint(v)), "token")
	})
	// RL.OVERRIDE LIST reads the node's own replica: the restarted one has them.
	waitFor(t, 10*time.Second, func() bool {
		v, err := ps[2].do("RL.OVERRIDE", "LIST", "api", "0", "COUNT", "1000")
		return err == nil && len(v.([]any)[1].([]any)) == 3
	})
	if v, err := ps[0].do("RL.OVERRIDE", "DEL", "api", "evil"); err != nil || fmt.Sprint(v) != "1" {
		t.Fatalf("RL.OVERRIDE DEL through the leader = %v, %v; want 1", v, err)
	}
	if v, err := ps[2].do("RL.CHECK", "api", "evil"); err != nil || fmt.Sprint(v.([]any)[:3]) != "[1 5 4]" {
		t.Fatalf("RL.CHECK api evil through the restarted follower after the DEL = %v, %v; want the policy's", v, err)
	}
	// RL.POLICY DEL on another follower removes it everywhere.
	if v, err := ps[1].do("RL.POLICY", "DEL", "other"); err != nil || fmt.Sprint(v) != "1" {
		t.Fatalf("RL.POLICY DEL through a follower = %v, %v; want 1", v, err)
	}
	for _, p := range ps {
		waitFor(t, 10*time.Second, func() bool {
			_, err := p.do("RL.CHECK", "other", "u")
			return err != nil && strings.Contains(err.Error(), "no such policy")
		})
	}
	hash := func(p *proc) string {
		rdb := redis.NewClient(&redis.Options{Addr: p.addr(), Protocol: 2, MaxRetries: -1})
		defer rdb.Close()
		text, err := rdb.Info(context.Background(), "policies").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(text, "\r\n") {
			if v, ok := strings.CutPrefix(line, "rules_hash:"); ok {
				return v
			}
		}
		return ""
	}
	h1 := hash(ps[0])
	if h1 == "" || hash(ps[1]) != h1 || hash(ps[2]) != h1 {
		t.Fatalf("rules_hash: %s %s %s; want one non-empty hash", h1, hash(ps[1]), hash(ps[2]))
	}
}

// TestProcessNodeWithOtherRulesThanTheLeaderSaysSo: the leader publishes
// its rules files' hash through the log; INFO policies on each node says
// whether its own rules agree. A follower started with another file says
// "no" (and shows the leader's hash); after it reloads the leader's rules,
// "yes".
func TestProcessNodeWithOtherRulesThanTheLeaderSaysSo(t *testing.T) {
	dir := t.TempDir()
	same, other := filepath.Join(dir, "same.yaml"), filepath.Join(dir, "other.yaml")
	write := func(path, limit string) {
		text := "policies:\n  - name: api\n    algorithm: fixed\n    limit: " + limit + "\n    window: 1h\n"
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(same, "5")
	write(other, "7")
	ps := newProcs(t, 2)
	ps[0].start("--bootstrap", "yes", "--policies", same)
	waitFor(t, 10*time.Second, func() bool { return ps[0].info("role") == "leader" && ps[0].info("ready") == "true" })
	ps[1].start("--join", ps[0].addr(), "--policies", other)
	waitFor(t, 15*time.Second, func() bool { return ps[0].info("members") == "2" && ps[1].info("leader_id") != "" })
	field := func(p *proc, name string) string {
		rdb := redis.NewClient(&redis.Options{Addr: p.addr(), Protocol: 2, MaxRetries: -1})
		defer rdb.Close()
		text, err := rdb.Info(context.Background(), "policies").Result()
		if err != nil {
			return ""
		}
		for _, line := range strings.Split(text, "\r\n") {
			if v, ok := strings.CutPrefix(line, name+":"); ok {
				return v
			}
		}
		return ""
	}
	waitFor(t, 10*time.Second, func() bool { return field(ps[0], "rules_agree_with_leader") == "yes" })
	waitFor(t, 10*time.Second, func() bool { return field(ps[1], "rules_agree_with_leader") == "no" })
	if l, own := field(ps[1], "rules_hash_leader"), field(ps[1], "rules_hash"); l == "" || l == own || l != field(ps[0], "rules_hash") {
		t.Fatalf("follower: rules_hash_leader %q, rules_hash %q, the leader's rules_hash %q", l, own, field(ps[0], "rules_hash"))
	}
	write(other, "5")
	if _, err := ps[1].do("RL.POLICY", "RELOAD"); err != nil {
		t.Fatalf("RL.POLICY RELOAD: %v", err)
	}
	waitFor(t, 10*time.Second, func() bool { return field(ps[1], "rules_agree_with_leader") == "yes" })
}
