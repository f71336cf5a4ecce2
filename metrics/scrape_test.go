package metrics

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/redis/go-redis/v9"

	"github.com/sluice-rl/sluice/commands"
	"github.com/sluice-rl/sluice/server"
	"github.com/sluice-rl/sluice/store"
)

// fixture is a sluice server (commands over a store, two event loops) on
// 127.0.0.1:0 and its metrics endpoint on 127.0.0.1:0.
type fixture struct {
	h       *commands.Handler
	obs     *Server
	rdb     *redis.Client
	metrics string // base URL
}

func start(t *testing.T) *fixture {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	obs := NewServer()
	mln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go obs.Serve(mln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		obs.Shutdown(ctx)
	})

	st := store.New(8)
	cfg := commands.DefaultConfig()
	cfg.Logger = quiet
	cfg.Stats = st
	h, err := commands.New(cfg, st, commands.NewClock())
	if err != nil {
		t.Fatal(err)
	}
	scfg := server.DefaultConfig()
	scfg.EventLoops, scfg.Clock, scfg.Logger = 2, h.Clock(), quiet
	srv, err := server.New(scfg, h)
	if err != nil {
		t.Fatal(err)
	}
	h.Attach(srv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	rdb := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), Protocol: 2})
	t.Cleanup(func() { rdb.Close() })
	return &fixture{h: h, obs: obs, rdb: rdb, metrics: "http://" + mln.Addr().String()}
}

// get fetches path and returns the status and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// scrape fetches /metrics and parses it with Prometheus's own parser.
func scrape(t *testing.T, f *fixture) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := get(t, f.metrics+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("the scrape does not parse: %v\n%s", err, body)
	}
	return fams
}

// value returns the value of the series of name with these labels
// (name=value pairs), and whether it exists.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	fam := fams[name]
	if fam == nil {
		return 0, false
	}
next:
	for _, m := range fam.Metric {
		for i := 0; i < len(labels); i += 2 {
			found := false
			for _, l := range m.Label {
				if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

func TestScrapeCountsDecisionsByCommandAndOutcome(t *testing.T) {
	f := start(t)
	if err := f.obs.Attach(f.h); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// 5 allowed then 3 denied from a bucket of 5 refilling 1 a minute,
	// pipelined; one command that fails, one rejected, one unknown.
	pipe := f.rdb.Pipeline()
	for i := 0; i < 8; i++ {
		pipe.Do(ctx, "RL.TOKEN", "tenant:secret-name", "1/m", 5)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.rdb.Do(ctx, "RL.TOKEN", "k", "nonsense", 5).Err(); err == nil {
		t.Fatal("a bad rate was accepted")
	}
	if err := f.rdb.Do(ctx, "RL.TOKEN", "k").Err(); err == nil {
		t.Fatal("RL.TOKEN with one argument was accepted")
	}
	if err := f.rdb.Do(ctx, "NOSUCH").Err(); err == nil {
		t.Fatal("an unknown command was accepted")
	}
	// Each connection's figures are added at the end of its batch: the
	// replies above are in, so are the figures.
	fams := scrape(t, f)
	want := []struct {
		name   string
		labels []string
		v      float64
	}{
		{"sluice_commands_total", []string{"command", "rl.token"}, 9},
		{"sluice_commands_rejected_total", []string{"command", "rl.token"}, 1},
		{"sluice_commands_failed_total", []string{"command", "rl.token"}, 1},
		{"sluice_decisions_total", []string{"command", "rl.token", "outcome", "allowed"}, 5},
		{"sluice_decisions_total", []string{"command", "rl.token", "outcome", "denied"}, 3},
		{"sluice_request_duration_seconds", []string{"family", "decision"}, 9},
		{"sluice_error_replies_total", []string{"code", "ERR"}, 3},
		{"sluice_keys", nil, 1}, // the bad rate created no key
		{"sluice_connected_clients", nil, 1},
		{"sluice_build_info", []string{"version", commands.Version}, 1},
	}
	for _, w := range want {
		got, ok := value(fams, w.name, w.labels...)
		if !ok || got != w.v {
			t.Errorf("%s%v = %v (present %v); want %v", w.name, w.labels, got, ok, w.v)
		}
	}
	for _, name := range []string{"process_resident_memory_bytes", "go_goroutines", "sluice_net_input_bytes_total"} {
		if _, ok := value(fams, name); !ok {
			t.Errorf("%s is missing", name)
		}
	}
	// No key ever becomes a label.
	for name, fam := range fams {
		for _, m := range fam.Metric {
			for _, l := range m.Label {
				if strings.Contains(l.GetValue(), "tenant") {
					t.Errorf("%s has the key in label %s=%q", name, l.GetName(), l.GetValue())
				}
			}
		}
	}
}

func TestScrapeHistogramBucketsAreCumulativeAndEndAtTheCount(t *testing.T) {
	f := start(t)
	if err := f.obs.Attach(f.h); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		if err := f.rdb.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	fams := scrape(t, f)
	fam := fams["sluice_request_duration_seconds"]
	if fam == nil || fam.GetType() != dto.MetricType_HISTOGRAM {
		t.Fatalf("sluice_request_duration_seconds: %v", fam)
	}
	for _, m := range fam.Metric {
		h := m.Histogram
		prev := uint64(0)
		for _, b := range h.Bucket {
			if b.GetCumulativeCount() < prev {
				t.Fatalf("%v: buckets decrease", m.Label)
			}
			prev = b.GetCumulativeCount()
		}
		if prev > h.GetSampleCount() {
			t.Fatalf("%v: the last bucket %d exceeds the count %d", m.Label, prev, h.GetSampleCount())
		}
		if m.Label[0].GetValue() == "connection" && h.GetSampleCount() < 20 {
			t.Fatalf("connection family: %d observations; want at least the 20 PINGs", h.GetSampleCount())
		}
	}
}

func TestProbesAnswerBeforeAndAfterTheStateIsReady(t *testing.T) {
	f := start(t)
	if code, body := get(t, f.metrics+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	if code, body := get(t, f.metrics+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "loading") {
		t.Fatalf("/readyz while loading: %d %q; want 503 saying loading", code, body)
	}
	f.obs.SetReady(func() error { return nil })
	if code, body := get(t, f.metrics+"/readyz"); code != http.StatusOK || body != "ready\n" {
		t.Fatalf("/readyz once ready: %d %q", code, body)
	}
	f.obs.SetReady(func() error { return errNoLeader })
	if code, body := get(t, f.metrics+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "no leader") {
		t.Fatalf("/readyz without a leader: %d %q", code, body)
	}
}

func TestGroupReadyNeedsALeaderAndAnAppliedLog(t *testing.T) {
	fields := func(role, leader, commit, applied string) [][2]string {
		return [][2]string{{"role", role}, {"leader_id", leader}, {"commit_index", commit}, {"applied_index", applied}}
	}
	cases := []struct {
		name   string
		fields [][2]string
		ready  bool
	}{
		{"leader", fields("leader", "n1", "10", "10"), true},
		{"follower caught up", fields("follower", "n1", "5000", "4500"), true},
		{"follower without a leader", fields("follower", "", "10", "10"), false},
		{"candidate", fields("candidate", "", "10", "10"), false},
		{"follower far behind", fields("follower", "n1", "5000", "3000"), false},
		{"shut down", fields("shutdown", "n1", "10", "10"), false},
		{"no figures", nil, false},
	}
	for _, c := range cases {
		err := GroupReady(c.fields)
		if (err == nil) != c.ready {
			t.Errorf("%s: GroupReady = %v; want ready %v", c.name, err, c.ready)
		}
	}
}
