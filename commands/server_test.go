package commands

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestGoRedisTokenScript(t *testing.T) {
	ts := startServer(t, testConfig{})
	rdb := ts.client(t, &redis.Options{Protocol: 2})
	ctx := context.Background()
	k := "user:42"
	ts.play(t, []call{
		{0, []any{"RL.TOKEN", k, "10/s", 20}, "[1 20 19 0 100]"},
		{0, []any{"RL.TOKEN", k, "10/s", 20, 19}, "[1 20 0 0 2000]"},
		{0, []any{"RL.TOKEN", k, "10/s", 20}, "[0 20 0 100 2000]"},
		{50 * time.Millisecond, []any{"RL.TOKEN", k, "10/s", 20}, "[0 20 0 50 1950]"},
		{100 * time.Millisecond, []any{"RL.TOKEN", k, "10/s", 20}, "[1 20 0 0 2000]"},
		{100 * time.Millisecond, []any{"RL.TOKEN", k, "10/s", 20, 21}, "[0 20 0 -1 2000]"},
		{100 * time.Millisecond, []any{"RL.TOKEN", k, "10/s", 20, -5}, "[1 20 5 0 1500]"},
		{300 * time.Millisecond, []any{"RL.TOKEN", k, "10/s", 20, 0}, "[1 20 7 0 1300]"},
		// 1 ns past a millisecond boundary still rounds up: never early.
		{300*time.Millisecond + 1, []any{"RL.TOKEN", k, "10/s", 20, 8}, "[0 20 7 100 1300]"},
	})

	if n := rdb.Exists(ctx, k).Val(); n != 1 {
		t.Fatalf("EXISTS = %d; want 1", n)
	}
	if typ := rdb.Type(ctx, k).Val(); typ != "rl-token" {
		t.Fatalf("TYPE = %q; want rl-token", typ)
	}
	if pttl := rdb.PTTL(ctx, k).Val(); pttl != 1300*time.Millisecond {
		t.Fatalf("PTTL = %v; want 1.3s", pttl)
	}
	ts.clock.Set(epochMs*1e6 + int64(1600*time.Millisecond)) // full again: absent
	if n := rdb.Exists(ctx, k).Val(); n != 0 {
		t.Fatalf("EXISTS on a full bucket = %d; want 0", n)
	}
	if n := rdb.DBSize(ctx).Val(); n != 0 {
		t.Fatalf("DBSIZE with only a full bucket = %d; want 0", n)
	}
	if pttl := rdb.PTTL(ctx, k).Val(); pttl != -2*time.Nanosecond {
		t.Fatalf("PTTL of an absent key = %v; want -2", pttl)
	}
}

func TestGoRedisRESP3DecisionReadsAsInt64Slice(t *testing.T) {
	ts := startServer(t, testConfig{})
	rdb := ts.client(t, nil) // go-redis v9 speaks RESP3 by default
	ctx := context.Background()
	got, err := rdb.Do(ctx, "RL.TOKEN", "user:42", "10/s", 20).Int64Slice()
	if err != nil || fmt.Sprint(got) != "[1 20 19 0 100]" {
		t.Fatalf("RESP3 RL.TOKEN as Int64Slice = %v, %v; want [1 20 19 0 100]", got, err)
	}
	named := ts.client(t, &redis.Options{OnConnect: namedReplies})
	v, err := named.Do(ctx, "RL.TOKEN", "user:42", "10/s", 20, 0).Result()
	if err != nil {
		t.Fatal(err)
	}
	m, ok := v.(map[any]any)
	if !ok {
		t.Fatalf("RESP3 reply %#v is not a map", v)
	}
	want := map[any]any{"allowed": true, "limit": int64(20), "remaining": int64(19),
		"retry_after_ms": int64(0), "reset_after_ms": int64(100)} // n = 0: a peek
	for k, w := range want {
		if m[k] != w {
			t.Fatalf("RESP3 reply[%v] = %#v; want %#v (reply %v)", k, m[k], w, m)
		}
	}
}

