package client

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-rl/sluice/client/sluicetest"
)

// TestMatchDecodesEnvoyRulesEndToEnd: Match against a server with an
// envoyproxy/ratelimit rules file, positional and named replies, RESP2 and
// RESP3: the per-descriptor statuses, the overall code, HITS 0.
func TestMatchDecodesEnvoyRulesEndToEnd(t *testing.T) {
	rules := filepath.Join(t.TempDir(), "api.yaml")
	text := "domain: api\ndescriptors:\n" +
		"  - key: remote_address\n    rate_limit: {unit: hour, requests_per_unit: 3}\n" +
		"  - key: user\n    descriptors:\n      - key: plan\n        value: internal\n        rate_limit: {unlimited: true}\n"
	if err := os.WriteFile(rules, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := sluicetest.Start(t, "--policies", rules)
	ctx := context.Background()
	addr := func(ip string) Descriptor { return Descriptor{{"remote_address", ip}} }
	internal := Descriptor{{"user", "u"}, {"plan", "internal"}}
	for _, named := range []bool{false, true} {
		for _, proto := range []int{2, 3} {
			opts := &redis.Options{Addr: srv.Addr, Protocol: proto, MaxRetries: -1, DisableIndentity: true}
			if named {
				opts.OnConnect = NamedReplies
			}
			rdb := redis.NewClient(opts)
			defer rdb.Close()
			c := New(rdb)
			ip := "192.0.2." + string(rune('0'+proto)) + map[bool]string{false: "0", true: "1"}[named]
			r, err := c.Match(ctx, "api", 1, addr(ip), internal)
			if err != nil {
				t.Fatalf("named %v RESP%d: %v", named, proto, err)
			}
			if r.Code != CodeOK || len(r.Statuses) != 2 {
				t.Fatalf("named %v RESP%d: %+v", named, proto, r)
			}
			a, u := r.Statuses[0], r.Statuses[1]
			if a.Code != CodeOK || a.Limit != 3 || a.Remaining != 2 || a.ResetAfter <= 0 || a.ResetAfter > time.Hour {
				t.Errorf("named %v RESP%d: address status %+v", named, proto, a)
			}
			if u.Code != CodeOK || u.Remaining != 4294967295 {
				t.Errorf("named %v RESP%d: unlimited status %+v", named, proto, u)
			}
			if r, err = c.Match(ctx, "api", 0, addr(ip)); err != nil || r.Statuses[0].Remaining != 2 {
				t.Errorf("named %v RESP%d: HITS 0 = %+v, %v; want 2 left, nothing counted", named, proto, r, err)
			}
			if r, err = c.Match(ctx, "api", 3, addr(ip)); err != nil || r.Code != CodeOverLimit || r.Statuses[0].Code != CodeOverLimit {
				t.Errorf("named %v RESP%d: 3 hits over 2 left = %+v, %v; want OVER_LIMIT", named, proto, r, err)
			}
		}
	}
}
