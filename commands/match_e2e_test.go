package commands

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/policy"
)

// matchRules is an envoyproxy/ratelimit rules file: a per-address limit,
// a blocked address, nested per-user and per-plan limits, an unlimited
// plan, a shadow plan, a path limit an enterprise tier replaces, and a
// whitelisted key.
const matchRules = `domain: api
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 5}
  - key: remote_address
    value: 10.0.0.66
    rate_limit: {unit: second, requests_per_unit: 0}
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 10}
    descriptors:
      - key: plan
        value: free
        rate_limit: {unit: minute, requests_per_unit: 2}
      - key: plan
        value: internal
        rate_limit: {unlimited: true}
      - key: plan
        value: trial
        shadow_mode: true
        rate_limit: {unit: minute, requests_per_unit: 1}
  - key: path
    value: /api/*
    rate_limit: {unit: minute, requests_per_unit: 4, name: api_paths}
  - key: tier
    value: enterprise
    rate_limit:
      unit: minute
      requests_per_unit: 100
      replaces: [{name: api_paths}]
  - key: health
`

// startMatchServer starts a server whose rules file holds matchRules.
func startMatchServer(t *testing.T, loops int) *testServer {
	t.Helper()
	path := filepath.Join(t.TempDir(), "api.yaml")
	if err := os.WriteFile(path, []byte(matchRules), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := policy.NewRegistry()
	w := policy.NewWatcher(policy.WatchConfig{Paths: []string{path}, Apply: func(rs *policy.RuleSet) error {
		reg.SetRules(rs)
		return nil
	}})
	if err := w.Reload(1); err != nil {
		t.Fatal(err)
	}
	return startServer(t, testConfig{EventLoops: loops, Policies: reg, Rules: w})
}

// TestMatchAppliesEnvoyRulesPerDescriptor: RL.MATCH answers as Envoy's
// rate limit service would: the most specific rule per descriptor, each
// decided on its own, unlimited and whitelisted descriptors OK, a
// requests_per_unit 0 rule over its limit at once, shadow_mode reported OK,
// replaces, HITS 0 checking without counting; positional and named.
func TestMatchAppliesEnvoyRulesPerDescriptor(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		s := startMatchServer(t, loops)
		s.at(0) // a frozen clock 16 h into a day: windows end 60 s after a whole minute
		rdb := s.client(t, proto(2))
		m := func(args ...any) string {
			t.Helper()
			return fmt.Sprint(do(t, rdb, append([]any{"RL.MATCH", "api"}, args...)...))
		}
		// A free user: its plan's 2/minute and the user's 10/minute.
		for i, want := range []string{
			"[1 [[1 2 1 60000 0]]]", "[1 [[1 2 0 60000 0]]]", "[2 [[2 2 0 60000 60000]]]",
		} {
			if got := m("DESCRIPTOR", "user", "u1", "plan", "free"); got != want {
				t.Fatalf("free user, call %d = %s; want %s", i+1, got, want)
			}
		}
		// Two descriptors, decided each on its own: the address counts even
		// though the free plan is over its limit; the overall code is over.
		if got, want := m("DESCRIPTOR", "remote_address", "203.0.113.7", "DESCRIPTOR", "user", "u1", "plan", "free"),
			"[2 [[1 5 4 60000 0] [2 2 0 60000 60000]]]"; got != want {
			t.Fatalf("address and free user = %s; want %s", got, want)
		}
		// HITS 0 checks without counting.
		if got, want := m("HITS", 0, "DESCRIPTOR", "remote_address", "203.0.113.7"), "[1 [[1 5 4 60000 0]]]"; got != want {
			t.Fatalf("HITS 0 = %s; want %s", got, want)
		}
		for _, tc := range []struct {
			name string
			args []any
			want string
		}{
			{"blocked address", []any{"DESCRIPTOR", "remote_address", "10.0.0.66"}, "[2 [[2 0 0 1000 -1]]]"},
			{"unlimited plan", []any{"DESCRIPTOR", "user", "u2", "plan", "internal"}, "[1 [[1 0 4294967295 0 0]]]"},
			{"whitelisted key", []any{"DESCRIPTOR", "health", "x"}, "[1 [[1 0 0 0 0]]]"},
			{"no rule", []any{"DESCRIPTOR", "nosuch", "x"}, "[1 [[1 0 0 0 0]]]"},
			{"unknown domain", nil, "[1 [[1 0 0 0 0]]]"},
			{"replaced path limit", []any{"DESCRIPTOR", "path", "/api/v1", "DESCRIPTOR", "tier", "enterprise"},
				"[1 [[1 0 0 0 0] [1 100 99 60000 0]]]"},
		} {
			args := tc.args
			domain := "api"
			if args == nil {
				domain, args = "other", []any{"DESCRIPTOR", "user", "u1"}
			}
			got := fmt.Sprint(do(t, rdb, append([]any{"RL.MATCH", domain}, args...)...))
			if got != tc.want {
				t.Errorf("%s = %s; want %s", tc.name, got, tc.want)
			}
		}
		// shadow_mode: over its limit, reported OK; the named reply says so by name.
		m("DESCRIPTOR", "user", "u3", "plan", "trial")
		if got, want := m("DESCRIPTOR", "user", "u3", "plan", "trial"), "[1 [[1 1 0 60000 0]]]"; got != want {
			t.Errorf("shadow plan over its limit = %s; want %s", got, want)
		}
		named := s.client(t, proto(3))
		do(t, named, "CLIENT", "NAMED-REPLY", "ON")
		got := fmt.Sprint(do(t, named, "RL.MATCH", "api", "DESCRIPTOR", "path", "/api/x"))
		want := "map[code:OK statuses:[map[code:OK limit:4 name:api_paths remaining:3 reset_after_ms:60000 retry_after_ms:0]]]"
		if got != want {
			t.Errorf("named reply = %s; want %s", got, want)
		}
	})
}

