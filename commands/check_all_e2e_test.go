package commands

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// RL.CHECK with several (policy subject) pairs over a real server.

// TestE2ECheckPairsAreAllOrNothing: per user, per route and global limits
// in one call. While all admit, each takes one; when one denies, none
// takes anything (the others' remaining stays), and the reply names the
// first pair that denied, as RL.ALL's does.
func TestE2ECheckPairsAreAllOrNothing(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	do(t, rdb, "RL.POLICY", "SET", "per-user", "FIXED", "2", "1m")
	do(t, rdb, "RL.POLICY", "SET", "per-route", "FIXED", "5", "1m")
	do(t, rdb, "RL.POLICY", "SET", "global", "TOKEN", "100/s", "100")
	call := func() string {
		return allReply(t, do(t, rdb, "RL.CHECK", "per-user", "u1", "per-route", "GET /a", "global", "all"))
	}
	for i, want := range []string{
		"1 -1 [1 2 1 0 60000] [1 5 4 0 60000] [1 100 99 0 10]",
		"1 -1 [1 2 0 0 60000] [1 5 3 0 60000] [1 100 98 0 20]",
		"0 0 [0 2 0 60000 60000] [1 5 3 0 60000] [1 100 98 0 20]",
	} {
		if got := call(); got != want {
			t.Fatalf("call %d = %s; want %s", i, got, want)
		}
	}
	// Another user on the same route is admitted: the route kept its count.
	got := allReply(t, do(t, rdb, "RL.CHECK", "per-user", "u2", "per-route", "GET /a", "global", "all", 1))
	if want := "1 -1 [1 2 1 0 60000] [1 5 2 0 60000] [1 100 97 0 30]"; got != want {
		t.Fatalf("u2 = %s; want %s", got, want)
	}
}

// TestE2ECheckPairsShadowNeverRefusesTheCall: a shadow pair in a call of
// several counts as usual and never refuses the call; its would-be denial
// is counted. The reply keeps the pairs' order.
func TestE2ECheckPairsShadowNeverRefusesTheCall(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	do(t, rdb, "RL.POLICY", "SET", "trial", "FIXED", "1", "1m", "SHADOW")
	do(t, rdb, "RL.POLICY", "SET", "per-user", "FIXED", "3", "1m")
	for i, want := range []string{
		"1 -1 [1 1 0 0 60000] [1 3 2 0 60000]",
		"1 -1 [1 1 0 0 60000] [1 3 1 0 60000]",
	} {
		if got := allReply(t, do(t, rdb, "RL.CHECK", "trial", "u", "per-user", "u")); got != want {
			t.Fatalf("call %d = %s; want %s", i, got, want)
		}
	}
	if v := do(t, rdb, "INFO", "policies").(string); !strings.Contains(v, "policy_shadow_denied:1\r\n") {
		t.Fatalf("INFO policies = %q; want policy_shadow_denied:1", v)
	}
	// In RESP3 the reply is RL.ALL's map.
	r3 := s.client(t, proto(3))
	m, ok := do(t, r3, "RL.CHECK", "trial", "u", "per-user", "u").(map[any]any)
	if !ok || m["allowed"] != true || m["denied_index"] != int64(-1) || len(m["results"].([]any)) != 2 {
		t.Fatalf("RESP3 reply = %#v", m)
	}
}

