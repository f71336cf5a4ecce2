package cluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-rl/sluice/store"
)

func rulesOp(id string, hash [32]byte) op {
	return op{code: opRules, argv: [][]byte{[]byte(id), hash[:]}}
}

func TestFSMKeepsTheLeadersRulesHashInSnapshots(t *testing.T) {
	f := newStateMachine(store.New(2), nil, nil)
	if id, h := f.LeaderRules(); id != "" || h != nil {
		t.Fatalf("a new FSM knows a leader's rules: %q %x", id, h)
	}
	h1, h2 := sha256.Sum256([]byte("rules 1")), sha256.Sum256([]byte("rules 2"))
	applyEntry(t, f, 1, rulesOp("n1", h1))
	applyEntry(t, f, 2, rulesOp("n2", h2))
	if id, h := f.LeaderRules(); id != "n2" || !bytes.Equal(h, h2[:]) {
		t.Fatalf("after two announcements: %q %x; want n2 %x", id, h, h2)
	}
	// A malformed announcement is an error on every node and changes nothing.
	rs := applyEntry(t, f, 3, op{code: opRules, argv: [][]byte{[]byte("n3"), []byte("short")}})
	if rs[0].out.Err == nil {
		t.Fatal("a hash of 5 bytes was applied")
	}
	if id, _ := f.LeaderRules(); id != "n2" {
		t.Fatalf("after a malformed announcement the leader is %q; want n2", id)
	}

	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := snap.(*fsmSnapshot).bytes()
	if err != nil {
		t.Fatal(err)
	}
	g := newStateMachine(store.New(2), nil, nil)
	applyEntry(t, g, 1, rulesOp("n9", h1))
	if err := g.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	if id, h := g.LeaderRules(); id != "n2" || !bytes.Equal(h, h2[:]) {
		t.Fatalf("restored: %q %x; want n2 %x", id, h, h2)
	}
	// A snapshot taken before any announcement restores to none.
	snap, _ = newStateMachine(store.New(2), nil, nil).Snapshot()
	data, _ = snap.(*fsmSnapshot).bytes()
	if err := g.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	if id, h := g.LeaderRules(); id != "" || h != nil {
		t.Fatalf("restored from a snapshot without an announcement: %q %x", id, h)
	}
}

// policiesInfo returns a field of INFO policies from p ("" if absent or
// unreachable).
func policiesInfo(p *proc, field string) string {
	rdb := redis.NewClient(&redis.Options{Addr: p.addr(), Protocol: 2, DialTimeout: 300 * time.Millisecond,
		ReadTimeout: 300 * time.Millisecond, MaxRetries: -1})
	defer rdb.Close()
	text, err := rdb.Info(context.Background(), "policies").Result()
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(text, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return ""
}

// Three processes, each with its own copy of a rules file: INFO policies
// on every node compares its rules with the leader's. A follower whose
// file changes says so (rules_leader_match:no) while the others match; the
// leader's file changing the same way brings it back, and the other
// follower then differs.
func TestProcessGroupReportsANodeWhoseRulesDifferFromTheLeaders(t *testing.T) {
	v1 := "domain: api\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 5}\n"
	v2 := "domain: api\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 50}\n"
	ps := newProcs(t, 3)
	files := make([]string, len(ps))
	for i := range ps {
		files[i] = filepath.Join(t.TempDir(), "rules.yaml")
		if err := os.WriteFile(files[i], []byte(v1), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ps[0].start("--bootstrap", "yes", "--policies", files[0])
	waitFor(t, 10*time.Second, func() bool { return ps[0].info("role") == "leader" && ps[0].info("ready") == "true" })
	for i, p := range ps[1:] {
		p.start("--join", ps[0].addr(), "--policies", files[i+1])
	}
	waitFor(t, 15*time.Second, func() bool { return ps[0].info("members") == "3" && ps[2].info("leader_id") != "" })
	matches := func(want ...string) func() bool {
		return func() bool {
			for i, p := range ps {
				if policiesInfo(p, "rules_leader_match") != want[i] {
					return false
				}
			}
			return true
		}
	}
	states := func() string {
		var out []string
		for _, p := range ps {
			out = append(out, p.id+"="+policiesInfo(p, "rules_leader_match")+"/"+policiesInfo(p, "rules_hash")+
				"/leader:"+policiesInfo(p, "rules_leader_hash"))
		}
		return strings.Join(out, " ")
	}
	wait := func(what string, want ...string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for !matches(want...)() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: rules_leader_match %s; want %v", what, states(), want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	wait("same files", "yes", "yes", "yes")
	if id := policiesInfo(ps[2], "rules_leader_id"); id != ps[0].id {
		t.Fatalf("rules_leader_id on %s = %q; want %s", ps[2].id, id, ps[0].id)
	}
	// A follower's file changes: it reloads and differs; the others match.
	if err := os.WriteFile(files[1], []byte(v2), 0o644); err != nil {
		t.Fatal(err)
	}
	wait("a follower's file changed", "yes", "no", "yes")
	// The leader's file changes the same way: it announces its new hash.
	if err := os.WriteFile(files[0], []byte(v2), 0o644); err != nil {
		t.Fatal(err)
	}
	wait("the leader's file changed too", "yes", "yes", "no")
}