func TestArgumentErrorsChangeNothing(t *testing.T) {
	ts := startServer(t, testConfig{})
	rdb := ts.client(t, &redis.Options{Protocol: 2})
	ctx := context.Background()
	bad := []struct {
		args []any
		want string
	}{
		{[]any{"RL.TOKEN", "k", "10/s"}, "ERR wrong number of arguments for 'rl.token' command"},
		{[]any{"RL.TOKEN", "k", "10/s", 20, 1, 2}, "ERR wrong number of arguments for 'rl.token' command"},
		{[]any{"RL.TOKEN", "k", "NaN", 20}, "ERR invalid rate 'NaN'"},
		{[]any{"RL.TOKEN", "k", "inf", 20}, "ERR invalid rate 'inf'"},
		{[]any{"RL.TOKEN", "k", "0x10", 20}, "ERR invalid rate '0x10'"},
		{[]any{"RL.TOKEN", "k", "1_000/s", 20}, "ERR invalid rate '1_000/s'"},
		{[]any{"RL.TOKEN", "k", " 10/s", 20}, "ERR invalid rate ' 10/s'"},
		{[]any{"RL.TOKEN", "k", "0/s", 20}, "ERR rate must be positive"},
		{[]any{"RL.TOKEN", "k", "10/s", "1e3"}, "ERR value is not an integer or out of range"},
		{[]any{"RL.TOKEN", "k", "10/s", "20 "}, "ERR value is not an integer or out of range"},
		{[]any{"RL.TOKEN", "k", "10/s", "0"}, "ERR capacity must be positive"},
		{[]any{"RL.TOKEN", "k", "10/s", "9223372036854775808"}, "ERR value is not an integer or out of range"},
		{[]any{"RL.TOKEN", "k", "10/s", 20, "1.5"}, "ERR value is not an integer or out of range"},
		{[]any{"RL.TOKEN", "k", "10/s", 20, "+1"}, "ERR value is not an integer or out of range"},
		{[]any{"NOPE", "a", "b"}, "ERR unknown command 'NOPE', with args beginning with: 'a' 'b' "},
		{[]any{"SELECT", 1}, "ERR DB index is out of range"},
		{[]any{"DEBUG", "CLOCK", "SET", "-1"}, "ERR value is not an integer or out of range"},
		{[]any{"CLIENT", "NOPE"}, "ERR unknown subcommand 'NOPE'. Try CLIENT HELP."},
	}
	for _, b := range bad {
		err := rdb.Do(ctx, b.args...).Err()
		if err == nil || !strings.HasPrefix(err.Error(), b.want) {
			t.Errorf("%v: error %v; want %q", b.args, err, b.want)
		}
	}
	if n := rdb.DBSize(ctx).Val(); n != 0 {
		t.Fatalf("DBSIZE after only bad calls = %d; want 0", n)
	}
	// The connection is still good.
	if got := ints(t, do(t, rdb, "RL.TOKEN", "k", "10/s", 20)); got != "[1 20 19 0 100]" {
		t.Fatalf("after errors: %v", got)
	}
}

func TestRacingClientsAdmitExactlyCapacity(t *testing.T) {
	ts := startServer(t, testConfig{})
	const capacity, clients, tries = 500, 16, 60
	var mu sync.Mutex
	admitted := 0
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rdb := redis.NewClient(&redis.Options{Addr: ts.addr, Protocol: 2, PoolSize: 1})
			defer rdb.Close()
			ctx := context.Background()
			for j := 0; j < tries; j++ {
				pipe := rdb.Pipeline()
				cmds := make([]*redis.Cmd, 4)
				for k := range cmds {
					cmds[k] = pipe.Do(ctx, "RL.TOKEN", "hot", "1/h", capacity)
				}
				if _, err := pipe.Exec(ctx); err != nil {
					t.Error(err)
					return
				}
				for _, c := range cmds {
					v, _ := c.Slice()
					if len(v) == 5 && v[0] == int64(1) {
						mu.Lock()
						admitted++
						mu.Unlock()
					}
				}
			}
		}()
	}
	wg.Wait()
	if admitted != capacity {
		t.Fatalf("%d clients admitted %d; want exactly %d", clients, admitted, capacity)
	}
}

