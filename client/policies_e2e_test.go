package client

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-rl/sluice/client/sluicetest"
)

// Policies, overrides, rules files and named replies, end to end. The server side of these
// lands separately; each test skips, saying why, on a server that does not know the command,
// and runs as soon as it does.

// skipUnknown skips the test when err says the server lacks a command.
func skipUnknown(t *testing.T, what string, err error) {
	t.Helper()
	if errors.Is(err, ErrUnknownCommand) {
		t.Skipf("this server has no %s yet (%v); the test runs once it lands", what, err)
	}
}

// setPolicies defines free and pro tiers, with an unlimited key and a denied one.
func setPolicies(t *testing.T, rdb *redis.Client) {
	t.Helper()
	ctx := context.Background()
	err := rdb.Do(ctx, "RL.POLICY", "SET", "free", "TOKEN", "10/s", 20).Err()
	skipUnknown(t, "RL.POLICY", classify(err))
	for _, args := range [][]any{
		{"RL.POLICY", "SET", "pro", "TOKEN", "100/s", 200},
		{"RL.POLICY", "SET", "global", "FIXED", 1000, "1s"},
		{"RL.OVERRIDE", "SET", "free", "abc", "UNLIMITED"},
		{"RL.OVERRIDE", "SET", "free", "evil", "DENY"},
	} {
		if err := rdb.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
}

func TestCheckDecidesUnderPoliciesAndOverrides(t *testing.T) {
	srv := debugServer(t)
	protocols(t, srv, func(t *testing.T, c *Client, rdb *redis.Client) {
		ctx := context.Background()
		clockSet(t, rdb, t0ms)
		setPolicies(t, rdb)
		r, err := c.Check(ctx, "free", "key:1", 1)
		want(t, "Check(free)", r, err, true, 20, 19, 0, 100*ms)
		if r.Policy != "free" {
			t.Fatalf("Policy = %q; want free", r.Policy)
		}
		r, err = c.Check(ctx, "free", "evil", 1)
		if err != nil || r.Allowed || !r.Never() {
			t.Fatalf("Check of a DENY override = %+v, %v; want refused for ever", r, err)
		}
		r, err = c.Check(ctx, "free", "abc", 1000)
		if err != nil || !r.Allowed || r.Remaining != 20 {
			t.Fatalf("Check of an UNLIMITED override = %+v, %v; want admitted, remaining the policy's limit", r, err)
		}
		n, err := c.ResetPolicy(ctx, "free", "key:1")
		if err != nil || n != 1 {
			t.Fatalf("ResetPolicy = %d, %v; want 1", n, err)
		}
	})
}

func TestCheckAllDecidesPolicyPairsAtomically(t *testing.T) {
	srv := debugServer(t)
	protocols(t, srv, func(t *testing.T, c *Client, rdb *redis.Client) {
		ctx := context.Background()
		clockSet(t, rdb, t0ms)
		setPolicies(t, rdb)
		res, err := c.CheckAll(ctx, 1, Policy("free", "u1"), Policy("global", "all"))
		skipUnknown(t, "RL.CHECK with several pairs", err)
		if err != nil || !res.Allowed || res.Denied != -1 || len(res.Results) != 2 ||
			res.Results[0].Policy != "free" || res.Results[1].Policy != "global" || res.Results[1].Remaining != 999 {
			t.Fatalf("CheckAll = %+v, %v", res, err)
		}
		res, err = c.CheckAll(ctx, 1, Policy("global", "all"), Policy("free", "evil"))
		if err != nil || res.Allowed || res.Denied != 1 {
			t.Fatalf("CheckAll with a denied subject = %+v, %v; want denied by pair 1", res, err)
		}
		r, err := c.Check(ctx, "global", "all", 0)
		want(t, "global after the denial", r, err, true, 1000, 999, 0, 1000*ms)
	})
}

const rulesYAML = `domain: api
descriptors:
  - key: remote_address
    rate_limit: {unit: second, requests_per_unit: 100}
  - key: path
    value: /login
    rate_limit: {unit: minute, requests_per_unit: 1}
`

func TestMatchAppliesARulesFile(t *testing.T) {
	if !sluicetest.HasFlag(t, "--policies") {
		t.Skip("this server has no --policies flag yet; the test runs once rules files land")
	}
	file := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(file, []byte(rulesYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := sluicetest.Start(t, "--enable-debug-command", "yes", "--policies", file)
	protocols(t, srv, func(t *testing.T, c *Client, rdb *redis.Client) {
		ctx := context.Background()
		clockSet(t, rdb, t0ms+int64(rdb.Options().Protocol)*60000)
		ip := Descriptor{{"remote_address", "10.0.0.1"}}
		login := Descriptor{{"path", "/login"}}
		m, err := c.Match(ctx, "api", 1, ip, login)
		skipUnknown(t, "RL.MATCH", err)
		if err != nil || m.Code != CodeOK || len(m.Statuses) != 2 || m.Statuses[0].Limit != 100 ||
			m.Statuses[0].Remaining != 99 || m.Statuses[1].Remaining != 0 || m.Statuses[1].ResetAfter != time.Minute {
			t.Fatalf("Match = %+v, %v", m, err)
		}
		m, err = c.Match(ctx, "api", 1, ip, login)
		if err != nil || m.Code != CodeOverLimit || m.Statuses[0].Code != CodeOK || m.Statuses[1].Code != CodeOverLimit {
			t.Fatalf("Match over the login limit = %+v, %v", m, err)
		}
	})
}

func TestNamedRepliesDecodeInBothProtocols(t *testing.T) {
	srv := debugServer(t)
	for _, proto := range []int{2, 3} {
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, Protocol: proto, MaxRetries: -1,
			DisableIndentity: true, OnConnect: NamedReplies})
		defer rdb.Close()
		c := New(rdb)
		ctx := context.Background()
		r, err := c.Token(ctx, "named", PerSecond(10), 20, 1)
		skipUnknown(t, "named replies ("+namedReplyArgs[1].(string)+")", err)
		if err != nil || !r.Allowed || r.Limit != 20 {
			t.Fatalf("RESP%d: Token with named replies = %+v, %v", proto, r, err)
		}
		// The reply is named, not positional.
		raw, err := rdb.Do(ctx, "RL.TOKEN", "named", "10/s", 20, 0).Result()
		if _, positional := raw.([]any); err != nil || positional && !isString(raw.([]any)[0]) {
			t.Fatalf("RESP%d: raw reply %#v, %v; want a named reply", proto, raw, err)
		}
		rdb.Do(ctx, "RL.POLICY", "SET", "shadowed", "FIXED", 1, "1m", "SHADOW")
		rdb.Do(ctx, "RL.CHECK", "shadowed", "s", 1)
		r, err = c.Check(ctx, "shadowed", "s", 1)
		if errors.Is(err, ErrUnknownCommand) {
			continue // policies not there yet; the decision forms were checked above
		}
		if err != nil || !r.Allowed || !r.WouldDeny || r.Mode != ModeShadow || r.Policy != "shadowed" || r.Quota != 1 || r.Window != time.Minute {
			t.Fatalf("RESP%d: a shadow policy's named reply = %+v, %v", proto, r, err)
		}
	}
}
