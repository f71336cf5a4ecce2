package commands

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Overrides (RL.OVERRIDE) over a real server, driven through go-redis with
// the clock frozen (fixture_test.go).

// TestE2EOverridesGiveTiersUnlimitedAndDeniedKeys: API keys with tiers,
// free (TOKEN 10/s burst 20) and pro (TOKEN 100/s burst 200); key abc is
// UNLIMITED and key evil is DENY under free. The others get their tier.
func TestE2EOverridesGiveTiersUnlimitedAndDeniedKeys(t *testing.T) {
	for _, p := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", p), func(t *testing.T) {
			s := startServer(t, testConfig{})
			rdb := s.client(t, proto(p))
			do(t, rdb, "RL.POLICY", "SET", "free", "TOKEN", "10/s", "20")
			do(t, rdb, "RL.POLICY", "SET", "pro", "TOKEN", "100/s", "200")
			do(t, rdb, "RL.OVERRIDE", "SET", "free", "abc", "UNLIMITED")
			do(t, rdb, "RL.OVERRIDE", "SET", "free", "evil", "DENY")
			for i, c := range []call{
				{0, []any{"RL.CHECK", "free", "abc", 25}, "[1 20 20 0 0]"}, // more than the burst: still admitted
				{0, []any{"RL.CHECK", "free", "abc"}, "[1 20 20 0 0]"},     // and never counted
				{0, []any{"RL.CHECK", "free", "evil"}, "[0 20 0 -1 0]"},
				{0, []any{"RL.CHECK", "free", "evil", 0}, "[0 20 0 -1 0]"},
				{0, []any{"RL.CHECK", "pro", "evil"}, "[1 200 199 0 10]"}, // an override is per policy
				{0, []any{"RL.CHECK", "free", "k", 20}, "[1 20 0 0 2000]"},
				{0, []any{"RL.CHECK", "free", "k"}, "[0 20 0 100 2000]"},
				{0, []any{"RL.CHECK", "pro", "k", 200}, "[1 200 0 0 2000]"},
				{ms(100), []any{"RL.CHECK", "free", "k"}, "[1 20 0 0 2000]"},
				{ms(100), []any{"RL.CHECK", "free", "evil"}, "[0 20 0 -1 0]"},
			} {
				s.at(c.at)
				if got := ints(t, do(t, rdb, c.args...)); got != c.want {
					t.Fatalf("call %d %v = %s; want %s", i, c.args, got, c.want)
				}
			}
			// Neither override touched a bucket: abc and evil have no state.
			if n := do(t, rdb, "EXISTS", "pol:free:token:abc", "pol:free:token:evil"); n != int64(0) {
				t.Fatalf("EXISTS of the overridden subjects' state = %v; want 0", n)
			}
			if typ := do(t, rdb, "TYPE", "ovr:free:abc"); typ != "rl-override" {
				t.Fatalf("TYPE ovr:free:abc = %v; want rl-override", typ)
			}
		})
	}
}

// TestE2ENamedCheckShowsTheOverridesModeAndQuota: the named reply says
// which override decided (mode) and states the limit that decided as
// quota and window_s.
func TestE2ENamedCheckShowsTheOverridesModeAndQuota(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	named := s.client(t, &redis.Options{Protocol: 3, OnConnect: namedReplies})
	do(t, rdb, "RL.POLICY", "SET", "free", "FIXED", "10", "1m")
	do(t, rdb, "RL.POLICY", "SET", "trial", "FIXED", "1", "1h", "SHADOW")
	do(t, rdb, "RL.OVERRIDE", "SET", "free", "abc", "UNLIMITED")
	do(t, rdb, "RL.OVERRIDE", "SET", "free", "evil", "DENY")
	do(t, rdb, "RL.OVERRIDE", "SET", "free", "vip", "FIXED", "1000", "1h")
	do(t, rdb, "RL.OVERRIDE", "SET", "trial", "evil", "DENY")
	for _, c := range []struct {
		policy, subject string
		want            map[string]any
	}{
		{"free", "abc", map[string]any{"allowed": true, "remaining": int64(10), "mode": "unlimited", "quota": int64(10), "window_s": int64(60)}},
		{"free", "evil", map[string]any{"allowed": false, "retry_after_ms": int64(-1), "mode": "deny", "quota": int64(10)}},
		{"free", "vip", map[string]any{"allowed": true, "limit": int64(1000), "remaining": int64(999), "mode": "enforce", "quota": int64(1000), "window_s": int64(3600)}},
		{"free", "joe", map[string]any{"allowed": true, "limit": int64(10), "mode": "enforce", "quota": int64(10), "window_s": int64(60)}},
		// A shadow policy refuses nothing: its DENY override is a would-be denial.
		{"trial", "evil", map[string]any{"allowed": true, "mode": "deny", "would_deny": true}},
	} {
		v := do(t, named, "RL.CHECK", c.policy, c.subject)
		m, ok := v.(map[any]any)
		if !ok {
			t.Fatalf("named RL.CHECK %s %s = %#v; want a map", c.policy, c.subject, v)
		}
		for k, want := range c.want {
			if got := m[k]; got != want {
				t.Errorf("named RL.CHECK %s %s: %s = %#v; want %#v (reply %v)", c.policy, c.subject, k, got, want, m)
			}
		}
	}
}

