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

// listOverrides returns what RL.OVERRIDE LIST api answers on p (its own
// replica), all pages, as sorted "subject mode count" items.
func listOverrides(p *proc) ([]string, error) {
	var items []string
	cursor := "0"
	for {
		v, err := p.do("RL.OVERRIDE", "LIST", "api", cursor)
		if err != nil {
			return nil, err
		}
		page := v.([]any)
		for _, it := range page[1].([]any) {
			o := it.([]any)
			items = append(items, fmt.Sprintf("%v %v %v", o[0], o[1], o[3]))
		}
		if cursor = fmt.Sprint(page[0]); cursor == "0" {
			sort.Strings(items)
			return items, nil
		}
	}
}

// checkReply runs RL.CHECK api subject through p and returns its five
// integers as text.
func checkReply(t *testing.T, p *proc, subject string) string {
	t.Helper()
	v, err := p.do("RL.CHECK", "api", subject)
	if err != nil {
		t.Fatalf("RL.CHECK api %s through %s: %v", subject, p.id, err)
	}
	return fmt.Sprint(v)
}

// namedCheck peeks (n = 0) at subject under api through p with named
// replies on, and returns the reply's fields.
func namedCheck(t *testing.T, p *proc, subject string) map[string]string {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: p.addr(), Protocol: 2, MaxRetries: -1, ReadTimeout: 15 * time.Second,
		OnConnect: func(ctx context.Context, cn *redis.Conn) error {
			cmd := redis.NewStatusCmd(ctx, "CLIENT", "NAMED-REPLY", "ON")
			_ = cn.Process(ctx, cmd)
			return cmd.Err()
		}})
	defer rdb.Close()
	v, err := rdb.Do(context.Background(), "RL.CHECK", "api", subject, 0).Slice()
	if err != nil || len(v)%2 != 0 {
		t.Fatalf("named RL.CHECK api %s 0 through %s = %v, %v", subject, p.id, v, err)
	}
	fields := map[string]string{}
	for i := 0; i < len(v); i += 2 {
		fields[fmt.Sprint(v[i])] = fmt.Sprint(v[i+1])
	}
	return fields
}