func TestKeyCommands(t *testing.T) {
	ts := startServer(t, testConfig{})
	rdb := ts.client(t, &redis.Options{Protocol: 2})
	ctx := context.Background()
	for _, k := range []string{"user:1", "user:2", "user:3", "ip:1"} {
		rdb.Do(ctx, "RL.TOKEN", k, "1/s", 10)
	}
	if n := rdb.DBSize(ctx).Val(); n != 4 {
		t.Fatalf("DBSIZE = %d; want 4", n)
	}
	var keys []string
	iter := rdb.Scan(ctx, 0, "user:*", 2).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil || len(keys) != 3 {
		t.Fatalf("SCAN MATCH user:* = %v, %v; want 3 keys", keys, err)
	}
	if n, _ := rdb.ScanType(ctx, 0, "", 100, "rl-leaky").Val(); len(n) != 0 {
		t.Fatalf("SCAN TYPE rl-leaky = %v; want none", n)
	}
	if n := rdb.Exists(ctx, "user:1", "user:1", "nope").Val(); n != 2 {
		t.Fatalf("EXISTS user:1 user:1 nope = %d; want 2", n)
	}
	if n := rdb.Del(ctx, "user:1", "nope").Val(); n != 1 {
		t.Fatalf("DEL = %d; want 1", n)
	}
	if ttl := rdb.TTL(ctx, "user:2").Val(); ttl != time.Second {
		t.Fatalf("TTL = %v; want 1s", ttl)
	}
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if n := rdb.DBSize(ctx).Val(); n != 0 {
		t.Fatalf("DBSIZE after FLUSHALL = %d; want 0", n)
	}
	if tm := rdb.Time(ctx).Val(); tm.UnixMilli() != epochMs {
		t.Fatalf("TIME = %v; want the debug clock's %d", tm.UnixMilli(), epochMs)
	}
}

func TestConnectionCommands(t *testing.T) {
	ts := startServer(t, testConfig{})
	rdb := ts.client(t, &redis.Options{Protocol: 3, PoolSize: 1})
	ctx := context.Background()
	if v := rdb.Ping(ctx).Val(); v != "PONG" {
		t.Fatalf("PING = %q", v)
	}
	if v := rdb.Echo(ctx, "hi\x00there").Val(); v != "hi\x00there" {
		t.Fatalf("ECHO = %q", v)
	}
	if err := rdb.Do(ctx, "CLIENT", "SETNAME", "worker-1").Err(); err != nil {
		t.Fatal(err)
	}
	if v := rdb.ClientGetName(ctx).Val(); v != "worker-1" {
		t.Fatalf("CLIENT GETNAME = %q", v)
	}
	if err := rdb.Do(ctx, "CLIENT", "SETNAME", "has space").Err(); err == nil {
		t.Fatal("CLIENT SETNAME with a space succeeded")
	}
	info := rdb.ClientInfo(ctx)
	if info.Err() != nil || info.Val().Name != "worker-1" || !strings.HasPrefix(info.Val().LibName, "go-redis") {
		t.Fatalf("CLIENT INFO = %+v, %v", info.Val(), info.Err())
	}
	id := rdb.ClientID(ctx).Val()
	if id <= 0 {
		t.Fatalf("CLIENT ID = %d", id)
	}
	list := rdb.ClientList(ctx).Val()
	if !strings.Contains(list, "name=worker-1") {
		t.Fatalf("CLIENT LIST = %q", list)
	}
	infoText := rdb.Info(ctx).Val()
	for _, section := range []string{"# Server", "# Clients", "# Memory", "# Stats", "# Keyspace", "connected_clients:1"} {
		if !strings.Contains(infoText, section) {
			t.Fatalf("INFO lacks %q:\n%s", section, infoText)
		}
	}
	if v := rdb.ConfigGet(ctx, "maxclients").Val(); len(v) != 0 {
		// Params come from cmd/sluice; an in-process server has none.
		t.Fatalf("CONFIG GET maxclients = %v", v)
	}
	if n := rdb.Do(ctx, "COMMAND", "COUNT").Val(); n.(int64) < 20 {
		t.Fatalf("COMMAND COUNT = %v", n)
	}
	raw, err := rdb.Do(ctx, "COMMAND", "DOCS", "rl.token").Result()
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := raw.(map[any]any); !ok || m["rl.token"] == nil {
		t.Fatalf("COMMAND DOCS rl.token = %#v", raw)
	}
}

