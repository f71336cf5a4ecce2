package lease_test

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/client/sluicetest"
)

// scrape reads the metrics of the endpoint at addr: each unlabelled
// sample's value by name.
func scrape(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		name, val, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") || strings.Contains(name, "{") {
			continue
		}
		if v, err := strconv.ParseFloat(val, 64); err == nil {
			out[name] = v
		}
	}
	return out
}

// TestTierMetricsOnTheEndpoint scrapes a running tier's --metrics-bind
// endpoint: the stock and the lease size while a key is leased, the takes
// and the local decisions, the return when the lease ends, the forwarded
// calls, and the upstream errors and upstream_up once the upstream is gone.
func TestTierMetricsOnTheEndpoint(t *testing.T) {
	up := sluicetest.Start(t)
	tier := sluicetest.Start(t, "--upstream", up.Addr, "--upstream-lease-ttl", "100", "--upstream-timeout", "300",
		"--metrics-bind", "127.0.0.1:0")
	addr := tier.Listening("metrics")
	if addr == "" {
		t.Fatalf("the tier reports no metrics address:\n%s", tier.Log())
	}
	ctx := context.Background()
	rdb := tier.Client(2)
	// A request the stock cannot pay while a refill is in flight is denied
	// at once: count the admitted ones.
	decisions := 0
	for i := 0; i < 50; i++ {
		v, err := rdb.Do(ctx, "RL.TOKEN", "hot", "1000/s", 100).Slice()
		if err != nil {
			t.Fatalf("RL.TOKEN through the tier: %v", err)
		}
		if v[0] == int64(1) {
			decisions++
		}
	}
	if err := rdb.Do(ctx, "RL.LEAKY", "cold", "10/s", 10).Err(); err != nil {
		t.Fatalf("RL.LEAKY through the tier: %v", err)
	}
	m := scrape(t, addr)
	want := func(name string, ok func(float64) bool, what string) {
		t.Helper()
		v, found := m[name]
		if !found || !ok(v) {
			t.Fatalf("%s = %v (exported: %v); want %s", name, v, found, what)
		}
	}
	want("sluice_lease_upstream_up", func(v float64) bool { return v == 1 }, "1")
	want("sluice_lease_keys", func(v float64) bool { return v == 1 }, "1 (hot)")
	want("sluice_lease_refills_total", func(v float64) bool { return v >= 1 }, "at least the first take")
	want("sluice_lease_refilled_units_total", func(v float64) bool { return v >= float64(decisions) }, "at least the units spent")
	want("sluice_lease_last_batch_units", func(v float64) bool { return v >= 1 && v <= 100 }, "a batch in [1, capacity]")
	want("sluice_lease_local_decisions_total", func(v float64) bool { return v == float64(decisions) }, "every admitted RL.TOKEN")
	want("sluice_lease_forwarded_total", func(v float64) bool { return v == 1 }, "the RL.LEAKY")
	want("sluice_lease_upstream_errors_total", func(v float64) bool { return v == 0 }, "0")
	held := m["sluice_lease_stock_units"]
	if taken := m["sluice_lease_refilled_units_total"]; held != taken-float64(decisions) {
		t.Fatalf("sluice_lease_stock_units = %v; want the %v units taken less the %d spent", held, taken, decisions)
	}

	// The lease ends 100 ms after its last use, once no refill is in
	// flight (a refill asked for by the last denied requests may land
	// after the figures above): then its whole stock, every unit taken
	// less those spent, goes back.
	ended := func(m map[string]float64) bool {
		return m["sluice_lease_keys"] == 0 &&
			m["sluice_lease_returned_units_total"] == m["sluice_lease_refilled_units_total"]-float64(decisions)
	}
	deadline := time.Now().Add(5 * time.Second)
	for m = scrape(t, addr); !ended(m); m = scrape(t, addr) {
		if time.Now().After(deadline) {
			t.Fatalf("5 s after the lease's last use: %v keys, %v units returned of %v taken less %d spent",
				m["sluice_lease_keys"], m["sluice_lease_returned_units_total"], m["sluice_lease_refilled_units_total"], decisions)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if left := m["sluice_lease_refilled_units_total"] - float64(decisions); left > 0 {
		want("sluice_lease_returns_total", func(v float64) bool { return v >= 1 }, "at least 1")
	}
	want("sluice_lease_stock_units", func(v float64) bool { return v == 0 }, "0 once the lease ended")

	up.Kill()
	if err := rdb.Do(ctx, "RL.LEAKY", "cold", "10/s", 10).Err(); err == nil {
		t.Fatal("a forwarded RL.LEAKY succeeded with the upstream killed")
	}
	m = scrape(t, addr)
	want("sluice_lease_upstream_errors_total", func(v float64) bool { return v >= 1 }, "at least 1")
	want("sluice_lease_upstream_up", func(v float64) bool { return v == 0 }, "0 right after the failure")
}
