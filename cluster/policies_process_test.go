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
	// A follower snapshots, is killed and restarts: the policy comes back
	// from its snapshot.
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
