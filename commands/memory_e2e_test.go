package commands

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// MEMORY, OBJECT and INFO keyspace's avg_ttl over real sockets, and the
// redis-cli modes that use them (--memkeys, --bigkeys, --hotkeys) with the
// real binary.

func TestMemoryUsageFollowsTheRecordLayout(t *testing.T) {
	srv := startServer(t, testConfig{})
	rdb := srv.client(t, proto(3))
	do(t, rdb, "RL.TOKEN", "user:0000000001", "1/s", 10) // a 16-byte key: 4 words, and the index's 16 bytes
	do(t, rdb, "RL.FIXED", "f", 10, "1m")                // header, expiry, 2 state words, 1 key word
	do(t, rdb, "RL.LOG", "log", 100, "1m", 3)            // header, expiry, the ring's word and its first room (8), 1 key word
	for key, want := range map[string]int64{"user:0000000001": 32 + 16, "f": 40 + 16, "log": (1+1+1+8+1)*8 + 16} {
		if got := do(t, rdb, "MEMORY", "USAGE", key); got != want {
			t.Errorf("MEMORY USAGE %s = %v; want %d", key, got, want)
		}
	}
	if got := do(t, rdb, "MEMORY", "USAGE", "f", "SAMPLES", 5); got != int64(56) {
		t.Errorf("MEMORY USAGE f SAMPLES 5 = %v; want 56", got)
	}
	if err := rdb.Do(context.Background(), "MEMORY", "USAGE", "nosuch").Err(); err != redis.Nil {
		t.Errorf("MEMORY USAGE of a missing key: %v; want nil", err)
	}
	for _, c := range []struct {
		args []any
		want string
	}{
		{[]any{"MEMORY", "USAGE", "f", "SAMPLES", "x"}, "ERR value is not an integer or out of range"},
		{[]any{"MEMORY", "USAGE", "f", "OTHER", 1}, "ERR syntax error"},
		{[]any{"MEMORY", "USAGE"}, "ERR wrong number of arguments for 'memory|usage' command"},
		{[]any{"MEMORY", "NOPE"}, "ERR unknown subcommand 'NOPE'. Try MEMORY HELP."},
		{[]any{"OBJECT", "FREQ", "f"}, "ERR An LFU maxmemory policy is not selected, access frequency not tracked. sluice tracks no per-key frequency: RL.TOP DECISIONS lists the keys decided most often."},
	} {
		if got := doErr(t, rdb, c.args...); got != c.want {
			t.Errorf("%v = %q; want %q", c.args, got, c.want)
		}
	}
	stats, ok := do(t, rdb, "MEMORY", "STATS").(map[any]any)
	if !ok || stats["keys.count"] != int64(3) || stats["clients.normal"] == int64(0) {
		t.Errorf("MEMORY STATS = %v; want keys.count 3 and the clients' memory", stats)
	}
	if got := do(t, rdb, "OBJECT", "ENCODING", "f"); got != "raw" {
		t.Errorf("OBJECT ENCODING = %v", got)
	}
	if err := rdb.Do(context.Background(), "OBJECT", "FREQ", "nosuch").Err(); err != redis.Nil {
		t.Errorf("OBJECT FREQ of a missing key: %v; want nil", err)
	}
	if got := do(t, rdb, "MEMORY", "DOCTOR"); !strings.HasPrefix(got.(string), "Hi Sam") {
		t.Errorf("MEMORY DOCTOR = %q", got)
	}
}

func TestInfoKeyspaceAverageTTL(t *testing.T) {
	srv := startServer(t, testConfig{})
	rdb := srv.client(t, proto(2))
	srv.at(0) // on a whole hour: a one-minute window has 60 s left
	do(t, rdb, "RL.FIXED", "a", 10, "1m")
	do(t, rdb, "RL.TOKEN", "b", "1/s", 10, 5) // 5 s until full again
	do(t, rdb, "SET", "plain", "v")           // a string without a TTL: not among the expires
	if got := infoLine(t, rdb, "keyspace", "db0:"); got != "db0:keys=3,expires=2,avg_ttl=32500" {
		t.Errorf("INFO keyspace: %q; want keys=3,expires=2,avg_ttl=32500", got)
	}
}

// TestRedisCLIKeyModes: --memkeys sizes every key with MEMORY USAGE,
// --bigkeys lists sluice's types without a size (they have no length),
// --hotkeys stops at OBJECT FREQ's error, which says where to look instead.
func TestRedisCLIKeyModes(t *testing.T) {
	srv := startServer(t, testConfig{})
	rdb := srv.client(t, proto(2))
	do(t, rdb, "RL.TOKEN", "user:1", "1/s", 10)
	do(t, rdb, "RL.LOG", "big:log", 1000, "1m", 50)
	mem := srv.cli(t, "", "--memkeys")
	for _, want := range []string{`Biggest rl-log found '"big:log"' has 848 bytes`, `Biggest rl-token found '"user:1"' has 40 bytes`} {
		if !strings.Contains(mem, want) {
			t.Errorf("redis-cli --memkeys lacks %q:\n%s", want, mem)
		}
	}
	if strings.Contains(mem, "Warning") || strings.Contains(mem, "Error") {
		t.Errorf("redis-cli --memkeys warned:\n%s", mem)
	}
	if big := srv.cli(t, "", "--bigkeys"); !strings.Contains(big, "Sampled 2 keys") {
		t.Errorf("redis-cli --bigkeys:\n%s", big)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, redisCLI(t), "-h", "127.0.0.1", "-p", srv.port, "--hotkeys").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Error: ERR An LFU maxmemory policy is not selected") ||
		!strings.Contains(string(out), "RL.TOP DECISIONS") {
		t.Errorf("redis-cli --hotkeys: %v\n%s\nwant it to stop at OBJECT FREQ's error, naming RL.TOP", err, out)
	}
}

// TestRedisCLIBigkeysSizesStrings: STRLEN answers as Redis's (the length,
// 0 for a missing key, WRONGTYPE on a limiter's state), so redis-cli
// --bigkeys sizes the string keys scripts write; a limiter's type has no
// size command in redis-cli, which prints its count with "0 ?".
func TestRedisCLIBigkeysSizesStrings(t *testing.T) {
	srv := startServer(t, testConfig{})
	rdb := srv.client(t, proto(2))
	do(t, rdb, "SET", "window:1", "hello")
	do(t, rdb, "SET", "window:2", "hi")
	do(t, rdb, "RL.TOKEN", "user:1", "1/s", 10)
	if n := do(t, rdb, "STRLEN", "window:1"); n != int64(5) {
		t.Errorf("STRLEN window:1 = %v; want 5", n)
	}
	if n := do(t, rdb, "STRLEN", "nothing"); n != int64(0) {
		t.Errorf("STRLEN nothing = %v; want 0", n)
	}
	if got := doErr(t, rdb, "STRLEN", "user:1"); !strings.HasPrefix(got, "WRONGTYPE ") {
		t.Errorf("STRLEN on a limiter's state: %q; want WRONGTYPE", got)
	}
	big := srv.cli(t, "", "--bigkeys")
	for _, want := range []string{`Biggest string found '"window:1"' has 5 bytes`, "2 strings with 7 bytes",
		"1 rl-tokens with 0 ?"} {
		if !strings.Contains(big, want) {
			t.Errorf("redis-cli --bigkeys lacks %q:\n%s", want, big)
		}
	}
	if strings.Contains(big, "Warning") {
		t.Errorf("redis-cli --bigkeys warned:\n%s", big)
	}
}
