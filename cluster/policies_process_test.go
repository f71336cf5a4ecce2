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
// the same rules; RL.POLICY SET is refused in a group; every node reports
// the same rules hash.
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

	for _, p := range ps {
		_, err := p.do("RL.POLICY", "SET", "other", "TOKEN", "10/s", "10")
		if err == nil || !strings.Contains(err.Error(), "not available in a Raft group") {
			t.Fatalf("RL.POLICY SET through %s = %v; want the group's refusal", p.id, err)
		}
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
