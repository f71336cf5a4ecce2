package main

import (
	"context"
	"net"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/childproc"
)

// TestRedisExporterScrapesWithoutErrors runs the Prometheus Redis exporter
// that operators already use (Debian's prometheus-redis-exporter, which
// .ci/run installs) against sluice: it must scrape without an error and
// fill in commands, latencies, errors, CPU, clients, memory, key hits and
// misses, changes since the last save, reads and writes, and scripts.
func TestRedisExporterScrapesWithoutErrors(t *testing.T) {
	bin, err := exec.LookPath("prometheus-redis-exporter")
	if err != nil {
		t.Skip("prometheus-redis-exporter is not installed (apt-get install prometheus-redis-exporter)")
	}
	p := start(t, "--dir", t.TempDir())
	rdb := client(t, p)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		rdb.Do(ctx, "RL.TOKEN", "user:1", "1/m", 2)
	}
	rdb.Do(ctx, "RL.TOKEN", "user:1", "bad", 2) // an error reply, for errorstats

	// The exporter listens on a port the kernel chooses and does not say
	// which: the test finds it in /proc.
	cmd := exec.Command(bin, "--redis.addr", "redis://"+p.addr, "--web.listen-address", "127.0.0.1:0")
	childproc.KillWithParent(cmd)
	var log lockedBuffer // written by exec's copying goroutine, read here
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	var web string
	for deadline := time.Now().Add(10 * time.Second); web == ""; {
		if addrs, _ := childproc.ListenAddrs(cmd.Process.Pid); len(addrs) > 0 {
			web = addrs[0].String()
			break
		}
		select {
		case <-exited:
			t.Fatalf("the exporter exited (%v):\n%s", cmd.ProcessState, log.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the exporter did not listen in 10 s:\n%s", log.String())
		}
	}

	var body string
	deadline := time.Now().Add(10 * time.Second)
	for {
		code := 0
		if conn, err := net.Dial("tcp", web); err == nil {
			conn.Close()
			code, body = httpGet(t, "http://"+web+"/metrics")
		}
		if code == 200 && strings.Contains(body, "redis_up 1") {
			break
		}
		select {
		case <-exited:
			t.Fatalf("the exporter exited (%v):\n%s", cmd.ProcessState, log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the exporter did not scrape sluice in 10 s:\n%s\n%s", body, log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// A second scrape: errors the exporter logs once would show by now.
	_, body = httpGet(t, "http://"+web+"/metrics")
	for _, want := range []string{
		`redis_commands_total{cmd="rl.token"} 4`,
		`redis_commands_failed_calls_total{cmd="rl.token"} 1`,
		`redis_latency_percentiles_usec_count{cmd="rl.token"} 4`,
		`redis_errors_total{err="ERR"} 1`,
		`redis_connected_clients `,
		`redis_cpu_user_seconds_total `,
		`redis_memory_used_rss_bytes `,
		`redis_db_keys{db="db0"} 1`,
		`redis_db_avg_ttl_seconds{db="db0"} `,
		`redis_keyspace_hits_total `,
		`redis_keyspace_misses_total `,
		`redis_memory_used_peak_bytes `,
		`redis_mem_fragmentation_ratio `,
		`redis_mem_fragmentation_bytes `,
		`redis_rdb_changes_since_last_save `,
		`redis_rdb_last_bgsave_duration_sec `,
		`redis_rdb_current_bgsave_duration_sec `,
		`redis_total_reads_processed `,
		`redis_total_writes_processed `,
		`redis_number_of_cached_scripts `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the exporter's scrape lacks %q:\n%s", want, grepLines(body, strings.Fields(want)[0][:12]))
		}
	}
	if strings.Contains(body, `db="db1"`) {
		t.Error("the exporter reports db1: CONFIG GET databases must say 1")
	}
	if strings.Contains(body, "redis_exporter_last_scrape_error 1") {
		t.Error("the exporter's last scrape failed")
	}
	if strings.Contains(log.String(), "level=error") {
		t.Errorf("the exporter logged errors:\n%s", log.String())
	}
}

// grepLines returns body's lines that start with prefix.
func grepLines(body, prefix string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// lockedBuffer is a strings.Builder safe for one writer and one reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
