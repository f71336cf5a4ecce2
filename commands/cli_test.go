package commands

import (
	"fmt"
	"strings"
	"testing"
)

// These tests drive the server with the real redis-cli binary, the way a
// person at a terminal does. CI installs redis-tools; elsewhere a missing
// redis-cli skips them.

func TestRedisCLITokenScript(t *testing.T) {
	ts := startServer(t, testConfig{})
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"RL.TOKEN", "user:42", "10/s", "20"}, "1\n20\n19\n0\n100\n"},
		{[]string{"rl.token", "user:42", "10/s", "20", "19"}, "1\n20\n0\n0\n2000\n"},
		{[]string{"RL.TOKEN", "user:42", "10/s", "20"}, "0\n20\n0\n100\n2000\n"},
		{[]string{"DEBUG", "CLOCK", "ADVANCE", "250"}, "OK\n"},
		{[]string{"RL.TOKEN", "user:42", "10/s", "20", "0"}, "1\n20\n2\n0\n1750\n"},
		{[]string{"TYPE", "user:42"}, "rl-token\n"},
		{[]string{"PTTL", "user:42"}, "1750\n"},
		{[]string{"EXISTS", "user:42"}, "1\n"},
		{[]string{"DBSIZE"}, "1\n"},
		{[]string{"DEBUG", "CLOCK", "ADVANCE", "1750"}, "OK\n"},
		{[]string{"EXISTS", "user:42"}, "0\n"},
		{[]string{"RL.TOKEN", "user:42", "10/s", "abc"}, "ERR value is not an integer or out of range\n\n"}, // redis-cli adds a blank line after an error
		{[]string{"RL.TOKEN", "user:42", "10", "20", "21"}, "0\n20\n20\n-1\n0\n"},
		{[]string{"PING"}, "PONG\n"},
	}
	for _, s := range steps {
		if got := ts.cli(t, "", s.args...); got != s.want {
			t.Fatalf("redis-cli %s = %q; want %q", strings.Join(s.args, " "), got, s.want)
		}
	}
}

func TestRedisCLIRESP3AndInfo(t *testing.T) {
	ts := startServer(t, testConfig{})
	got := ts.cli(t, "", "-3", "RL.TOKEN", "user:42", "10/s", "20")
	// RESP3 answers the same five integers as RESP2.
	want := "1\n20\n19\n0\n100\n"
	if got != want {
		t.Fatalf("redis-cli -3 RL.TOKEN = %q; want %q", got, want)
	}
	info := ts.cli(t, "", "INFO", "keyspace")
	if !strings.Contains(info, "db0:keys=1,") {
		t.Fatalf("INFO keyspace = %q", info)
	}
}

// TestRedisCLIInteractiveHints feeds commands on standard input, as a
// person typing in redis-cli's prompt does; redis-cli first asks COMMAND DOCS
// for its hints, which must not break it.
func TestRedisCLIInteractiveHints(t *testing.T) {
	ts := startServer(t, testConfig{})
	got := ts.cli(t, "PING\nRL.TOKEN a 1/s 5\nHELLO 3\n")
	if !strings.HasPrefix(got, "PONG\n1\n5\n4\n0\n1000\n") {
		t.Fatalf("redis-cli with commands on stdin printed %q", got)
	}
}

func TestRedisCLIScanAndPipe(t *testing.T) {
	ts := startServer(t, testConfig{})
	var mass strings.Builder
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&mass, "*4\r\n$8\r\nRL.TOKEN\r\n$%d\r\n%s\r\n$4\r\n10/s\r\n$2\r\n20\r\n", len(fmt.Sprint("k:", i)), fmt.Sprint("k:", i))
	}
	// --pipe ends its stream with ECHO of a random marker and waits for it.
	out := ts.cli(t, mass.String(), "--pipe")
	if !strings.Contains(out, "errors: 0, replies: 2000") {
		t.Fatalf("redis-cli --pipe = %q", out)
	}
	keys := strings.Fields(ts.cli(t, "", "--scan", "--pattern", "k:1??"))
	if len(keys) != 100 {
		t.Fatalf("redis-cli --scan --pattern k:1?? found %d keys; want 100", len(keys))
	}
	if got := ts.cli(t, "", "DBSIZE"); got != "2000\n" {
		t.Fatalf("DBSIZE = %q", got)
	}
}

func TestRedisCLIAuth(t *testing.T) {
	ts := startServer(t, testConfig{Password: "s3cret"})
	if got := ts.cli(t, "", "RL.TOKEN", "k", "1/s", "3"); got != "NOAUTH Authentication required.\n\n" {
		t.Fatalf("without -a: %q", got)
	}
	if got := ts.cli(t, "", "--no-auth-warning", "-a", "s3cret", "RL.TOKEN", "k", "1/s", "3"); got != "1\n3\n2\n0\n1000\n" {
		t.Fatalf("with -a: %q", got)
	}
}
