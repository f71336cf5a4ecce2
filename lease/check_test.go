package lease_test

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-rl/sluice/client/sluicetest"
)

// TestCheckThroughTwoTiersNeverAdmitsMoreThanTheUpstreamBucket: RL.CHECK
// of a token bucket policy (1000/s, capacity 100) and of a fixed window
// policy (50 per second) on one hot subject, hammered through two tiers,
// is served from leased stock and admits at most what the upstream's
// limit admits: C + r·t for the bucket, 50 per window touched for the
// window. A sliding window policy is forwarded, and so is a subject with
// an override on the upstream (DENY: denied through the tier too).
func TestCheckThroughTwoTiersNeverAdmitsMoreThanTheUpstreamBucket(t *testing.T) {
	ctx := context.Background()
	up := sluicetest.Start(t)
	tiers := []*sluicetest.Server{
		sluicetest.Start(t, "--upstream", up.Addr),
		sluicetest.Start(t, "--upstream", up.Addr),
	}
	for _, s := range append([]*sluicetest.Server{up}, tiers...) {
		rdb := s.Client(2)
		for _, p := range [][]any{{"api", "TOKEN", "1000/s", 100}, {"win", "FIXED", 50, "1s"}, {"slide", "SLIDING", 10, "1s"}} {
			if err := rdb.Do(ctx, append([]any{"RL.POLICY", "SET"}, p...)...).Err(); err != nil {
				t.Fatalf("RL.POLICY SET %v on %s: %v", p, s.Addr, err)
			}
		}
	}
	if err := up.Client(2).Do(ctx, "RL.OVERRIDE", "SET", "api", "vip", "DENY").Err(); err != nil {
		t.Fatalf("RL.OVERRIDE SET on the upstream: %v", err)
	}

	hammer := func(policy string, d time.Duration) (admitted int64, span time.Duration) {
		var n atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for _, tr := range tiers {
			rdb := tr.Client(2)
			for w := 0; w < 2; w++ {
				wg.Add(1)
				go func(rdb *redis.Client) {
					defer wg.Done()
					for time.Since(start) < d {
						v, err := rdb.Do(ctx, "RL.CHECK", policy, "hot").Slice()
						if err != nil {
							t.Errorf("RL.CHECK %s hot through a tier: %v", policy, err)
							return
						}
						if v[0] == int64(1) {
							n.Add(1)
						}
					}
				}(rdb)
			}
		}
		wg.Wait()
		return n.Load(), time.Since(start)
	}
	local := func() (n int64) {
		for _, tr := range tiers {
			n += leaseInfo(t, tr.Client(2))["lease_local_decisions"]
		}
		return n
	}

	got, span := hammer("api", 1500*time.Millisecond)
	bound := 100 + int64(1000*span.Seconds())
	t.Logf("RL.CHECK api hot: admitted %d in %v through 2 tiers; C + r·t = %d (under by %d)", got, span.Round(time.Millisecond), bound, bound-got)
	if got > bound {
		t.Fatalf("admitted %d in %v; the policy's bucket admits at most %d", got, span, bound)
	}
	if got < 100 {
		t.Fatalf("admitted %d: the tiers served almost nothing", got)
	}
	servedLocally := local()
	if servedLocally < got/2 {
		t.Fatalf("%d of %d admitted served from leased stock; want most", servedLocally, got)
	}

	got, span = hammer("win", 1200*time.Millisecond)
	windows := int64(math.Ceil(span.Seconds())) + 1
	t.Logf("RL.CHECK win hot: admitted %d in %v through 2 tiers; at most 50 in each of %d windows", got, span.Round(time.Millisecond), windows)
	if got > 50*windows || got < 50 {
		t.Fatalf("admitted %d in %v; want from 50 to %d (50 per window)", got, span, 50*windows)
	}
	if local() <= servedLocally {
		t.Fatal("no RL.CHECK of the fixed window policy was served from leased stock")
	}

	rdb := tiers[0].Client(2)
	before := leaseInfo(t, rdb)["lease_forwarded"]
	for i := 0; i < 12; i++ {
		v, err := rdb.Do(ctx, "RL.CHECK", "slide", "s").Slice()
		if err != nil {
			t.Fatalf("RL.CHECK slide through a tier: %v", err)
		}
		if want := int64(1); i >= 10 {
			want = 0
			if v[0] != want {
				t.Fatalf("RL.CHECK slide #%d = %v; want denied past the limit of 10", i+1, v)
			}
		} else if v[0] != want {
			t.Fatalf("RL.CHECK slide #%d = %v; want admitted", i+1, v)
		}
	}
	if fwd := leaseInfo(t, rdb)["lease_forwarded"] - before; fwd != 12 {
		t.Fatalf("%d of 12 RL.CHECK of a sliding window policy forwarded; want all", fwd)
	}
	for i := 0; i < 3; i++ {
		v, err := rdb.Do(ctx, "RL.CHECK", "api", "vip").Slice()
		if err != nil || v[0] != int64(0) {
			t.Fatalf("RL.CHECK api vip (DENY upstream) through a tier = %v, %v; want denied", v, err)
		}
	}
}
