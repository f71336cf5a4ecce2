package compat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A real redis-server for the differential tests: 127.0.0.1, a free port, no
// persistence, stopped when the test ends.

type redisServer struct {
	rdb *redis.Client
	// v72 is set for Redis 7.2 and later, which write a Lua number as the
	// shortest string that reads back to it instead of "%.17g".
	v72 bool
}

func startRedis(t *testing.T) *redisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed (apt-get install redis-server); the comparison with Redis is skipped")
	}
	// A Unix socket of the test's own: redis-server cannot be asked for a free TCP port
	// (its --port 0 means no TCP), and a port found free may be taken before it binds.
	sock := filepath.Join(t.TempDir(), "redis.sock")
	cmd := exec.Command(bin, "--port", "0", "--unixsocket", sock,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning")
	var out bytes.Buffer // read once it has exited
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	rdb := redis.NewClient(&redis.Options{Network: "unix", Addr: sock, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for rdb.Ping(ctx).Err() != nil {
		select {
		case <-exited:
			t.Fatalf("redis-server exited: %v\n%s", cmd.ProcessState, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("redis-server did not answer PING within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	srv := &redisServer{rdb: rdb}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			var major, minor int
			fmt.Sscanf(v, "%d.%d", &major, &minor)
			if major < 7 {
				t.Skipf("redis-server %s: the scripts' comparison needs Redis 7", v)
			}
			srv.v72 = major > 7 || minor >= 2
		}
	}
	return srv
}

// load sends SCRIPT LOAD and returns the SHA1 Redis computed.
func (s *redisServer) load(t *testing.T, text string) string {
	t.Helper()
	sha, err := s.rdb.ScriptLoad(context.Background(), text).Result()
	if err != nil {
		t.Fatal(err)
	}
	return sha
}

// fromRedis describes a reply as go-redis returns it, in the notation of
// Reply.String: 5, "0.5", (nil), [1 "2"], (error) ERR ….
func fromRedis(v any, err error) string {
	switch {
	case errors.Is(err, redis.Nil):
		return "(nil)"
	case err != nil:
		return "(error) " + err.Error()
	}
	return describe(v)
}

func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "(nil)"
	case int64:
		return strconv.FormatInt(v, 10)
	case string:
		return strconv.Quote(v)
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = describe(e)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return fmt.Sprintf("%T(%v)", v, v)
}

// timeVariant is the text run on Redis in place of a script that reads TIME:
// redis.call('TIME') becomes the list at timeKey, which the test fills with
// the instant's seconds and microseconds as strings, TIME's own shape. The
// substitution keeps every line where it was, so error messages name the
// same lines; they name the variant's SHA1, which the comparison replaces
// with the production text's. sluice recognises only the production text
// (the SHA1s in the table): the variant exists only to drive Redis's clock.
func timeVariant(text string) (string, bool) {
	out := text
	for _, call := range []string{`redis.call('TIME')`, `redis.call("TIME")`} {
		out = strings.ReplaceAll(out, call, `redis.call('LRANGE', '`+timeKey+`', 0, 1)`)
	}
	return out, out != text
}

const timeKey = "compat-test:now"
