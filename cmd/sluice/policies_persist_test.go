package main

import (
	"context"
	"fmt"
	"github.com/sluice-rl/sluice/process"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Process-level tests of a single node's command-defined policies across
// restarts: RL.POLICY SET and DEL are kept in the snapshot file and, with
// appendonly yes, in the append-only log, beside the limiters' state.

// policyFields returns RL.POLICY GET's reply as "name algorithm count
// shadow description", or "" for an unknown policy.
func policyFields(t *testing.T, rdb *redis.Client, name string) string {
	t.Helper()
	v, err := rdb.Do(context.Background(), "RL.POLICY", "GET", name).Result()
	if err == redis.Nil {
		return ""
	}
	if err != nil {
		t.Fatalf("RL.POLICY GET %s: %v", name, err)
	}
	list := v.([]any)
	m := map[string]any{}
	for i := 0; i+1 < len(list); i += 2 {
		m[fmt.Sprint(list[i])] = list[i+1]
	}
	return fmt.Sprintf("%v %v %v %v %v", m["name"], m["algorithm"], m["count"], m["shadow"], m["description"])
}

func mustDo(t *testing.T, rdb *redis.Client, args ...any) any {
	t.Helper()
	v, err := rdb.Do(context.Background(), args...).Result()
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return v
}

func TestCommandPoliciesSurviveARestartFromTheSnapshot(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--dir", dir, "--save", "0"}
	p := start(t, args...)
	rdb := client(t, p)
	mustDo(t, rdb, "RL.POLICY", "SET", "free", "TOKEN", "1/h", "10", "DESCRIPTION", "free tier")
	mustDo(t, rdb, "RL.POLICY", "SET", "soft", "FIXED", "5", "1h", "SHADOW")
	mustDo(t, rdb, "RL.POLICY", "SET", "gone", "SLIDING", "5", "1m")
	mustDo(t, rdb, "RL.POLICY", "DEL", "gone")
	for i := 0; i < 3; i++ {
		mustDo(t, rdb, "RL.CHECK", "free", "key:abc")
	}
	rdb.Do(context.Background(), "SHUTDOWN", "SAVE") // no reply: the server exits
	if code := p.exitCode(t); code != process.ExitOK {
		t.Fatalf("exit code %d", code)
	}

	q := start(t, args...)
	rdb = client(t, q)
	if got, want := policyFields(t, rdb, "free"), "free TOKEN 10 0 free tier"; got != want {
		t.Fatalf("after the restart RL.POLICY GET free = %q; want %q", got, want)
	}
	if got, want := policyFields(t, rdb, "soft"), "soft FIXED 5 1 "; got != want {
		t.Fatalf("after the restart RL.POLICY GET soft = %q; want %q", got, want)
	}
	if got := policyFields(t, rdb, "gone"); got != "" {
		t.Fatalf("after the restart the deleted policy is back: %q", got)
	}
	// The subject's state came back with the policy: 3 of 10 taken.
	v := mustDo(t, rdb, "RL.CHECK", "free", "key:abc").([]any)
	if fmt.Sprint(v[:3]) != "[1 10 6]" {
		t.Fatalf("RL.CHECK free key:abc after the restart = %v; want [1 10 6 …]", v)
	}
}

func TestCommandPoliciesSurviveKillNineWithTheAppendOnlyLog(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--dir", dir, "--save", "0", "--appendonly", "yes", "--appendfsync", "always"}
	p := start(t, args...)
	rdb := client(t, p)
	mustDo(t, rdb, "RL.POLICY", "SET", "a", "TOKEN", "1/h", "10")
	mustDo(t, rdb, "RL.POLICY", "SET", "b", "FIXED", "5", "1h")
	// A rewrite folds them into the log's base; later changes follow as frames.
	mustDo(t, rdb, "BGREWRITEAOF")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(rdb.Info(context.Background(), "persistence").Val(), "aof_rewrite_in_progress:0") {
		if time.Now().After(deadline) {
			t.Fatal("the rewrite did not end in 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	mustDo(t, rdb, "RL.POLICY", "DEL", "a")
	mustDo(t, rdb, "RL.POLICY", "SET", "b", "FIXED", "7", "1h")
	mustDo(t, rdb, "RL.POLICY", "SET", "c", "LEAKY", "1/s", "3")
	p.killed(t)

	q := start(t, args...)
	rdb = client(t, q)
	got := []string{policyFields(t, rdb, "a"), policyFields(t, rdb, "b"), policyFields(t, rdb, "c")}
	if want := []string{"", "b FIXED 7 0 ", "c LEAKY 3 0 "}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after kill -9 and a restart: %q; want %q", got, want)
	}
}

// overridesAfterRestart sets overrides, restarts the server with args
// (stop stops the first process) and checks that a restarted RL.CHECK
// decides with them, the one deleted included.
func overridesAfterRestart(t *testing.T, args []string, stop func(p *proc, rdb *redis.Client)) {
	p := start(t, args...)
	rdb := client(t, p)
	mustDo(t, rdb, "RL.POLICY", "SET", "free", "FIXED", "5", "1h")
	mustDo(t, rdb, "RL.OVERRIDE", "SET", "free", "abc", "UNLIMITED")
	mustDo(t, rdb, "RL.OVERRIDE", "SET", "free", "evil", "DENY", "EXPIRE", "1h")
	mustDo(t, rdb, "RL.OVERRIDE", "SET", "free", "vip", "FIXED", "50", "1h")
	mustDo(t, rdb, "RL.OVERRIDE", "SET", "free", "gone", "DENY")
	mustDo(t, rdb, "RL.OVERRIDE", "DEL", "free", "gone")
	mustDo(t, rdb, "RL.CHECK", "free", "vip", 10)
	stop(p, rdb)

	q := start(t, args...)
	rdb = client(t, q)
	for _, c := range []struct{ subject, want string }{
		{"abc", "[1 5 5 0]"}, {"evil", "[0 5 0 -1]"}, {"vip", "[1 50 39 0]"}, {"gone", "[1 5 4 0]"},
	} {
		v := mustDo(t, rdb, "RL.CHECK", "free", c.subject).([]any)
		if got := fmt.Sprint(v[:4]); got != c.want {
			t.Errorf("after the restart RL.CHECK free %s = %v; want %s …", c.subject, v, c.want)
		}
	}
	if ttl := mustDo(t, rdb, "TTL", "ovr:free:evil").(int64); ttl < 3500 || ttl > 3600 {
		t.Errorf("after the restart TTL ovr:free:evil = %d; want its hour, less the test's seconds", ttl)
	}
}

func TestOverridesSurviveARestartFromTheSnapshot(t *testing.T) {
	overridesAfterRestart(t, []string{"--dir", t.TempDir(), "--save", "0"}, func(p *proc, rdb *redis.Client) {
		rdb.Do(context.Background(), "SHUTDOWN", "SAVE") // no reply: the server exits
		if code := p.exitCode(t); code != process.ExitOK {
			t.Fatalf("exit code %d", code)
		}
	})
}

func TestOverridesSurviveKillNineWithTheAppendOnlyLog(t *testing.T) {
	args := []string{"--dir", t.TempDir(), "--save", "0", "--appendonly", "yes", "--appendfsync", "always"}
	overridesAfterRestart(t, args, func(p *proc, _ *redis.Client) { p.killed(t) })
}
