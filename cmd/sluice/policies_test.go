package main

import (
	"context"
	"fmt"
	"github.com/sluice-rl/sluice/process"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// The Envoy RLS v3 gRPC front end of the real binary: flags, the rules
// files loaded at start, reloaded on change and on SIGHUP, and the keyspace
// it shares with the RESP server.

var grpcReadyRE = regexp.MustCompile(`gRPC\) ready" addr=(127\.0\.0\.1:\d+)`)

// grpcClient connects to the gRPC address p logged.
func grpcClient(t *testing.T, p *proc) (rlsv3.RateLimitServiceClient, *grpc.ClientConn) {
	t.Helper()
	m := grpcReadyRE.FindStringSubmatch(p.waitLog(t, grpcReadyRE.String()))
	conn, err := grpc.NewClient(m[1], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return rlsv3.NewRateLimitServiceClient(conn), conn
}

// shouldRateLimit asks for one descriptor of one entry.
func shouldRateLimit(t *testing.T, c rlsv3.RateLimitServiceClient, domain, key, value string) *rlsv3.RateLimitResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: domain, Descriptors: []*ratelimitv3.RateLimitDescriptor{
		{Entries: []*ratelimitv3.RateLimitDescriptor_Entry{{Key: key, Value: value}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// limitOf returns a one-status answer as "CODE rpu/UNIT remaining".
func limitOf(resp *rlsv3.RateLimitResponse) string {
	st := resp.Statuses[0]
	return fmt.Sprintf("%v %d/%v %d", st.Code, st.CurrentLimit.GetRequestsPerUnit(), st.CurrentLimit.GetUnit(), st.LimitRemaining)
}

func writeRules(t *testing.T, path string, rpu int) {
	t.Helper()
	text := "domain: api\ndescriptors:\n  - key: remote_address\n    rate_limit: {unit: hour, requests_per_unit: " + strconv.Itoa(rpu) + "}\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestGRPCFrontEndDecidesWithTheRulesFilesAndReloadsThem(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules")
	if err := os.Mkdir(rules, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(rules, "api.yaml")
	writeRules(t, path, 2)
	p := start(t, "--dir", dir, "--save", "0", "--policies", rules, "--grpc-bind", "127.0.0.1:0",
		"--grpc-headers", "x-ratelimit", "--enable-debug-command", "yes")
	p.waitLog(t, `msg="rules loaded" files=1 domains=1 rules=1`)
	rdb := client(t, p)
	// Freeze the clock both front ends share: 10 minutes into an hour.
	if err := rdb.Do(context.Background(), "DEBUG", "CLOCK", "SET", time.Date(2026, 3, 2, 12, 10, 0, 0, time.UTC).UnixMilli()).Err(); err != nil {
		t.Fatal(err)
	}
	c, conn := grpcClient(t, p)

	for _, want := range []string{"OK 2/HOUR 1", "OK 2/HOUR 0"} {
		if got := limitOf(shouldRateLimit(t, c, "api", "remote_address", "192.0.2.1")); got != want {
			t.Fatalf("got %s; want %s", got, want)
		}
	}
	resp := shouldRateLimit(t, c, "api", "remote_address", "192.0.2.1")
	if resp.OverallCode != rlsv3.RateLimitResponse_OVER_LIMIT {
		t.Fatalf("third call: %v", resp)
	}
	var headers []string
	for _, h := range resp.ResponseHeadersToAdd {
		headers = append(headers, h.Key+": "+h.Value)
	}
	if got, want := strings.Join(headers, ", "), "X-RateLimit-Limit: 2, X-RateLimit-Remaining: 0, X-RateLimit-Reset: 3000, Retry-After: 3000"; got != want {
		t.Fatalf("headers %s; want %s", got, want)
	}
	// The state is in the keyspace the RESP server serves.
	keys, _, err := rdb.Scan(context.Background(), 0, "rls:api:*", 100).Result()
	if err != nil || len(keys) != 1 || keys[0] != "rls:api:fixed:remote_address=192.0.2.1" {
		t.Fatalf("SCAN 0 MATCH rls:api:* = %v, %v", keys, err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if h, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil || h.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health: %v, %v", h, err)
	}

	// An edit takes effect without a signal: the file is read every second.
	writeRules(t, path, 4)
	p.waitLog(t, `msg="the rules files changed: rules reloaded"`)
	if got, want := limitOf(shouldRateLimit(t, c, "api", "remote_address", "192.0.2.1")), "OK 4/HOUR 1"; got != want {
		t.Fatalf("after the edit: %s; want %s (the count of 2 carries over)", got, want)
	}

	// A broken file is refused; the rules in force stay.
	if err := os.WriteFile(path, []byte("domain: api\ndescriptors:\n  - key: remote_address\n    rate_limit: {unit: fortnight}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.waitLog(t, `the rules files changed and were refused.*invalid rate limit unit 'fortnight'`)
	p.cmd.Process.Signal(syscall.SIGHUP)
	p.waitLog(t, `SIGHUP: the rules files were refused`)
	if got, want := limitOf(shouldRateLimit(t, c, "api", "remote_address", "192.0.2.1")), "OK 4/HOUR 0"; got != want {
		t.Fatalf("after the broken file: %s; want %s", got, want)
	}

	// SIGHUP reloads what the files hold now.
	writeRules(t, path, 9)
	p.cmd.Process.Signal(syscall.SIGHUP)
	p.waitLog(t, `SIGHUP: rules reloaded|the rules files changed: rules reloaded.*\n(.|\n)*the rules files changed: rules reloaded`)
	if got, want := limitOf(shouldRateLimit(t, c, "api", "remote_address", "192.0.2.1")), "OK 9/HOUR 4"; got != want {
		t.Fatalf("after SIGHUP: %s; want %s", got, want)
	}

	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.exitCode(t); code != process.ExitOK {
		t.Fatalf("exit code %d:\n%s", code, p.logText())
	}
}

func TestBrokenRulesFileStopsTheStart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(path, []byte("domain: api\ndescriptors:\n  - rate_limit: {unit: hour, requests_per_unit: 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code, _ := runFor(5*time.Second, "--port", "auto", "--bind", "127.0.0.1", "--dir", dir, "--policies", path, "--grpc-bind", "127.0.0.1:0")
	if code != process.ExitUsage || !strings.Contains(string(out), "rules.yaml:3:5: descriptor has empty key") {
		t.Fatalf("exit code %d; want %d with the fault's position\n%s", code, process.ExitUsage, out)
	}
}

func TestGRPCIsOffWithoutGRPCBind(t *testing.T) {
	p := start(t, "--save", "0", "--dir", t.TempDir())
	serving(t, client(t, p), "k", 10)
	if strings.Contains(p.logText(), "gRPC") {
		t.Fatalf("a gRPC server without --grpc-bind:\n%s", p.logText())
	}
}

// swapLink points path at target as `ln -s target tmp && mv -T tmp path`
// does: one rename over whatever path was.
func swapLink(t *testing.T, target, path string) {
	t.Helper()
	tmp := path + ".link"
	if err := os.Symlink(target, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// rssOf returns the resident memory of process pid, in bytes.
func rssOf(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// TestRulesFilesThatAreNotRulesAreRefusedAndTheServerAnswers: a FIFO in
// the rules directory, a rules file swapped for a link to an endless file,
// to a device, to nothing, and a directory emptied: each set is refused
// and logged, the server answers PING and INFO all along, stays small, and
// RL.MATCH keeps deciding with the rules in force. Only RL.POLICY RELOAD
// FORCE drops every domain.
func TestRulesFilesThatAreNotRulesAreRefusedAndTheServerAnswers(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules")
	if err := os.Mkdir(rules, 0o755); err != nil {
		t.Fatal(err)
	}
	v1 := filepath.Join(dir, "v1.yaml")
	writeRules(t, v1, 1)
	link := filepath.Join(rules, "api.yaml")
	swapLink(t, v1, link)
	p := start(t, "--dir", dir, "--save", "0", "--policies", rules, "--rules-max-bytes", "64kb")
	p.waitLog(t, `msg="rules loaded" files=1 domains=1 rules=1`)
	// No retries: a command that times out fails the test.
	rdb := redis.NewClient(&redis.Options{Addr: p.addr, Protocol: 2, DisableIndentity: true,
		ReadTimeout: 5 * time.Second, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	match := func() int64 {
		t.Helper()
		v, err := rdb.Do(ctx, "RL.MATCH", "api", "DESCRIPTOR", "remote_address", "192.0.2.1").Slice()
		if err != nil {
			t.Fatalf("RL.MATCH: %v", err)
		}
		return v[0].(int64)
	}
	if a, b := match(), match(); a != 1 || b != 2 {
		t.Fatalf("RL.MATCH codes %d, %d; want 1 (OK) then 2 (OVER_LIMIT) under 1/hour", a, b)
	}
	answers := func(when string) {
		t.Helper()
		if v, err := rdb.Ping(ctx).Result(); err != nil || v != "PONG" {
			t.Fatalf("%s: PING = %q, %v", when, v, err)
		}
		info, err := rdb.Info(ctx, "policies").Result()
		if err != nil || !strings.Contains(info, "rules_domains:1\r\n") {
			t.Fatalf("%s: INFO policies = %q, %v; want rules_domains:1", when, info, err)
		}
	}

	fifo := filepath.Join(rules, "x.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	p.waitLog(t, `the rules files changed and were refused.*x.yaml is not a regular file \(a named pipe\)`)
	answers("with a FIFO in the rules directory")
	if err := rdb.Do(ctx, "RL.POLICY", "RELOAD").Err(); err == nil || !strings.Contains(err.Error(), "x.yaml is not a regular file") {
		t.Fatalf("RL.POLICY RELOAD with a FIFO: %v", err)
	}
	answers("after RL.POLICY RELOAD with a FIFO")
	os.Remove(fifo)
	p.waitLog(t, `the rules files changed: rules reloaded`)

	// /proc/self/pagemap: a regular file of size 0 that reads on for
	// hundreds of gigabytes. Only the cap stops the read.
	swapLink(t, "/proc/self/pagemap", link)
	p.waitLog(t, `refused.*rules files hold more than 65536 bytes \(rules-max-bytes\), at `+regexp.QuoteMeta(link))
	swapLink(t, "/dev/zero", link)
	p.waitLog(t, `refused.*api.yaml is not a regular file \(a character device\)`)
	if rss := rssOf(t, p.cmd.Process.Pid); rss > 512<<20 {
		t.Fatalf("the server holds %d MiB after reading endless files; want it small", rss>>20)
	}
	swapLink(t, filepath.Join(dir, "missing.yaml"), link)
	p.waitLog(t, `refused.*api.yaml cannot be read: no such file or directory`)
	answers("after a dangling symlink")
	if got := match(); got != 2 {
		t.Fatalf("RL.MATCH after the refused sets: code %d; want 2, the rules in force", got)
	}

	// An emptied directory would drop the only domain: refused, unless
	// forced.
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	p.waitLog(t, `refused.*define no domain, which would drop all 1 domains in force`)
	if err := rdb.Do(ctx, "RL.POLICY", "RELOAD").Err(); err == nil || !strings.Contains(err.Error(), "RL.POLICY RELOAD FORCE") {
		t.Fatalf("RL.POLICY RELOAD of an empty directory: %v", err)
	}
	if got := match(); got != 2 {
		t.Fatalf("RL.MATCH after the refused empty set: code %d; want 2", got)
	}
	if err := rdb.Do(ctx, "RL.POLICY", "RELOAD", "FORCE").Err(); err != nil {
		t.Fatalf("RL.POLICY RELOAD FORCE: %v", err)
	}
	if got := match(); got != 1 {
		t.Fatalf("RL.MATCH after RELOAD FORCE: code %d; want 1, a domain no file defines", got)
	}
	if got := infoField(t, rdb, "policies", "rules_domains"); got != "0" {
		t.Fatalf("rules_domains after RELOAD FORCE: %s", got)
	}
}
