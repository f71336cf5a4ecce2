package client

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-rl/sluice/client/sluicetest"
)

// Policies, overrides, rules files and named replies, end to end against a real server, in
// RESP2 and RESP3.

// setPolicies defines free and pro tiers and a global limit, with an unlimited subject and a
// denied one under free, through the typed calls.
func setPolicies(t *testing.T, c *Client) {
	t.Helper()
	ctx := context.Background()
	for name, l := range map[string]Limit{
		"free":   Token("", PerSecond(10), 20),
		"pro":    Token("", PerSecond(100), 200),
		"global": Fixed("", 1000, time.Second),
	} {
		if err := c.SetPolicy(ctx, name, l, PolicyOptions{}); err != nil {
			t.Fatalf("SetPolicy(%s): %v", name, err)
		}
	}
	for subject, o := range map[string]Override{"abc": Unlimited(), "evil": Deny()} {
		if err := c.SetOverride(ctx, "free", subject, o); err != nil {
			t.Fatalf("SetOverride(free, %s): %v", subject, err)
		}
	}
}

func TestCheckDecidesUnderPoliciesAndOverrides(t *testing.T) {
	srv := debugServer(t)
	protocols(t, srv, func(t *testing.T, c *Client, rdb *redis.Client) {
		ctx := context.Background()
		clockSet(t, rdb, t0ms)
		setPolicies(t, c)
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
		// An override is per policy: the same subject under pro is limited by pro.
		r, err = c.Check(ctx, "pro", "evil", 1)
		want(t, "Check(pro, evil)", r, err, true, 200, 199, 0, 10*ms)
		for _, p := range []string{"free", "pro"} {
			subject := map[string]string{"free": "key:1", "pro": "evil"}[p]
			if n, err := c.ResetPolicy(ctx, p, subject); err != nil || n != 1 {
				t.Fatalf("ResetPolicy(%s, %s) = %d, %v; want 1", p, subject, n, err)
			}
		}
	})
}

func TestCheckAllDecidesPolicyPairsAtomically(t *testing.T) {
	srv := debugServer(t)
	protocols(t, srv, func(t *testing.T, c *Client, rdb *redis.Client) {
		ctx := context.Background()
		clockSet(t, rdb, t0ms)
		setPolicies(t, c)
		all := fmt.Sprint("all", rdb.Options().Protocol) // each protocol's own global subject
		res, err := c.CheckAll(ctx, 1, Policy("free", "u1"), Policy("global", all))
		if err != nil || !res.Allowed || res.Denied != -1 || len(res.Results) != 2 ||
			res.Results[0].Policy != "free" || res.Results[1].Policy != "global" || res.Results[1].Remaining != 999 {
			t.Fatalf("CheckAll = %+v, %v", res, err)
		}
		res, err = c.CheckAll(ctx, 1, Policy("global", all), Policy("free", "evil"))
		if err != nil || res.Allowed || res.Denied != 1 || !res.Results[1].Never() {
			t.Fatalf("CheckAll with a denied subject = %+v, %v; want denied by pair 1, for ever", res, err)
		}
		r, err := c.Check(ctx, "global", all, 0)
		want(t, "global after the denial", r, err, true, 1000, 999, 0, 1000*ms)
	})
}