func TestAuth(t *testing.T) {
	ts := startServer(t, testConfig{Password: "s3cret"})
	ctx := context.Background()
	anon := ts.client(t, &redis.Options{Protocol: 2})
	if err := anon.Do(ctx, "RL.TOKEN", "k", "1/s", 1).Err(); err == nil || err.Error() != "NOAUTH Authentication required." {
		t.Fatalf("unauthenticated RL.TOKEN: %v", err)
	}
	wrong := ts.client(t, &redis.Options{Protocol: 3, Password: "nope"})
	if err := wrong.Ping(ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGPASS") {
		t.Fatalf("wrong password: %v", err)
	}
	for _, proto := range []int{2, 3} {
		good := ts.client(t, &redis.Options{Protocol: proto, Password: "s3cret"})
		if err := good.Do(ctx, "RL.TOKEN", "k", "1/s", 1).Err(); err != nil {
			t.Fatalf("RESP%d with the password: %v", proto, err)
		}
	}
}

func TestDebugRefusedWithoutFlag(t *testing.T) {
	ts := startServer(t, testConfig{Debug: "no"})
	rdb := ts.client(t, nil)
	err := rdb.Do(context.Background(), "DEBUG", "CLOCK", "REAL").Err()
	if err == nil || !strings.HasPrefix(err.Error(), "ERR DEBUG command not allowed.") {
		t.Fatalf("DEBUG without the flag: %v", err)
	}
}

// CLIENT LIST and CLIENT INFO name each client's socket descriptor, as Redis
// does, whichever way the client is served.
func TestClientListShowsDescriptors(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		ts := startServer(t, testConfig{EventLoops: loops})
		ctx := context.Background()
		a := ts.client(t, &redis.Options{PoolSize: 1, ClientName: "a"})
		b := ts.client(t, &redis.Options{PoolSize: 1, ClientName: "b"})
		fdOf := func(line string) int {
			t.Helper()
			for _, f := range strings.Fields(line) {
				if v, ok := strings.CutPrefix(f, "fd="); ok {
					n, err := strconv.Atoi(v)
					if err != nil {
						t.Fatalf("fd field %q in %q", f, line)
					}
					return n
				}
			}
			t.Fatalf("no fd field in %q", line)
			return 0
		}
		infoA, err := a.Do(ctx, "CLIENT", "INFO").Text()
		if err != nil {
			t.Fatal(err)
		}
		infoB, err := b.Do(ctx, "CLIENT", "INFO").Text()
		if err != nil {
			t.Fatal(err)
		}
		fa, fb := fdOf(infoA), fdOf(infoB)
		if fa < 0 || fb < 0 || fa == fb {
			t.Fatalf("CLIENT INFO fds %d and %d; want two different descriptors", fa, fb)
		}
		list, err := a.ClientList(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]int{}
		for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
			for _, f := range strings.Fields(line) {
				if name, ok := strings.CutPrefix(f, "name="); ok {
					byName[name] = fdOf(line)
				}
			}
		}
		if byName["a"] != fa || byName["b"] != fb {
			t.Fatalf("CLIENT LIST fds %v; CLIENT INFO said a=%d b=%d", byName, fa, fb)
		}
	})
}
