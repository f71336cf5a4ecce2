package process

import (
	"context"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/redis/go-redis/v9"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata")

// TestFiguresGolden: the fields of INFO all, in order, and the metrics'
// names and types of a single node with the append-only log and periodic
// saves on are those of testdata/info_all.golden and
// testdata/metrics.golden. A figure added or renamed shows here; the
// per-command lines of commandstats, errorstats and latencystats depend on
// the commands run and are left out.
func TestFiguresGolden(t *testing.T) {
	opts := testOptions(t, "metrics-bind", "127.0.0.1:0", "appendonly", "yes", "save", "300")
	p, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve()
	defer shutdown(t, p)
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr(), Protocol: 2, DisableIndentity: true})
	defer rdb.Close()
	ctx := context.Background()
	rdb.Do(ctx, "RL.TOKEN", "k", "10/s", 10, 1)
	rdb.Do(ctx, "RL.TOKEN", "k", "bad", 10, 1)
	info, err := rdb.Info(ctx, "all").Result()
	if err != nil {
		t.Fatal(err)
	}
	var fields []string
	section := ""
	for _, line := range strings.Split(info, "\r\n") {
		switch {
		case strings.HasPrefix(line, "# "):
			section = strings.TrimPrefix(line, "# ")
		case line == "":
		default:
			name, _, _ := strings.Cut(line, ":")
			if strings.HasPrefix(name, "cmdstat_") || strings.HasPrefix(name, "errorstat_") ||
				strings.HasPrefix(name, "latency_percentiles_usec_") {
				continue
			}
			fields = append(fields, section+" "+name)
		}
	}
	golden(t, "info_all.golden", fields)

	var metricsAddr string
	for _, a := range p.Addrs() {
		if a[0] == "metrics" {
			metricsAddr = a[1]
		}
	}
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var parser expfmt.TextParser
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	var metrics []string
	for name, mf := range families {
		if strings.HasPrefix(name, "sluice_") {
			metrics = append(metrics, name+" "+strings.ToLower(mf.GetType().String()))
		}
	}
	sort.Strings(metrics)
	golden(t, "metrics.golden", metrics)
}

// golden compares lines with testdata/name, or writes them there with
// -update.
func golden(t *testing.T, name string, lines []string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	got := strings.Join(lines, "\n") + "\n"
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -run %s -update rewrites it):\n got:\n%s\nwant:\n%s", path, t.Name(), got, want)
	}
}