// TestMatchRefusesBadArguments: Redis-style errors, and the server keeps
// serving the connection.
func TestMatchRefusesBadArguments(t *testing.T) {
	s := startMatchServer(t, 2)
	rdb := s.client(t, proto(2))
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"RL.MATCH", "api", "DESCRIPTOR", "k"}, "ERR wrong number of arguments for 'rl.match' command"},
		{[]any{"RL.MATCH", "api", "DESCRIPTOR", "k", "v", "k2"}, "ERR RL.MATCH needs DESCRIPTOR followed by key value pairs, at least one of each"},
		{[]any{"RL.MATCH", "api", "DESCRIPTOR", "DESCRIPTOR", "k", "v"}, "ERR RL.MATCH needs DESCRIPTOR followed by key value pairs, at least one of each"},
		{[]any{"RL.MATCH", "api", "HITS", -1, "DESCRIPTOR", "k", "v"}, "ERR HITS must be a non-negative integer"},
		{[]any{"RL.MATCH", "api", "HITS", "x", "DESCRIPTOR", "k", "v"}, "ERR HITS must be a non-negative integer"},
		{[]any{"RL.MATCH", "api", "k", "v", "DESCRIPTOR", "k", "v"}, "ERR syntax error"},
		{[]any{"RL.MATCH", "", "DESCRIPTOR", "k", "v"}, "ERR rate limit domain must not be empty"},
	} {
		if got := doErr(t, rdb, tc.args...); got != tc.want {
			t.Errorf("%v = %q; want %q", tc.args, got, tc.want)
		}
	}
	if got := do(t, rdb, "PING"); got != "PONG" {
		t.Fatalf("PING after the errors = %v", got)
	}
}

// TestMatchStateKeysFollowACLPatterns: RL.MATCH's state keys are derived
// (rls:<domain>:…); a user limited to one domain's keys is refused
// another's.
func TestMatchStateKeysFollowACLPatterns(t *testing.T) {
	s := startMatchServer(t, 2)
	admin := s.client(t, proto(2))
	do(t, admin, "ACL", "SETUSER", "a", "on", ">pa", "~rls:other:*", "+@limiter", "+@connection")
	a := asUser(t, s, "a", "pa")
	const keyDenied = "NOPERM this user has no permissions to access one of the keys used as arguments"
	if got := doErr(t, a, "RL.MATCH", "api", "DESCRIPTOR", "remote_address", "1.2.3.4"); got != keyDenied {
		t.Fatalf("RL.MATCH on another domain's keys = %q; want %q", got, keyDenied)
	}
	if got := fmt.Sprint(do(t, admin, "RL.MATCH", "api", "HITS", 0, "DESCRIPTOR", "remote_address", "1.2.3.4")); !strings.HasPrefix(got, "[1 [[1 5 5 ") {
		t.Fatalf("the refused call counted: %s", got)
	}
}