// TestProcessOverridesSetThroughAFollowerDecideOnEveryNode: three sluice
// processes. RL.POLICY SET and RL.OVERRIDE SET through a follower; then
// RL.CHECK through all three nodes decides with the overrides on one
// shared state (UNLIMITED admits uncounted, DENY refuses with retry -1, a
// limit override's count is the limit), and a follower's named reply says
// which override decided. A follower killed and restarted keeps them (its
// snapshot, then the log it missed) and lists them from its own replica.
func TestProcessOverridesSetThroughAFollowerDecideOnEveryNode(t *testing.T) {
	ps, _ := startProcGroup(t, false)
	ld := leaderOf(ps)
	if ld == nil {
		t.Fatal("no leader")
	}
	var fs []*proc
	for _, p := range ps {
		if p != ld {
			fs = append(fs, p)
		}
	}
	f1, f2 := fs[0], fs[1]
	for _, cmd := range [][]any{
		{"RL.POLICY", "SET", "api", "TOKEN", "1/h", "3"},
		{"RL.OVERRIDE", "SET", "api", "abc", "UNLIMITED"},
		{"RL.OVERRIDE", "SET", "api", "evil", "DENY"},
		{"RL.OVERRIDE", "SET", "api", "gold", "TOKEN", "1/h", "7"},
	} {
		if v, err := f1.do(cmd...); err != nil || v != "OK" {
			t.Fatalf("%v through follower %s = %v, %v", cmd, f1.id, v, err)
		}
	}
	want := []string{"abc unlimited 0", "evil deny 0", "gold limit 7"}
	for _, p := range ps {
		waitFor(t, 10*time.Second, func() bool {
			got, err := listOverrides(p)
			return err == nil && fmt.Sprint(got) == fmt.Sprint(want)
		})
	}

	order := []*proc{ld, f1, f2, f2, ld, f1, f1, f2, ld}
	for i, p := range order {
		if got := checkReply(t, p, "abc"); got != "[1 3 3 0 0]" {
			t.Fatalf("call %d: RL.CHECK api abc (UNLIMITED) through %s = %s; want [1 3 3 0 0]", i, p.id, got)
		}
		if got := checkReply(t, p, "evil"); !strings.HasPrefix(got, "[0 3 0 -1 ") {
			t.Fatalf("call %d: RL.CHECK api evil (DENY) through %s = %s; want refused, retry -1", i, p.id, got)
		}
		want := fmt.Sprintf("[1 7 %d ", 6-i)
		if i >= 7 {
			want = "[0 7 0 "
		}
		if got := checkReply(t, p, "gold"); !strings.HasPrefix(got, want) {
			t.Fatalf("call %d: RL.CHECK api gold (TOKEN 1/h 7) through %s = %s; want %s…", i, p.id, got, want)
		}
	}
	if got := checkReply(t, f2, "joe"); !strings.HasPrefix(got, "[1 3 2 ") {
		t.Fatalf("RL.CHECK api joe (no override) through %s = %s; want the policy's [1 3 2 …]", f2.id, got)
	}
	// A follower's named reply says which override decided: the leader's
	// decision carries it back over the forwarding link.
	for subject, want := range map[string]string{
		"abc":  "mode=unlimited allowed=1 limit=3 remaining=3",
		"evil": "mode=deny allowed=0 retry_after_ms=-1",
		"gold": "mode=enforce limit=7 remaining=0 quota=7 window_s=25200",
	} {
		got := namedCheck(t, f2, subject)
		for _, kv := range strings.Fields(want) {
			k, v, _ := strings.Cut(kv, "=")
			if got[k] != v {
				t.Fatalf("named RL.CHECK api %s through %s: %s = %q; want %q (%v)", subject, f2.id, k, got[k], v, got)
			}
		}
	}

	// f2 snapshots and is killed; an override is set while it is down; it
	// restarts from its snapshot and the log it missed.
	if _, err := f2.do("RAFT.SNAPSHOT"); err != nil {
		t.Fatalf("RAFT.SNAPSHOT on %s: %v", f2.id, err)
	}
	f2.kill()
	if v, err := f1.do("RL.OVERRIDE", "SET", "api", "late", "DENY"); err != nil || v != "OK" {
		t.Fatalf("RL.OVERRIDE SET api late DENY with %s down = %v, %v", f2.id, v, err)
	}
	f2.start()
	waitFor(t, 15*time.Second, func() bool { return f2.info("leader_id") != "" })
	want = []string{"abc unlimited 0", "evil deny 0", "gold limit 7", "late deny 0"}
	waitFor(t, 10*time.Second, func() bool {
		got, err := listOverrides(f2)
		return err == nil && fmt.Sprint(got) == fmt.Sprint(want)
	})
	if got := checkReply(t, f2, "abc"); got != "[1 3 3 0 0]" {
		t.Fatalf("RL.CHECK api abc through the restarted %s = %s", f2.id, got)
	}
	for _, s := range []string{"evil", "late"} {
		if got := checkReply(t, f2, s); !strings.HasPrefix(got, "[0 3 0 -1 ") {
			t.Fatalf("RL.CHECK api %s (DENY) through the restarted %s = %s", s, f2.id, got)
		}
	}
	if got := checkReply(t, f2, "gold"); !strings.HasPrefix(got, "[0 7 0 ") {
		t.Fatalf("RL.CHECK api gold through the restarted %s = %s; want its empty bucket of 7", f2.id, got)
	}
	// RL.OVERRIDE DEL through the restarted follower: the policy's limit
	// applies to gold's bucket again.
	if v, err := f2.do("RL.OVERRIDE", "DEL", "api", "gold"); err != nil || fmt.Sprint(v) != "1" {
		t.Fatalf("RL.OVERRIDE DEL api gold through %s = %v, %v; want 1", f2.id, v, err)
	}
	if got := checkReply(t, ld, "gold"); !strings.HasPrefix(got, "[0 3 0 ") {
		t.Fatalf("RL.CHECK api gold after DEL through %s = %s; want the policy's limit 3", ld.id, got)
	}
}