// An override's own limit replaces the policy's for its subject, expires with EXPIRE, and
// GetOverride and ListOverrides read back what SetOverride wrote.
func TestOverridesAreSetReadListedAndDeleted(t *testing.T) {
	srv := debugServer(t)
	protocols(t, srv, func(t *testing.T, c *Client, rdb *redis.Client) {
		ctx := context.Background()
		clockSet(t, rdb, t0ms)
		setPolicies(t, c)
		big := fmt.Sprint("big", rdb.Options().Protocol) // each protocol's own subject
		if err := c.SetOverride(ctx, "free", big, OwnLimit(Fixed("", 5, time.Minute)).Expire(time.Hour)); err != nil {
			t.Fatal(err)
		}
		r, err := c.Check(ctx, "free", big, 1)
		want(t, "Check of an own limit", r, err, true, 5, 4, 0, 60000*ms)
		o, ok, err := c.GetOverride(ctx, "free", big)
		if err != nil || !ok || o.Mode != OverrideLimit || o.Limit.Algorithm() != AlgoFixed || o.Limit.Quota() != 5 ||
			o.Limit.Window() != time.Minute || o.TTL != time.Hour {
			t.Fatalf("GetOverride(%s) = %+v, %v, %v; want FIXED 5 per minute for an hour", big, o, ok, err)
		}
		if o, ok, err := c.GetOverride(ctx, "free", "abc"); err != nil || !ok || o.Mode != OverrideUnlimited || o.TTL != 0 {
			t.Fatalf("GetOverride(abc) = %+v, %v, %v; want unlimited for ever", o, ok, err)
		}
		if _, ok, err := c.GetOverride(ctx, "free", "nobody"); err != nil || ok {
			t.Fatalf("GetOverride(nobody) = %v, %v; want none", ok, err)
		}
		got := map[string]OverrideMode{}
		for cursor, calls := uint64(0), 0; ; calls++ {
			items, next, err := c.ListOverrides(ctx, "free", cursor, 100)
			if err != nil || calls > 100 {
				t.Fatalf("ListOverrides: %v after %d calls", err, calls)
			}
			for _, it := range items {
				got[it.Subject] = it.Mode
				if it.Subject == big && (it.Limit.Quota() != 5 || it.TTL != time.Hour) {
					t.Fatalf("listed big = %+v", it)
				}
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
		if len(got) != 3 || got["abc"] != OverrideUnlimited || got["evil"] != OverrideDeny || got[big] != OverrideLimit {
			t.Fatalf("ListOverrides(free) = %v", got)
		}
		clockAdvance(t, rdb, 3600000)
		if _, ok, err := c.GetOverride(ctx, "free", big); err != nil || ok {
			t.Fatalf("GetOverride(big) an hour later = %v, %v; want expired", ok, err)
		}
		r, err = c.Check(ctx, "free", big, 1)
		want(t, "Check once the override expired", r, err, true, 20, 19, 0, 100*ms)
		if ok, err := c.DeleteOverride(ctx, "free", "evil"); err != nil || !ok {
			t.Fatalf("DeleteOverride(evil) = %v, %v; want true", ok, err)
		}
		if ok, err := c.DeleteOverride(ctx, "free", "evil"); err != nil || ok {
			t.Fatalf("DeleteOverride(evil) again = %v, %v; want false", ok, err)
		}
		if r, err := c.Check(ctx, "free", "evil", 1); err != nil || !r.Allowed {
			t.Fatalf("Check(evil) without its override = %+v, %v; want admitted", r, err)
		}
		if err := c.SetOverride(ctx, "nope", "x", Deny()); !errorsIs(err, ErrNoSuchPolicy) {
			t.Fatalf("SetOverride under an unknown policy: %v; want ErrNoSuchPolicy", err)
		}
	})
}

func TestPoliciesAreSetReadListedAndDeleted(t *testing.T) {
	srv := debugServer(t)
	protocols(t, srv, func(t *testing.T, c *Client, rdb *redis.Client) {
		ctx := context.Background()
		setPolicies(t, c)
		if err := c.SetPolicy(ctx, "trial", Sliding("", 2, time.Minute), PolicyOptions{Shadow: true, Description: "trial keys"}); err != nil {
			t.Fatal(err)
		}
		p, ok, err := c.GetPolicy(ctx, "trial")
		if err != nil || !ok || p.Name != "trial" || p.Algorithm != "SLIDING" || p.Count != 2 || p.Period != time.Minute ||
			!p.Shadow || p.Description != "trial keys" || p.Source != "command" || p.Limit != Sliding("", 2, time.Minute) {
			t.Fatalf("GetPolicy(trial) = %+v, %v, %v", p, ok, err)
		}
		p, ok, err = c.GetPolicy(ctx, "free")
		if err != nil || !ok || p.Limit.Algorithm() != AlgoToken || p.Limit.Quota() != 20 || p.Limit.Rate().Interval() != 100*ms ||
			p.Limit.Window() != 2*time.Second {
			t.Fatalf("GetPolicy(free) = %+v, %v, %v; want a token bucket of 20 at 10/s", p, ok, err)
		}
		if _, ok, err := c.GetPolicy(ctx, "nope"); err != nil || ok {
			t.Fatalf("GetPolicy(nope) = %v, %v; want none", ok, err)
		}
		names, err := c.ListPolicies(ctx, "")
		if err != nil || len(names) != 4 || names[0] != "free" || names[3] != "trial" {
			t.Fatalf("ListPolicies = %v, %v", names, err)
		}
		if names, err := c.ListPolicies(ctx, "pr*"); err != nil || len(names) != 1 || names[0] != "pro" {
			t.Fatalf("ListPolicies(pr*) = %v, %v", names, err)
		}
		if ok, err := c.DeletePolicy(ctx, "trial"); err != nil || !ok {
			t.Fatalf("DeletePolicy = %v, %v", ok, err)
		}
		if _, err := c.Check(ctx, "trial", "s", 1); !errorsIs(err, ErrNoSuchPolicy) {
			t.Fatalf("Check of a deleted policy: %v; want ErrNoSuchPolicy", err)
		}
		if err := c.SetPolicy(ctx, "bad!", Fixed("", 1, time.Second), PolicyOptions{}); !errorsIs(err, ErrServer) {
			t.Fatalf("SetPolicy with an invalid name: %v; want ErrServer", err)
		}
		if err := c.SetPolicy(ctx, "p", Policy("free", "x"), PolicyOptions{}); !errorsIs(err, ErrInvalidLimit) {
			t.Fatalf("SetPolicy of a policy: %v; want ErrInvalidLimit", err)
		}
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

// With named replies a check carries the policy's name, its mode (enforce, shadow, unlimited,
// deny), its quota and window, and a shadow policy's would-be denial.
func TestNamedRepliesCarryThePolicysModeQuotaAndWindow(t *testing.T) {
	namedProtocols(t, debugServer(t), func(t *testing.T, c *Client, rdb *redis.Client) {
		proto := rdb.Options().Protocol
		ctx := context.Background()
		if proto == 2 {
			setPolicies(t, c)
			if err := c.SetPolicy(ctx, "shadowed", Fixed("", 1, time.Minute), PolicyOptions{Shadow: true}); err != nil {
				t.Fatal(err)
			}
		}
		subject := "s" + string(rune('0'+proto))
		if _, err := c.Check(ctx, "shadowed", subject, 1); err != nil {
			t.Fatal(err)
		}
		r, err := c.Check(ctx, "shadowed", subject, 1)
		if err != nil || !r.Allowed || !r.WouldDeny || r.Mode != ModeShadow || r.Policy != "shadowed" || r.Quota != 1 || r.Window != time.Minute {
			t.Fatalf("RESP%d: a shadow policy's named reply = %+v, %v", proto, r, err)
		}
		for _, tc := range []struct {
			subject string
			mode    Mode
			allowed bool
		}{{"key:" + subject, ModeEnforce, true}, {"abc", ModeUnlimited, true}, {"evil", ModeDeny, false}} {
			r, err := c.Check(ctx, "free", tc.subject, 1)
			if err != nil || r.Allowed != tc.allowed || r.Mode != tc.mode || r.Policy != "free" || r.Quota != 20 || r.Window != 2*time.Second {
				t.Fatalf("RESP%d: Check(free, %s) = %+v, %v; want mode %s, 20 per 2s", proto, tc.subject, r, err, tc.mode)
			}
		}
	})
}
