package compat

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-rl/sluice/internal/testutil"
)

// A real redis-server for the differential tests (testutil.StartRedis: a Unix socket, no
// persistence, stopped when the test ends).

type redisServer struct {
	rdb *redis.Client
	// v72 is set for Redis 7.2 and later, which write a Lua number as the
	// shortest string that reads back to it instead of "%.17g".
	v72 bool
}

func startRedis(t *testing.T) *redisServer {
	t.Helper()
	r := testutil.StartRedis(t)
	if r.Major < 7 {
		t.Skipf("redis-server %s: the scripts' comparison needs Redis 7", r.Version)
	}
	rdb := redis.NewClient(&redis.Options{Network: r.Network, Addr: r.Addr, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	return &redisServer{rdb: rdb, v72: r.Major > 7 || r.Minor >= 2}
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
