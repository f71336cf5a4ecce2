package httplimit

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-rl/sluice/client"
)

// The middleware over the server's policies and overrides: one policy for every key, or one
// chosen per request.

// policyClient returns a client of srvAddr with named replies, and defines free (1 a second,
// burst 1) and pro (2 a minute, burst 2) with an UNLIMITED override for "internal" and a DENY
// one for "evil" under both.
func policyClient(t *testing.T, rdb *redis.Client) *client.Client {
	t.Helper()
	named := redis.NewClient(&redis.Options{Addr: rdb.Options().Addr, Protocol: 3, MaxRetries: -1,
		DisableIndentity: true, OnConnect: client.NamedReplies})
	t.Cleanup(func() { named.Close() })
	c := client.New(named)
	ctx := context.Background()
	for name, l := range map[string]client.Limit{
		"free": client.Token("", client.PerSecond(1), 1),
		"pro":  client.Token("", client.PerMinute(2), 2),
	} {
		if err := c.SetPolicy(ctx, name, l, client.PolicyOptions{}); err != nil {
			t.Fatal(err)
		}
		for subject, o := range map[string]client.Override{"internal": client.Unlimited(), "evil": client.Deny()} {
			if err := c.SetOverride(ctx, name, subject, o); err != nil {
				t.Fatal(err)
			}
		}
	}
	return c
}

// With a server policy, a DENY override gets 403 and an UNLIMITED one is served.
func TestMiddlewareWithAPolicyAndOverrides(t *testing.T) {
	_, rdb := frozenServer(t)
	policyClient(t, rdb)
	_, ts := serve(t, client.New(rdb), Options{Key: Header("X-API-Key"), OnError: FailClosed, Timeout: time.Second, Policy: "free"})
	for _, tc := range []struct {
		key    string
		status []int
	}{{"evil", []int{403}}, {"internal", []int{200, 200, 200}}, {"k", []int{200, 429}}} {
		for i, want := range tc.status {
			if resp := get(t, ts.URL, "X-API-Key", tc.key); resp.StatusCode != want {
				t.Fatalf("%s, request %d: %d; want %d", tc.key, i+1, resp.StatusCode, want)
			}
		}
	}
}

// problemOf does one request and decodes its problem body, if any.
func problemOf(t *testing.T, url, key string) (*http.Response, Problem) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("X-API-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p Problem
	if resp.Header.Get("Content-Type") == "application/problem+json" {
		if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
			t.Fatal(err)
		}
	}
	return resp, p
}

// PolicyOf picks each key's tier: each tier's limit and fields are its policy's, an UNLIMITED
// subject is served without fields, a DENY one gets 403 naming the policy, a key with no tier
// gets 403 with the function's error, and a tier the server does not know fails as configured.
func TestMiddlewareChoosesThePolicyPerRequest(t *testing.T) {
	_, rdb := frozenServer(t)
	c := policyClient(t, rdb)
	tiers := map[string]string{"f1": "free", "p1": "pro", "internal": "pro", "evil": "free", "gold1": "gold"}
	l, ts := serve(t, c, Options{Key: Header("X-API-Key"), OnError: FailClosed, Timeout: time.Second,
		PolicyOf: func(r *http.Request, key string) (string, error) {
			if tier, ok := tiers[key]; ok {
				return tier, nil
			}
			return "", errors.New("unknown API key")
		}})
	for _, tc := range []struct {
		key            string
		status         int
		policy, remain string
	}{
		{"f1", 200, `"free";q=1;w=1`, `"free";r=0;t=1`},
		{"f1", 429, `"free";q=1;w=1`, `"free";r=0;t=1`},
		{"p1", 200, `"pro";q=2;w=60`, `"pro";r=1;t=30`},
		{"p1", 200, `"pro";q=2;w=60`, `"pro";r=0;t=60`},
		{"p1", 429, `"pro";q=2;w=60`, `"pro";r=0;t=60`},
		{"internal", 200, "", ""},
		{"internal", 200, "", ""},
		{"internal", 200, "", ""},
	} {
		resp, p := problemOf(t, ts.URL, tc.key)
		if resp.StatusCode != tc.status || resp.Header.Get("RateLimit-Policy") != tc.policy || resp.Header.Get("RateLimit") != tc.remain {
			t.Fatalf("%s: %d %v; want %d with %s and %s", tc.key, resp.StatusCode, resp.Header, tc.status, tc.policy, tc.remain)
		}
		if tc.status == 429 && (len(p.ViolatedPolicies) != 1 || p.ViolatedPolicies[0] != tiers[tc.key] || resp.Header.Get("Retry-After") == "") {
			t.Fatalf("%s: 429 problem %+v, Retry-After %q; want one naming %s", tc.key, p, resp.Header.Get("Retry-After"), tiers[tc.key])
		}
	}
	if resp, p := problemOf(t, ts.URL, "evil"); resp.StatusCode != 403 || resp.Header.Get("Retry-After") != "" ||
		len(p.ViolatedPolicies) != 1 || p.ViolatedPolicies[0] != "free" {
		t.Fatalf("a DENY override: %d %v %+v; want 403 naming free", resp.StatusCode, resp.Header, p)
	}
	if resp, p := problemOf(t, ts.URL, "nobody"); resp.StatusCode != 403 || p.Detail != "unknown API key" {
		t.Fatalf("a key without a tier: %d %+v; want 403 with the error", resp.StatusCode, p)
	}
	if resp, _ := problemOf(t, ts.URL, "gold1"); resp.StatusCode != 503 {
		t.Fatalf("a tier the server does not know, failing closed: %d; want 503", resp.StatusCode)
	}
	if s := l.Stats(); s.Allowed != 6 || s.Denied != 2 || s.Forbidden != 2 || s.Failures != 1 || s.FailClose != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// A policy the server does not know is a refusal of those requests, not an outage: they fail
// as OnError says, but the breaker stays closed and the other keys are still decided.
func TestAnUnknownPolicyDoesNotOpenTheBreaker(t *testing.T) {
	_, rdb := frozenServer(t)
	c := policyClient(t, rdb)
	l, ts := serve(t, c, Options{Key: Header("X-API-Key"), OnError: FailClosed, Timeout: time.Second,
		Breaker: Breaker{Failures: 2, Cooldown: time.Hour},
		PolicyOf: func(r *http.Request, key string) (string, error) {
			if key == "gold1" {
				return "gold", nil
			}
			return "pro", nil
		}})
	for i := 0; i < 5; i++ {
		if resp := get(t, ts.URL, "X-API-Key", "gold1"); resp.StatusCode != 503 {
			t.Fatalf("unknown tier, request %d: %d; want 503", i+1, resp.StatusCode)
		}
	}
	if resp := get(t, ts.URL, "X-API-Key", "p1"); resp.StatusCode != 200 || resp.Header.Get("RateLimit") == "" {
		t.Fatalf("a pro key after the unknown tier's failures: %d %v; want decided and admitted", resp.StatusCode, resp.Header)
	}
	if s := l.Stats(); s.Failures != 5 || s.Skipped != 0 || s.Trips != 0 || s.Breaker != BreakerClosed {
		t.Fatalf("stats %+v; want 5 failures and the breaker closed", s)
	}
}
