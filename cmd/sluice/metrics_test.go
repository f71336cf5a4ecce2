package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
)

var metricsAddrRE = regexp.MustCompile(`url=http://(127\.0\.0\.1:\d+)/metrics`)

// httpGet fetches url and returns the status and body.
func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
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

func TestMetricsEndpointServesTheProcessFigures(t *testing.T) {
	p := start(t, "--metrics-bind", "127.0.0.1:0", "--dir", t.TempDir())
	base := "http://" + metricsAddrRE.FindStringSubmatch(p.waitLog(t, `url=http://`))[1]
	rdb := client(t, p)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if err := rdb.Do(ctx, "RL.TOKEN", "user:1", "1/m", 2).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if code, body := httpGet(t, base+"/healthz"); code != 200 {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	if code, body := httpGet(t, base+"/readyz"); code != 200 || body != "ready\n" {
		t.Fatalf("/readyz of a single node serving: %d %q", code, body)
	}
	_, body := httpGet(t, base+"/metrics")
	for _, line := range []string{
		`sluice_decisions_total{command="rl.token",outcome="allowed"} 2`,
		`sluice_decisions_total{command="rl.token",outcome="denied"} 1`,
		`sluice_keys 1`,
		`sluice_snapshot_last_success 1`,
	} {
		if !strings.Contains(body, line+"\n") {
			t.Errorf("/metrics lacks %q", line)
		}
	}
	if !strings.Contains(body, "process_resident_memory_bytes ") {
		t.Error("/metrics lacks process_resident_memory_bytes")
	}
}

func TestMetricsBindIsOffByDefault(t *testing.T) {
	p := start(t, "--dir", t.TempDir())
	if strings.Contains(p.logText(), "metrics endpoint") {
		t.Fatalf("a metrics endpoint started without --metrics-bind:\n%s", p.logText())
	}
}

func TestMetricsOfAGroupMemberHaveItsRaftEvents(t *testing.T) {
	p := start(t, "--metrics-bind", "127.0.0.1:0", "--dir", t.TempDir(), "--node-id", "n1",
		"--raft-bind", "127.0.0.1:0", "--bootstrap", "force")
	base := "http://" + metricsAddrRE.FindStringSubmatch(p.waitLog(t, `url=http://`))[1]
	rdb := client(t, p)
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for rdb.Do(ctx, "RL.TOKEN", "user:1", "1/m", 5).Err() != nil { // until the node leads
		if time.Now().After(deadline) {
			t.Fatal("the one-node group decided nothing in 10 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i := 0; i < 4; i++ {
		if err := rdb.Do(ctx, "RL.TOKEN", "user:1", "1/m", 5).Err(); err != nil {
			t.Fatal(err)
		}
	}
	_, body := httpGet(t, base+"/metrics")
	var p2 expfmt.TextParser
	fams, err := p2.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("the scrape does not parse: %v", err)
	}
	get := func(name string) float64 {
		t.Helper()
		f := fams[name]
		if f == nil || len(f.Metric) == 0 {
			t.Fatalf("/metrics lacks %s", name)
		}
		m := f.Metric[0]
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
		return m.Gauge.GetValue()
	}
	if v := get("sluice_raft_leader_changes_total"); v < 1 {
		t.Errorf("sluice_raft_leader_changes_total = %v; want at least the election that made n1 leader", v)
	}
	// five decisions one after the other: five entries applied at least, and
	// never more than were written (the leader's member entry may still be
	// in flight)
	if v, w := get("sluice_raft_apply_duration_seconds"), get("sluice_raft_log_entries_written_total"); v < 5 || v > w {
		t.Errorf("sluice_raft_apply_duration_seconds counts %v entries, %v written; want 5 to %v", v, w, w)
	}
	if v := get("sluice_raft_forwarded_submissions_total"); v != 0 {
		t.Errorf("sluice_raft_forwarded_submissions_total = %v on the leader; want 0", v)
	}
	if v := fams["sluice_raft_role"]; v == nil {
		t.Error("/metrics lacks sluice_raft_role")
	}
}