// TestE2EOverrideOfAnotherAlgorithmStartsTheSubjectAfresh: a limit
// override decides on the subject's state key with its own parameters;
// one of another algorithm than the policy's starts the state afresh
// instead of failing with WRONGTYPE, and so does deleting it.
func TestE2EOverrideOfAnotherAlgorithmStartsTheSubjectAfresh(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	do(t, rdb, "RL.POLICY", "SET", "free", "TOKEN", "10/s", "20")
	s.play(t, []call{
		{0, []any{"RL.CHECK", "free", "u", 5}, "[1 20 15 0 500]"},
	})
	do(t, rdb, "RL.OVERRIDE", "SET", "free", "u", "TOKEN", "100/s", "200")
	s.play(t, []call{
		// The same bucket, with the override's parameters: 5 taken of 20 at
		// 10/s is a TAT 500 ms ahead, which at 100/s is 50 tokens.
		{0, []any{"RL.CHECK", "free", "u"}, "[1 200 149 0 510]"},
	})
	do(t, rdb, "RL.OVERRIDE", "SET", "free", "u", "FIXED", "3", "1m")
	s.play(t, []call{
		{0, []any{"RL.CHECK", "free", "u"}, "[1 3 2 0 60000]"},
		{0, []any{"RL.CHECK", "free", "u", 2}, "[1 3 0 0 60000]"},
		{0, []any{"RL.CHECK", "free", "u"}, "[0 3 0 60000 60000]"},
	})
	if got := do(t, rdb, "RL.OVERRIDE", "DEL", "free", "u"); got != int64(1) {
		t.Fatalf("RL.OVERRIDE DEL = %v; want 1", got)
	}
	s.play(t, []call{
		{0, []any{"RL.CHECK", "free", "u"}, "[1 20 19 0 100]"},
	})
	if got := do(t, rdb, "RL.OVERRIDE", "DEL", "free", "u"); got != int64(0) {
		t.Fatalf("RL.OVERRIDE DEL of no override = %v; want 0", got)
	}
}

// TestE2EOverrideExpires: an override with EXPIRE decides until its
// instant, then the policy does; TTL and RL.OVERRIDE GET show what is left.
func TestE2EOverrideExpires(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	do(t, rdb, "RL.POLICY", "SET", "free", "FIXED", "2", "1m")
	do(t, rdb, "RL.OVERRIDE", "SET", "free", "evil", "DENY", "EXPIRE", "10s")
	do(t, rdb, "RL.OVERRIDE", "SET", "free", "forever", "UNLIMITED")
	if ttl := do(t, rdb, "PTTL", "ovr:free:evil"); ttl != int64(10000) {
		t.Fatalf("PTTL of an override with EXPIRE 10s = %v; want 10000", ttl)
	}
	if ttl := do(t, rdb, "TTL", "ovr:free:forever"); ttl != int64(-1) {
		t.Fatalf("TTL of an override without EXPIRE = %v; want -1", ttl)
	}
	s.play(t, []call{
		{ms(9999), []any{"RL.CHECK", "free", "evil"}, "[0 2 0 -1 0]"},
		{ms(10000), []any{"RL.CHECK", "free", "evil"}, "[1 2 1 0 50000]"},
	})
	s.at(ms(10000))
	if v := do(t, rdb, "EXISTS", "ovr:free:evil"); v != int64(0) {
		t.Fatalf("EXISTS of an expired override = %v; want 0", v)
	}
	// RL.INFO says -1 for no expiry, as PTTL does; MEMORY USAGE counts the
	// record as laid out: header, one word (two for a limit; no expiry word
	// without EXPIRE), and the 16-byte key, plus the index's share.
	info := fmt.Sprint(do(t, rdb, "RL.INFO", "ovr:free:forever"))
	if !strings.Contains(info, "ttl_ms -1") {
		t.Fatalf("RL.INFO of an override without EXPIRE = %s; want ttl_ms -1", info)
	}
	if n := do(t, rdb, "MEMORY", "USAGE", "ovr:free:forever"); n != int64(4*8+16) {
		t.Fatalf("MEMORY USAGE of an UNLIMITED override with a 16-byte key = %v; want 48", n)
	}
	do(t, rdb, "RL.OVERRIDE", "SET", "free", "limited", "FIXED", "5", "1m")
	if n := do(t, rdb, "MEMORY", "USAGE", "ovr:free:limited"); n != int64(5*8+16) {
		t.Fatalf("MEMORY USAGE of a limit override with a 16-byte key = %v; want 56", n)
	}
	get := do(t, rdb, "RL.OVERRIDE", "GET", "free", "forever")
	if got := fmt.Sprint(get); got != "[policy free subject forever mode unlimited algorithm <nil> count 0 period_ns 0 ttl_ms -1]" {
		t.Fatalf("RL.OVERRIDE GET = %s", got)
	}
}

