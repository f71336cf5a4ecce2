package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestPromtoolLintsTheScrapeClean: Prometheus's own linter (promtool check
// metrics, from Debian's prometheus package, which .ci/run installs) finds
// nothing to say about a scrape of a server that has decided, refused,
// answered errors and run RL.CHECK and RL.TOP: names, units, help texts
// and types follow Prometheus's conventions.
func TestPromtoolLintsTheScrapeClean(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed (apt-get install prometheus)")
	}
	p := start(t, "--metrics-bind", "127.0.0.1:0", "--dir", t.TempDir())
	base := "http://" + metricsAddrRE.FindStringSubmatch(p.waitLog(t, `url=http://`))[1]
	rdb := client(t, p)
	ctx := context.Background()
	for _, args := range [][]any{
		{"RL.TOKEN", "user:1", "1/m", 1}, {"RL.TOKEN", "user:1", "1/m", 1}, {"RL.TOKEN", "user:1", "bad", 1},
		{"RL.POLICY", "SET", "free", "FIXED", 1, "1m"}, {"RL.CHECK", "free", "k"}, {"RL.CHECK", "free", "k"},
		{"RL.TOP", "DENIED"}, {"GET", "nosuch"},
	} {
		rdb.Do(ctx, args...) // errors and denials are part of what is scraped
	}
	code, body := httpGet(t, base+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) != 0 {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}
