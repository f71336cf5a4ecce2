package commands

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestE2EKeyAndServerCommandsThroughGoRedis runs the key and server
// commands through go-redis's typed API, so that its reply parsers accept
// what sluice sends, in RESP2 and RESP3.
func TestE2EKeyAndServerCommandsThroughGoRedis(t *testing.T) {
	s := startServer(t, testConfig{})
	ctx := context.Background()
	for _, resp := range []int{2, 3} {
		rdb := s.client(t, proto(resp))
		check := func(what string, err error, ok bool) {
			t.Helper()
			if err != nil || !ok {
				t.Fatalf("RESP%d %s: err %v", resp, what, err)
			}
		}
		check("FLUSHDB", rdb.FlushDB(ctx).Err(), true)
		do(t, rdb, "RL.FIXED", "k1", 5, "1m")
		do(t, rdb, "RL.LOG", "k2", 5, "1m")
		do(t, rdb, "RL.ACQUIRE", "k3", 5, "1m", "id")

		pong, err := rdb.Ping(ctx).Result()
		check("PING", err, pong == "PONG")
		echo, err := rdb.Echo(ctx, "hi").Result()
		check("ECHO", err, echo == "hi")
		now, err := rdb.Time(ctx).Result()
		check("TIME", err, now.Equal(time.UnixMilli(epochMs)))
		n, err := rdb.Exists(ctx, "k1", "k2", "nope").Result()
		check("EXISTS", err, n == 2)
		typ, err := rdb.Type(ctx, "k3").Result()
		check("TYPE", err, typ == "rl-concurrency")
		pttl, err := rdb.PTTL(ctx, "k1").Result()
		check("PTTL", err, pttl == time.Minute)
		ttl, err := rdb.TTL(ctx, "k2").Result()
		check("TTL", err, ttl == time.Minute)
		missing, err := rdb.PTTL(ctx, "nope").Result()
		check("PTTL of a missing key", err, missing == -2) // go-redis passes -2 through as a Duration
		keys, cursor, err := rdb.Scan(ctx, 0, "k*", 1000).Result()
		check("SCAN", err, cursor == 0 && len(keys) == 3)
		typed, _, err := rdb.ScanType(ctx, 0, "*", 1000, "rl-log").Result()
		check("SCAN TYPE", err, len(typed) == 1 && typed[0] == "k2")
		size, err := rdb.DBSize(ctx).Result()
		check("DBSIZE", err, size == 3)
		del, err := rdb.Del(ctx, "k1", "nope").Result()
		check("DEL", err, del == 1)
		unlinked, err := rdb.Unlink(ctx, "k2").Result()
		check("UNLINK", err, unlinked == 1)
		id, err := rdb.ClientID(ctx).Result()
		check("CLIENT ID", err, id > 0)
		name, err := rdb.ClientGetName(ctx).Result()
		if err == redis.Nil {
			err = nil
		}
		check("CLIENT GETNAME", err, name == "")
		info, err := rdb.Info(ctx, "keyspace").Result()
		check("INFO", err, strings.Contains(info, "db0:keys=1"))
		cfg, err := rdb.ConfigGet(ctx, "log-max-limit").Result()
		check("CONFIG GET", err, len(cfg) == 0) // the in-process server reports no parameters
		count, err := rdb.CommandList(ctx, nil).Result()
		check("COMMAND LIST", err, len(count) == len(commandTable))
		cmds, err := rdb.Command(ctx).Result()
		check("COMMAND", err, cmds["rl.all"] != nil && cmds["rl.all"].FirstKeyPos == 3 && cmds["cl.throttle"] != nil)
		docs, err := rdb.Do(ctx, "COMMAND", "DOCS", "rl.acquire").Result()
		check("COMMAND DOCS", err, docs != nil)
		check("SELECT 0", rdb.Do(ctx, "SELECT", 0).Err(), true)
		check("FLUSHALL", rdb.FlushAll(ctx).Err(), true)
	}
	// AUTH and QUIT on a connection of their own.
	rdb := s.client(t, proto(2))
	if err := rdb.Do(ctx, "AUTH", "secret").Err(); err == nil || !strings.Contains(err.Error(), "without any password configured") {
		t.Fatalf("AUTH without requirepass: %v", err)
	}
	if err := rdb.Do(ctx, "QUIT").Err(); err != nil {
		t.Fatalf("QUIT: %v", err)
	}
}