// TestE2ECheckPairsInAPipelineKeepTheirOrder: single and multi-pair
// RL.CHECK, RL.TOKEN and an error in one pipeline are answered in order.
func TestE2ECheckPairsInAPipelineKeepTheirOrder(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	do(t, rdb, "RL.POLICY", "SET", "a", "FIXED", "10", "1m")
	do(t, rdb, "RL.POLICY", "SET", "b", "FIXED", "1", "1m", "SHADOW")
	ctx := context.Background()
	pipe := rdb.Pipeline()
	cmds := []*redis.Cmd{
		pipe.Do(ctx, "RL.CHECK", "a", "u"),
		pipe.Do(ctx, "RL.CHECK", "a", "u", "b", "u", 2),
		pipe.Do(ctx, "RL.TOKEN", "k", "1/s", "1"),
		pipe.Do(ctx, "RL.CHECK", "nope", "u", "a", "u"),
		pipe.Do(ctx, "RL.CHECK", "b", "u", "a", "u"),
		pipe.Do(ctx, "RL.CHECK", "a", "u", 0),
	}
	pipe.Exec(ctx)
	var got []string
	for _, c := range cmds {
		v, err := c.Result()
		switch {
		case err != nil:
			got = append(got, err.Error())
		case len(v.([]any)) == 3:
			got = append(got, allReply(t, v))
		default:
			got = append(got, ints(t, v))
		}
	}
	want := []string{
		"[1 10 9 0 60000]",
		"1 -1 [1 10 7 0 60000] [1 1 1 0 0]", // b would deny 2 of 1: admitted, nothing stored
		"[1 1 0 0 1000]",
		"ERR no such policy 'nope'",
		"1 -1 [1 1 0 0 60000] [1 10 6 0 60000]",
		"[1 10 6 0 60000]",
	}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Fatalf("pipeline replies:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// allReply renders RL.ALL's RESP2 reply as "allowed denied_index [d] [d]…".
func allReply(t *testing.T, v any) string {
	t.Helper()
	list, ok := v.([]any)
	if !ok || len(list) != 3 {
		t.Fatalf("reply %#v is not RL.ALL's", v)
	}
	parts := []string{ints1(list[0]), ints1(list[1])}
	for _, d := range list[2].([]any) {
		parts = append(parts, ints(t, d))
	}
	return strings.Join(parts, " ")
}

func ints1(v any) string { return strings.Trim(fmtList([]any{v}), "[]") }

// TestE2ECheckNamedReplyCarriesThePolicy: with CLIENT NAMED-REPLY ON, a
// policy decision's map also names the policy, the mode, the quota per
// window as the IETF RateLimit-Policy field states it, and whether a
// shadow policy would have denied.
func TestE2ECheckNamedReplyCarriesThePolicy(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, &redis.Options{Protocol: 3, DisableIndentity: true, PoolSize: 1})
	do(t, rdb, "RL.POLICY", "SET", "free", "TOKEN", "10/s", "20")
	do(t, rdb, "RL.POLICY", "SET", "trial", "FIXED", "1", "90s", "SHADOW")
	do(t, rdb, "CLIENT", "NAMED-REPLY", "ON")
	m := do(t, rdb, "RL.CHECK", "free", "u").(map[any]any)
	want := map[any]any{"allowed": true, "limit": int64(20), "remaining": int64(19), "retry_after_ms": int64(0),
		"reset_after_ms": int64(100), "policy": "free", "mode": "enforce", "quota": int64(20), "window_s": int64(2),
		"would_deny": false}
	if fmtMap(m) != fmtMap(want) {
		t.Fatalf("named RL.CHECK free = %s; want %s", fmtMap(m), fmtMap(want))
	}
	do(t, rdb, "RL.CHECK", "trial", "u")
	m = do(t, rdb, "RL.CHECK", "trial", "u").(map[any]any)
	if m["allowed"] != true || m["would_deny"] != true || m["mode"] != "shadow" || m["quota"] != int64(1) || m["window_s"] != int64(90) {
		t.Fatalf("named RL.CHECK trial over its limit = %s", fmtMap(m))
	}
}

// TestE2ECheckInsideATransaction: RL.CHECK queued in MULTI is decided at
// EXEC with the other decisions and answered in its place.
func TestE2ECheckInsideATransaction(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	do(t, rdb, "RL.POLICY", "SET", "daily", "FIXED", "2", "1d")
	ctx := context.Background()
	var c1, c2, c3 *redis.Cmd
	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		c1 = p.Do(ctx, "RL.CHECK", "daily", "u")
		c2 = p.Do(ctx, "RL.TOKEN", "k", "1/s", "1")
		c3 = p.Do(ctx, "RL.CHECK", "daily", "u", "daily", "v", 1)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got := ints(t, c1.Val()) + " " + ints(t, c2.Val()) + " " + allReply(t, c3.Val())
	if want := "[1 2 1 0 57600000] [1 1 0 0 1000] 1 -1 [1 2 0 0 57600000] [1 2 1 0 57600000]"; got != want {
		t.Fatalf("EXEC = %s; want %s", got, want)
	}
}

// fmtMap renders a reply map with sorted keys.
func fmtMap(m map[any]any) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%v=%v", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}
