package lease_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-rl/sluice/client/sluicetest"
)

// hammer sends RL.TOKEN key 1000/s 100 through rdb until stop closes and
// counts the admitted; an error reply stops it.
func hammer(t *testing.T, rdb *redis.Client, admitted *atomic.Int64, stop <-chan struct{}, wg *sync.WaitGroup) {
	defer wg.Done()
	ctx := context.Background()
	for {
		select {
		case <-stop:
			return
		default:
		}
		v, err := rdb.Do(ctx, "RL.TOKEN", "hot", "1000/s", 100).Slice()
		if err != nil {
			return // a killed tier
		}
		if v[0] == int64(1) {
			admitted.Add(1)
		}
	}
}

// TestFourLeaseholdersNeverAdmitMoreThanTheUpstreamBucket: one upstream
// (a single node, and a 3-node group's leader), four tiers over it, one hot
// key at 1000/s capacity 100 hammered through all four for 2 s, one tier
// killed with SIGKILL half way. Every admitted request spent a token the
// upstream had debited, so the total is at most 100 + 1000·t, t the
// hammering's whole span.
func TestFourLeaseholdersNeverAdmitMoreThanTheUpstreamBucket(t *testing.T) {
	t.Run("node", func(t *testing.T) { fourLeaseholders(t, sluicetest.Start(t).Addr) })
	t.Run("group", func(t *testing.T) {
		n1 := sluicetest.Start(t, "--node-id", "n1", "--raft-bind", "127.0.0.1:0", "--bootstrap", "yes")
		waitInfo(t, n1, "replication", "role:leader")
		for _, id := range []string{"n2", "n3"} {
			sluicetest.Start(t, "--node-id", id, "--raft-bind", "127.0.0.1:0", "--join", n1.Addr)
		}
		waitInfo(t, n1, "replication", "members:3")
		fourLeaseholders(t, n1.Addr)
	})
}

func fourLeaseholders(t *testing.T, upstream string) {
	var tiers []*sluicetest.Server
	for i := 0; i < 4; i++ {
		tiers = append(tiers, sluicetest.Start(t, "--upstream", upstream, "--upstream-lease-ttl", "200"))
	}
	var admitted atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	start := time.Now()
	for _, tr := range tiers {
		rdb := tr.Client(2)
		for w := 0; w < 2; w++ {
			wg.Add(1)
			go hammer(t, rdb, &admitted, stop, &wg)
		}
	}
	time.Sleep(time.Second)
	tiers[3].Kill()
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	span := time.Since(start)
	bound := 100 + int64(1000*span.Seconds())
	got := admitted.Load()
	t.Logf("admitted %d in %v through 4 leaseholders (one killed at 1 s); the bound 100 + 1000·t is %d: under by %d (%.1f%%)",
		got, span.Round(time.Millisecond), bound, bound-got, 100*float64(bound-got)/float64(bound))
	if got > bound {
		t.Fatalf("admitted %d in %v; the upstream's bucket admits at most %d", got, span, bound)
	}
	if got < 100 {
		t.Fatalf("admitted %d: the tiers served nothing", got)
	}
	info := tiers[0].Client(2).Info(context.Background(), "leases").Val()
	for _, field := range []string{"upstream:" + upstream, "lease_refills:", "lease_stock:", "lease_local_decisions:"} {
		if !contains(info, field) {
			t.Fatalf("INFO leases lacks %q:\n%s", field, info)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestUnreachableUpstreamFallbacks: with the upstream stopped (SIGSTOP), a
// closed tier spends what it holds and then denies; a local-share tier
// goes on admitting against its share of the limit.
func TestUnreachableUpstreamFallbacks(t *testing.T) {
	up := sluicetest.Start(t)
	closed := sluicetest.Start(t, "--upstream", up.Addr, "--upstream-timeout", "200")
	shared := sluicetest.Start(t, "--upstream", up.Addr, "--upstream-timeout", "200",
		"--upstream-fallback", "local-share", "--upstream-local-share", "0.5")
	ctx := context.Background()
	cc, sc := closed.Client(2), shared.Client(2)
	// Both hold stock of the key before the upstream stops.
	for _, rdb := range []*redis.Client{cc, sc} {
		if v := rdb.Do(ctx, "RL.TOKEN", "hot", "100/s", 100).Val(); v == nil {
			t.Fatalf("RL.TOKEN through a tier failed: %v", rdb.Do(ctx, "RL.TOKEN", "hot", "100/s", 100).Err())
		}
	}
	up.Pause()
	defer up.Resume()
	count := func(rdb *redis.Client, d time.Duration) (admitted, denied int) {
		for end := time.Now().Add(d); time.Now().Before(end); {
			v, err := rdb.Do(ctx, "RL.TOKEN", "hot", "100/s", 100).Slice()
			if err != nil {
				t.Fatalf("a decision while the upstream is stopped: %v", err)
			}
			if v[0] == int64(1) {
				admitted++
			} else {
				denied++
			}
		}
		return
	}
	a1, _ := count(cc, 700*time.Millisecond)
	a2, d2 := count(cc, 300*time.Millisecond)
	if a1 > 200 || a2 != 0 || d2 == 0 {
		t.Fatalf("closed fallback: admitted %d, then %d (denied %d); want at most the stock held, then none", a1, a2, d2)
	}
	s1, _ := count(sc, 700*time.Millisecond)
	s2, _ := count(sc, 300*time.Millisecond)
	// local share 0.5 of 100/s capacity 100: a bucket of 50 at 50/s, after the stock held.
	if s2 == 0 || s1+s2 > 200+50+50 {
		t.Fatalf("local-share fallback: admitted %d, then %d; want its share, and never none", s1, s2)
	}
	t.Logf("upstream stopped: closed tier admitted %d then %d; local-share tier admitted %d then %d", a1, a2, s1, s2)
}

// TestForwardThatCannotConnectIsNotApplied: when the tier cannot even
// connect to the upstream, a forwarded command was never sent, so its
// reply is CLUSTERDOWN (nothing applied, which clients retry), never
// UNKNOWN. Port 1 on loopback refuses at once: no test server binds it.
func TestForwardThatCannotConnectIsNotApplied(t *testing.T) {
	tier := sluicetest.Start(t, "--upstream", "127.0.0.1:1", "--upstream-timeout", "200")
	err := tier.Client(2).Do(context.Background(), "RL.SLIDING", "cold", 5, "1s").Err()
	if err == nil || !strings.HasPrefix(err.Error(), "CLUSTERDOWN") {
		t.Fatalf("a forward that could not connect answered %v; want CLUSTERDOWN", err)
	}
}