// TestE2EOverrideCommandsAndErrors: GET, LIST and DEL, and every refusal.
func TestE2EOverrideCommandsAndErrors(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	do(t, rdb, "RL.POLICY", "SET", "free", "TOKEN", "10/s", "20")
	do(t, rdb, "RL.POLICY", "SET", "pool", "CONCURRENCY", "5", "30s")
	do(t, rdb, "RL.OVERRIDE", "SET", "free", "vip", "SLIDING", "100", "1m", "EXPIRE", "1h")
	do(t, rdb, "RL.OVERRIDE", "SET", "free", "evil", "DENY")
	do(t, rdb, "RL.TOKEN", "ovr:free:taken", "1/s", "1") // someone else's key where an override would go

	get := fmt.Sprint(do(t, rdb, "RL.OVERRIDE", "GET", "free", "vip"))
	if want := "[policy free subject vip mode limit algorithm SLIDING count 100 period_ns 60000000000 ttl_ms 3600000]"; get != want {
		t.Fatalf("RL.OVERRIDE GET = %s; want %s", get, want)
	}
	if v, err := rdb.Do(context.Background(), "RL.OVERRIDE", "GET", "free", "nobody").Result(); err != redis.Nil {
		t.Fatalf("RL.OVERRIDE GET of no override = %v, %v; want nil", v, err)
	}
	// LIST walks the whole key space with its cursor and lists this
	// policy's overrides only.
	seen := map[string]string{}
	cursor := "0"
	for i := 0; ; i++ {
		v := do(t, rdb, "RL.OVERRIDE", "LIST", "free", cursor, "COUNT", 2).([]any)
		for _, e := range v[1].([]any) {
			f := e.([]any)
			seen[f[0].(string)] = fmt.Sprint(f[1:])
		}
		if cursor = v[0].(string); cursor == "0" {
			break
		}
		if i > 100 {
			t.Fatal("RL.OVERRIDE LIST did not end")
		}
	}
	if got, want := fmt.Sprint(seen), "map[evil:[deny <nil> 0 0 -1] vip:[limit SLIDING 100 60000000000 3600000]]"; got != want {
		t.Fatalf("RL.OVERRIDE LIST = %s; want %s", got, want)
	}
	for _, c := range []struct {
		args []any
		want string
	}{
		{[]any{"RL.OVERRIDE", "SET", "nope", "a", "DENY"}, "ERR no such policy 'nope'"},
		{[]any{"RL.OVERRIDE", "SET", "pool", "a", "DENY"}, "ERR RL.CHECK does not decide CONCURRENCY policies, so they take no override"},
		{[]any{"RL.OVERRIDE", "SET", "free", "a", "CONCURRENCY", "5", "30s"}, "CONCURRENCY is not a limit RL.CHECK decides"},
		{[]any{"RL.OVERRIDE", "SET", "free", "", "DENY"}, "ERR the subject must not be empty"},
		{[]any{"RL.OVERRIDE", "SET", "free", "a", "DENY", "EXPIRE"}, "ERR syntax error"},
		{[]any{"RL.OVERRIDE", "SET", "free", "a", "TOKEN", "0/s", "1"}, "rate"},
		{[]any{"RL.OVERRIDE", "SET", "free", "taken", "DENY"}, "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{[]any{"RL.OVERRIDE", "GET", "free", "taken"}, "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{[]any{"RL.OVERRIDE", "DEL", "free", "taken"}, "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{[]any{"RL.OVERRIDE", "SET", "bad!", "a", "DENY"}, "ERR invalid policy name 'bad!'"},
		{[]any{"RL.OVERRIDE", "GET", "bad!", "a"}, "invalid policy name"},
		{[]any{"RL.OVERRIDE", "LIST", "free", "x"}, "ERR invalid cursor"},
		{[]any{"RL.OVERRIDE", "LIST", "free", "0", "COUNT", "0"}, "ERR syntax error"},
		{[]any{"RL.OVERRIDE", "GET", "free"}, "ERR wrong number of arguments for 'rl.override|get' command"},
		{[]any{"RL.OVERRIDE", "NOPE"}, "ERR unknown subcommand 'NOPE'"},
	} {
		if got := doErr(t, rdb, c.args...); !strings.Contains(got, c.want) {
			t.Errorf("%v: %q; want one containing %q", c.args, got, c.want)
		}
	}
	// The refusals changed nothing; DEL removes one override.
	if got := do(t, rdb, "RL.OVERRIDE", "DEL", "free", "evil"); got != int64(1) {
		t.Fatalf("RL.OVERRIDE DEL = %v; want 1", got)
	}
	s.play(t, []call{{0, []any{"RL.CHECK", "free", "evil"}, "[1 20 19 0 100]"}})
	// A deleted policy's override can still be read and deleted.
	do(t, rdb, "RL.POLICY", "DEL", "free")
	if got := do(t, rdb, "RL.OVERRIDE", "DEL", "free", "vip"); got != int64(1) {
		t.Fatalf("RL.OVERRIDE DEL after its policy went = %v; want 1", got)
	}
}

// TestE2ECheckPairsWithOverrides: an RL.CHECK of several pairs is one
// all-or-nothing decision: a DENY override refuses the whole call and
// charges nothing; an UNLIMITED one is admitted without counting.
func TestE2ECheckPairsWithOverrides(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	do(t, rdb, "RL.POLICY", "SET", "user", "FIXED", "5", "1m")
	do(t, rdb, "RL.POLICY", "SET", "route", "FIXED", "100", "1m")
	do(t, rdb, "RL.OVERRIDE", "SET", "user", "evil", "DENY")
	do(t, rdb, "RL.OVERRIDE", "SET", "user", "ops", "UNLIMITED")
	deny := fmt.Sprint(do(t, rdb, "RL.CHECK", "route", "/a", "user", "evil"))
	if want := "[0 1 [[1 100 100 0 0] [0 5 0 -1 0]]]"; deny != want {
		t.Fatalf("RL.CHECK route /a user evil = %s; want %s", deny, want)
	}
	ok := fmt.Sprint(do(t, rdb, "RL.CHECK", "route", "/a", "user", "ops"))
	if want := "[1 -1 [[1 100 99 0 60000] [1 5 5 0 0]]]"; ok != want {
		t.Fatalf("RL.CHECK route /a user ops = %s; want %s", ok, want)
	}
}

// TestE2ECheckInMultiSeesTheOverride: inside MULTI, RL.CHECK is decided
// with the override in force when EXEC runs.
func TestE2ECheckInMultiSeesTheOverride(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	do(t, rdb, "RL.POLICY", "SET", "free", "FIXED", "5", "1m")
	ctx := context.Background()
	pipe := rdb.TxPipeline()
	a := pipe.Do(ctx, "RL.CHECK", "free", "evil")
	b := pipe.Do(ctx, "RL.CHECK", "free", "vip")
	do(t, rdb, "RL.OVERRIDE", "SET", "free", "evil", "DENY")
	do(t, rdb, "RL.OVERRIDE", "SET", "free", "vip", "FIXED", "50", "1m")
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if got := ints(t, a.Val()); got != "[0 5 0 -1 0]" {
		t.Fatalf("RL.CHECK free evil in MULTI = %s; want the DENY", got)
	}
	if got := ints(t, b.Val()); got != "[1 50 49 0 60000]" {
		t.Fatalf("RL.CHECK free vip in MULTI = %s; want the override's limit", got)
	}
}
