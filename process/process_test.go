package process

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// testOptions are the defaults with a free loopback port, a directory of
// the test's own and the log in the test's output.
func testOptions(t *testing.T, args ...string) Options {
	t.Helper()
	o := Defaults()
	for _, kv := range [][]string{{"port", "auto"}, {"bind", "127.0.0.1"}, {"dir", t.TempDir()}} {
		if err := o.Set(kv[0], kv[1:]...); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i+1 < len(args); i += 2 {
		if err := o.Set(args[i], args[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	o.LogOutput = testWriter{t}
	return o
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

func shutdown(t *testing.T, p *Process) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return p.Shutdown(ctx)
}

// TestOpenServeShutdown: Open serves on the port the kernel chose and
// reports it (Addrs, the ports file); the directory is the server's while
// it runs; Shutdown ends Serve with a clean stop and releases the port and
// the directory.
func TestOpenServeShutdown(t *testing.T) {
	ports := filepath.Join(t.TempDir(), "ports")
	opts := testOptions(t, "save", "0", "ports-file", ports)
	p, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve() }()
	addr := p.Addr()
	if addr == "" || strings.HasSuffix(addr, ":0") {
		t.Fatalf("Addr() = %q; want the bound address", addr)
	}
	text, err := os.ReadFile(ports)
	if err != nil || string(text) != "resp "+addr+"\n" {
		t.Fatalf("ports file %q (%v); want %q", text, err, "resp "+addr+"\n")
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIndentity: true})
	defer rdb.Close()
	ctx := context.Background()
	if n, err := rdb.Do(ctx, "RL.TOKEN", "k", "10/s", 10, 1).Slice(); err != nil || n[0] != int64(1) {
		t.Fatalf("RL.TOKEN = %v, %v; want it allowed", n, err)
	}
	if got, err := rdb.ConfigGet(ctx, "port").Result(); err != nil || got["port"] != addr[strings.LastIndexByte(addr, ':')+1:] {
		t.Fatalf("CONFIG GET port = %v, %v; want the bound port", got, err)
	}
	if _, err := Open(testOptions(t, "dir", opts.dir)); err == nil || !strings.Contains(err.Error(), "refusing to start") {
		t.Fatalf("a second server on the same directory: %v; want it refused", err)
	}

	if err := shutdown(t, p); err != nil {
		t.Fatalf("Shutdown = %v; want a clean stop", err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve = %v; want nil", err)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections after Shutdown", addr)
	}
	again, err := Open(testOptions(t, "dir", opts.dir, "save", "0"))
	if err != nil {
		t.Fatalf("Open on the directory after Shutdown: %v", err)
	}
	if err := shutdown(t, again); err != nil {
		t.Fatal(err)
	}
}

// TestShutdownSavesTheSnapshot: Shutdown is SIGTERM's shutdown, with the
// final save, and a server opened on the directory again has the state.
func TestShutdownSavesTheSnapshot(t *testing.T) {
	opts := testOptions(t)
	p, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr(), Protocol: 2, DisableIndentity: true})
	defer rdb.Close()
	ctx := context.Background()
	if err := rdb.Do(ctx, "RL.TOKEN", "k", "10/h", 10, 4).Err(); err != nil {
		t.Fatal(err)
	}
	if err := shutdown(t, p); err != nil { // Serve was never called: Shutdown stops the process itself
		t.Fatalf("Shutdown = %v", err)
	}
	if _, err := os.Stat(filepath.Join(opts.dir, "sluice.snap")); err != nil {
		t.Fatalf("no snapshot after Shutdown: %v", err)
	}
	p, err = Open(testOptions(t, "dir", opts.dir, "save", "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(t, p)
	rdb2 := redis.NewClient(&redis.Options{Addr: p.Addr(), Protocol: 2, DisableIndentity: true})
	defer rdb2.Close()
	n, err := rdb2.Do(ctx, "RL.TOKEN", "k", "10/h", 10, 7).Slice()
	if err != nil || n[0] != int64(0) {
		t.Fatalf("RL.TOKEN k 7 after a restart that kept 4 of 10 spent = %v, %v; want it refused", n, err)
	}
}

// TestOpenThatFailsLeavesNothingOpen: a broken rules file stops the start
// with exit code 2, and the directory and the port are free again.
func TestOpenThatFailsLeavesNothingOpen(t *testing.T) {
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(rules, []byte("domain: d\ndescriptors:\n  - key: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := testOptions(t, "policies", rules)
	_, err := Open(opts)
	var code ExitStatus
	if !errors.As(err, &code) || code != ExitUsage {
		t.Fatalf("Open with a broken rules file = %v; want exit status %d", err, ExitUsage)
	}
	p, err := Open(testOptions(t, "dir", opts.dir, "save", "0"))
	if err != nil {
		t.Fatalf("Open on the directory after a failed Open: %v", err)
	}
	shutdown(t, p)
}
