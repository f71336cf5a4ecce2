package commands

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// redis-cli's monitoring modes against sluice, with the real binary.

func TestRedisCliLatencyMode(t *testing.T) {
	s := startServer(t, testConfig{RealClock: true})
	// Without a terminal, --latency samples PING for a second, prints
	// "min max avg samples" and exits.
	out := strings.TrimSpace(s.cli(t, "", "--latency", "--raw"))
	if !regexp.MustCompile(`^\d+ \d+ \d+\.\d\d \d+$`).MatchString(out) {
		t.Fatalf("redis-cli --latency printed %q; want min max avg samples", out)
	}
}

func TestRedisCliStatMode(t *testing.T) {
	s := startServer(t, testConfig{RealClock: true})
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) is not installed: redis-cli --stat prints only to a terminal")
	}
	do(t, s.client(t, proto(2)), "RL.TOKEN", "user:1", "1/m", 5)
	// --stat prints a line per interval to a terminal until it is killed:
	// script(1) gives it one, and the context stops it.
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	cmd := exec.CommandContext(ctx, script, "-qc", redisCLI(t)+" -h 127.0.0.1 -p "+s.port+" --stat -i 0.2", "/dev/null")
	out, _ := cmd.Output() // killed at the deadline
	text := string(out)
	if !strings.Contains(text, "keys       mem      clients") {
		t.Fatalf("redis-cli --stat printed no header:\n%s", text)
	}
	// A row: keys (1), memory, clients, blocked, requests, connections.
	if !regexp.MustCompile(`(?m)^1 +\S+ +\d+ +0 +\d+ \(\+\d+\) +\d+`).MatchString(text) {
		t.Fatalf("redis-cli --stat printed no row with the one key:\n%s", text)
	}
}
