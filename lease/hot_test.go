package lease_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-rl/sluice/client/sluicetest"
)

// leaseInfo reads INFO leases' integer fields.
func leaseInfo(t *testing.T, rdb *redis.Client) map[string]int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "leases").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, line := range strings.Split(info, "\r\n") {
		k, v, ok := strings.Cut(line, ":")
		if n, err := strconv.ParseInt(v, 10, 64); ok && err == nil {
			out[k] = n
		}
	}
	return out
}

// TestHotKeyIsLeasedAndColdKeyForwarded: a tier with --upstream-lease-hot 1
// leases the key with the most requests and forwards another key that is
// asked for less, both matching --upstream-lease-keys.
func TestHotKeyIsLeasedAndColdKeyForwarded(t *testing.T) {
	up := sluicetest.Start(t)
	tier := sluicetest.Start(t, "--upstream", up.Addr, "--upstream-lease-hot", "1")
	ctx := context.Background()
	rdb := tier.Client(2)
	// decide reports whether the request was admitted: a leased key's
	// request that its stock cannot pay while a refill is in flight is
	// denied at once.
	decide := func(key string) bool {
		t.Helper()
		v, err := rdb.Do(ctx, "RL.TOKEN", key, "100000/s", 100000).Slice()
		if err != nil {
			t.Fatalf("RL.TOKEN %s through the tier: %v", key, err)
		}
		return v[0] == int64(1)
	}
	// Until the counts name a hot key, every request is forwarded.
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; leaseInfo(t, rdb)["lease_local_decisions"] == 0; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("no decision served from stock 5 s into a hot key's traffic:\n%s", rdb.Info(ctx, "leases").Val())
		}
		decide("hot")
		if i%10 == 0 {
			decide("cold")
		}
	}
	before := leaseInfo(t, rdb)
	for i := 0; i < 20; i++ {
		if !decide("cold") {
			t.Fatal("the cold key was denied: the upstream's bucket holds 100000")
		}
	}
	mid := leaseInfo(t, rdb)
	if fwd := mid["lease_forwarded"] - before["lease_forwarded"]; fwd != 20 || mid["lease_local_decisions"] != before["lease_local_decisions"] {
		t.Fatalf("20 requests on the cold key: %d forwarded, local decisions %d → %d; want all 20 forwarded",
			fwd, before["lease_local_decisions"], mid["lease_local_decisions"])
	}
	admitted := int64(0)
	for i := 0; i < 20; i++ {
		if decide("hot") {
			admitted++
		}
	}
	after := leaseInfo(t, rdb)
	if fwd := after["lease_forwarded"] - mid["lease_forwarded"]; fwd != 0 || after["lease_local_decisions"]-mid["lease_local_decisions"] != admitted || admitted == 0 {
		t.Fatalf("20 requests on the hot key, %d admitted: %d forwarded, %d served from stock; want every admitted one from stock",
			admitted, fwd, after["lease_local_decisions"]-mid["lease_local_decisions"])
	}
	if after["leased_keys"] != 1 || after["lease_hot_keys"] != 1 {
		t.Fatalf("leased_keys %d, lease_hot_keys %d; want 1 and 1 (the hot key only)", after["leased_keys"], after["lease_hot_keys"])
	}
}
