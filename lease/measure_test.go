package lease_test

import (
	"context"
	"flag"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-rl/sluice/client/sluicetest"
)

var hotkeyMeasure = flag.Bool("hotkey-measure", false, "run TestMeasureHotKey: hot-key decisions/s through 2 leaseholders against one upstream node or 3-node group directly")

// TestMeasureHotKey measures one hot key's decisions per second with 16
// client connections sending RL.TOKEN one at a time, either all to one
// upstream node or 8 to each of two leaseholders over it, in three
// interleaved rounds of 2 s after 0.5 s of warm-up (a new key each), and the upstream's RL.TAKE calls per second
// (INFO commandstats) while the leaseholders decide. It measures and
// asserts nothing about speed. Skipped unless -hotkey-measure is given:
//
//	go test ./lease -run TestMeasureHotKey -hotkey-measure -v
func TestMeasureHotKey(t *testing.T) {
	if !*hotkeyMeasure {
		t.Skip("a measurement: go test ./lease -run TestMeasureHotKey -hotkey-measure -v")
	}
	const conns, warm, d = 16, 500 * time.Millisecond, 2 * time.Second
	up := sluicetest.Start(t)
	tiers := []*sluicetest.Server{sluicetest.Start(t, "--upstream", up.Addr), sluicetest.Start(t, "--upstream", up.Addr)}
	client := func(s *sluicetest.Server) *redis.Client {
		rdb := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DisableIndentity: true, PoolSize: conns})
		t.Cleanup(func() { rdb.Close() })
		return rdb
	}
	direct := client(up)
	leased := []*redis.Client{client(tiers[0]), client(tiers[1])}
	// A 3-node group: n1 bootstraps, n2 and n3 join; the clients and the
	// leaseholders use its leader, n1.
	n1 := sluicetest.Start(t, "--node-id", "n1", "--raft-bind", "127.0.0.1:0", "--bootstrap", "yes")
	waitInfo(t, n1, "replication", "role:leader")
	for _, id := range []string{"n2", "n3"} {
		sluicetest.Start(t, "--node-id", id, "--raft-bind", "127.0.0.1:0", "--join", n1.Addr)
	}
	waitInfo(t, n1, "replication", "members:3")
	gtiers := []*sluicetest.Server{sluicetest.Start(t, "--upstream", n1.Addr), sluicetest.Start(t, "--upstream", n1.Addr)}
	groupDirect := client(n1)
	groupLeased := []*redis.Client{client(gtiers[0]), client(gtiers[1])}
	takes := func(upc *redis.Client) int64 {
		info := upc.Info(context.Background(), "commandstats").Val()
		m := regexp.MustCompile(`cmdstat_rl\.take:calls=(\d+)`).FindStringSubmatch(info)
		if m == nil {
			return 0
		}
		n, _ := strconv.ParseInt(m[1], 10, 64)
		return n
	}
	// run sends RL.TOKEN key through rdbs (conns/len(rdbs) connections
	// each) for warm + d and returns, over the last d, the decisions, the
	// admitted and the upstream's RL.TAKE calls per second.
	run := func(key string, upc *redis.Client, rdbs []*redis.Client) (decisions, admissions, takeRate float64) {
		var decided, admitted atomic.Int64
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for i := 0; i < conns; i++ {
			wg.Add(1)
			go func(rdb *redis.Client) {
				defer wg.Done()
				ctx := context.Background()
				for {
					select {
					case <-stop:
						return
					default:
					}
					v, err := rdb.Do(ctx, "RL.TOKEN", key, "1000000/s", 100000).Slice()
					if err != nil {
						t.Errorf("RL.TOKEN: %v", err)
						return
					}
					decided.Add(1)
					if v[0] == int64(1) {
						admitted.Add(1)
					}
				}
			}(rdbs[i%len(rdbs)])
		}
		time.Sleep(warm)
		d0, a0, t0, start := decided.Load(), admitted.Load(), takes(upc), time.Now()
		time.Sleep(d)
		d1, a1, t1 := decided.Load(), admitted.Load(), takes(upc)
		s := time.Since(start).Seconds()
		close(stop)
		wg.Wait()
		return float64(d1-d0) / s, float64(a1-a0) / s, float64(t1-t0) / s
	}
	type setup struct {
		name      string
		up        *redis.Client
		rdbs      []*redis.Client
		decisions []float64
		takes     []float64
	}
	setups := []*setup{
		{name: "directly on one node", up: direct, rdbs: []*redis.Client{direct}},
		{name: "through 2 leaseholders over that node", up: direct, rdbs: leased},
		{name: "directly on a 3-node group's leader", up: groupDirect, rdbs: []*redis.Client{groupDirect}},
		{name: "through 2 leaseholders over that group", up: groupDirect, rdbs: groupLeased},
	}
	for round := 0; round < 3; round++ {
		for i, st := range setups {
			r, a, tr := run(fmt.Sprintf("hot:%d:%d", i, round), st.up, st.rdbs)
			st.decisions, st.takes = append(st.decisions, r), append(st.takes, tr)
			t.Logf("round %d: %s: %.0f decisions/s (%.0f admitted/s); the upstream's RL.TAKE %.0f calls/s",
				round, st.name, r, a, tr)
		}
	}
	med := func(v []float64) float64 { s := slices.Clone(v); slices.Sort(s); return s[len(s)/2] }
	for _, st := range setups {
		t.Logf("median of 3: %s: %.0f decisions/s, the upstream's RL.TAKE %.0f calls/s", st.name, med(st.decisions), med(st.takes))
	}
	for _, tr := range append(tiers, gtiers...) {
		info := tr.Client(2).Info(context.Background(), "leases").Val()
		t.Logf("INFO leases of a leaseholder over %s:\n%s", tr.Addr, info)
	}
}

// waitInfo waits up to 15 s for s's INFO section to contain want.
func waitInfo(t *testing.T, s *sluicetest.Server, section, want string) {
	t.Helper()
	rdb := s.Client(2)
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if contains(rdb.Info(context.Background(), section).Val(), want) {
			return
		}
	}
	t.Fatalf("INFO %s of %s lacks %q after 15 s:\n%s", section, s.Addr, want, s.Log())
}
