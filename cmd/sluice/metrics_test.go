package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
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
