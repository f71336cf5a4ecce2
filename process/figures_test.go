package process

import (
	"context"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
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
	// A bucket that refills in an hour: it stays until INFO, which lists
	// db0 only while a key exists (at 10/s it was full again, and gone,
	// after 100 ms on a loaded machine).
	rdb.Do(ctx, "RL.TOKEN", "k", "1/h", 10, 1)
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

// TestRedisFiguresCount: the figures Redis tools read (keyspace_hits and
// _misses, rdb_changes_since_last_save, total_reads_processed and
// _writes_processed, used_memory_peak, mem_fragmentation_ratio,
// number_of_cached_scripts, rdb_last_bgsave_time_sec and
// rdb_current_bgsave_time_sec) count what they say.
func TestRedisFiguresCount(t *testing.T) {
	p, err := Open(testOptions(t, "save", "300"))
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve()
	defer shutdown(t, p)
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr(), Protocol: 2, DisableIndentity: true})
	defer rdb.Close()
	ctx := context.Background()
	info := func() map[string]int64 {
		t.Helper()
		text, err := rdb.Info(ctx, "memory", "persistence", "stats").Result()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int64{}
		for _, line := range strings.Split(text, "\r\n") {
			if name, v, ok := strings.Cut(line, ":"); ok {
				f, _ := strconv.ParseFloat(v, 64)
				out[name] = int64(f * 100) // ratios keep two decimals
			}
		}
		return out
	}
	before := info()
	if before["rdb_last_bgsave_time_sec"] != -100 || before["rdb_current_bgsave_time_sec"] != -100 {
		t.Errorf("rdb_last_bgsave_time_sec %d, rdb_current_bgsave_time_sec %d before any save; want -1 and -1",
			before["rdb_last_bgsave_time_sec"]/100, before["rdb_current_bgsave_time_sec"]/100)
	}
	rdb.Do(ctx, "RL.TOKEN", "new", "10/s", 10, 1) // a miss and a change
	rdb.Do(ctx, "RL.TOKEN", "new", "10/s", 10, 1) // a hit and a change
	rdb.Do(ctx, "GET", "absent")                  // a miss
	after := info()
	for _, c := range []struct {
		name string
		want int64
	}{{"keyspace_hits", 1}, {"keyspace_misses", 2}, {"rdb_changes_since_last_save", 2}} {
		if d := (after[c.name] - before[c.name]) / 100; d != c.want {
			t.Errorf("%s grew by %d; want %d", c.name, d, c.want)
		}
	}
	if after["total_reads_processed"] <= before["total_reads_processed"] ||
		after["total_writes_processed"] <= before["total_writes_processed"] {
		t.Errorf("total_reads_processed %d → %d, total_writes_processed %d → %d; want both to grow",
			before["total_reads_processed"], after["total_reads_processed"],
			before["total_writes_processed"], after["total_writes_processed"])
	}
	if after["used_memory_peak"] < after["used_memory"] || after["mem_fragmentation_ratio"] <= 0 ||
		after["number_of_cached_scripts"] <= 0 {
		t.Errorf("used_memory_peak %d, used_memory %d, mem_fragmentation_ratio %.2f, number_of_cached_scripts %d",
			after["used_memory_peak"]/100, after["used_memory"]/100, float64(after["mem_fragmentation_ratio"])/100,
			after["number_of_cached_scripts"]/100)
	}
	if err := rdb.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	saved := info()
	if n := saved["rdb_changes_since_last_save"]; n != 0 {
		t.Errorf("rdb_changes_since_last_save after SAVE = %d; want 0", n/100)
	}
	if n := saved["rdb_last_bgsave_time_sec"]; n != 0 {
		t.Errorf("rdb_last_bgsave_time_sec after a quick SAVE = %d; want 0", n/100)
	}
}
