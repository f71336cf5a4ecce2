package lease_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-rl/sluice/client/sluicetest"
)

// TestTierAuthenticatesToTheUpstream: a tier given the upstream's
// password (requirepass), or an ACL user and its password, serves leased
// and forwarded requests; the upstream sees the tier's connections as that
// user. A wrong password leaves the tier as if the upstream were
// unreachable: leased keys fail closed, forwarded requests answer
// CLUSTERDOWN, and the log says the upstream refused the tier's AUTH.
func TestTierAuthenticatesToTheUpstream(t *testing.T) {
	ctx := context.Background()
	up := sluicetest.Start(t, "--requirepass", "s3cret")
	admin := redis.NewClient(&redis.Options{Addr: up.Addr, Password: "s3cret", Protocol: 2})
	defer admin.Close()
	if err := admin.Do(ctx, "ACL", "SETUSER", "tier", "on", ">tierpw", "~*", "+@all").Err(); err != nil {
		t.Fatalf("ACL SETUSER on the upstream: %v", err)
	}
	serves := func(name string, tier *sluicetest.Server) {
		t.Helper()
		rdb := tier.Client(2)
		v, err := rdb.Do(ctx, "RL.TOKEN", name, "100/s", 10).Slice()
		if err != nil || v[0] != int64(1) {
			t.Fatalf("%s: RL.TOKEN through the tier = %v, %v; want admitted\n%s", name, v, err, tier.Log())
		}
		if v, err := rdb.Do(ctx, "RL.LEAKY", name+"-fwd", "100/s", 10).Slice(); err != nil || v[0] != int64(1) {
			t.Fatalf("%s: forwarded RL.LEAKY = %v, %v; want admitted", name, v, err)
		}
		// The upstream's bucket was debited by the tier's take.
		if n, err := admin.Exists(ctx, name, name+"-fwd").Result(); err != nil || n != 2 {
			t.Fatalf("%s: EXISTS on the upstream = %d, %v; want both keys", name, n, err)
		}
	}
	withPass := sluicetest.Start(t, "--upstream", up.Addr, "--upstream-password", "s3cret")
	serves("by-requirepass", withPass)
	withUser := sluicetest.Start(t, "--upstream", up.Addr, "--upstream-user", "tier", "--upstream-password", "tierpw")
	serves("by-acl-user", withUser)
	list, err := admin.ClientList(ctx).Result()
	if err != nil || !strings.Contains(list, "user=tier ") {
		t.Fatalf("CLIENT LIST on the upstream shows no connection of user tier (%v):\n%s", err, list)
	}

	for _, c := range []struct {
		name string
		args []string
		log  string
	}{
		{"wrong-password", []string{"--upstream-user", "tier", "--upstream-password", "wrong"}, "WRONGPASS"},
		{"no-password", nil, "NOAUTH"},
	} {
		tier := sluicetest.Start(t, append([]string{"--upstream", up.Addr}, c.args...)...)
		rdb := tier.Client(2)
		v, err := rdb.Do(ctx, "RL.TOKEN", "k", "100/s", 10).Slice()
		if err != nil || v[0] != int64(0) {
			t.Fatalf("%s: RL.TOKEN = %v, %v; want denied (the closed fallback)", c.name, v, err)
		}
		if err := rdb.Do(ctx, "RL.LEAKY", "k-fwd", "100/s", 10).Err(); err == nil || !strings.HasPrefix(err.Error(), "CLUSTERDOWN") {
			t.Fatalf("%s: forwarded RL.LEAKY = %v; want CLUSTERDOWN", c.name, err)
		}
		if n, _ := admin.Exists(ctx, "k", "k-fwd").Result(); n != 0 {
			t.Fatalf("%s: the upstream has %d of the keys; the refused tier must apply nothing", c.name, n)
		}
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(tier.Log(), "refused the tier's AUTH") || !strings.Contains(tier.Log(), c.log) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the log does not say the upstream refused the tier's AUTH (%s):\n%s", c.name, c.log, tier.Log())
			}
			time.Sleep(20 * time.Millisecond)
		}
		info := rdb.Info(ctx, "leases").Val()
		if !strings.Contains(info, "upstream_up:0") || strings.Contains(info, "lease_upstream_errors:0\r") {
			t.Fatalf("%s: INFO leases after a refused AUTH:\n%s", c.name, info)
		}
	}
}
