package commands

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// CLIENT KILL's filters and old form, and CLIENT LIST's TYPE and ID, over
// real sockets with go-redis and the redis-cli binary.

// pinned returns a client with one connection, its CLIENT ID and its
// address as the server sees it.
func pinned(t *testing.T, srv *testServer) (*redis.Conn, int64, string) {
	t.Helper()
	c := srv.client(t, &redis.Options{Protocol: 2, DisableIndentity: true, PoolSize: 1}).Conn()
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	id, err := c.ClientID(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.ClientInfo(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	return c, id, info.Addr
}

// gone waits until c's connection is closed by the server.
func gone(t *testing.T, c *redis.Conn, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for c.Ping(context.Background()).Err() == nil {
		if time.Now().After(deadline) {
			t.Fatalf("%s: the connection still answers", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestClientKillFilters(t *testing.T) {
	srv := startServer(t, testConfig{})
	admin := srv.client(t, &redis.Options{Protocol: 2, DisableIndentity: true, PoolSize: 1}).Conn()
	defer admin.Close()
	ctx := context.Background()
	adminID := admin.ClientID(ctx).Val()

	a, aID, aAddr := pinned(t, srv)
	b, _, bAddr := pinned(t, srv)
	c, _, _ := pinned(t, srv)

	// errors first: nothing is closed by them
	for _, e := range []struct {
		args []any
		want string
	}{
		{[]any{"CLIENT", "KILL", "ID", "x"}, "ERR client-id should be greater than 0"},
		{[]any{"CLIENT", "KILL", "ID", 0}, "ERR client-id should be greater than 0"},
		{[]any{"CLIENT", "KILL", "TYPE", "bogus"}, "ERR Unknown client type 'bogus'"},
		{[]any{"CLIENT", "KILL", "SKIPME", "maybe"}, "ERR syntax error"},
		{[]any{"CLIENT", "KILL", "NOSUCH", "1"}, "ERR syntax error"},
		{[]any{"CLIENT", "KILL", "ID", 1, "ADDR"}, "ERR syntax error"},
		{[]any{"CLIENT", "KILL", "127.0.0.1:1"}, "ERR No such client"},
		{[]any{"CLIENT", "LIST", "TYPE", "bogus"}, "ERR Unknown client type 'bogus'"},
		{[]any{"CLIENT", "LIST", "ID", "abc"}, "ERR Invalid client ID"},
		{[]any{"CLIENT", "KILL"}, "ERR wrong number of arguments for 'client|kill' command"},
	} {
		if got := doErrConn(t, admin, e.args...); got != e.want {
			t.Errorf("%v = %q; want %q", e.args, got, e.want)
		}
	}
	// CLIENT LIST ID and TYPE
	list := cdo(admin, "CLIENT", "LIST", "ID", aID, adminID).Val().(string)
	if n := strings.Count(list, "\n"); n != 2 || !strings.Contains(list, "addr="+aAddr) {
		t.Errorf("CLIENT LIST ID %d %d:\n%s", aID, adminID, list)
	}
	if l := cdo(admin, "CLIENT", "LIST", "TYPE", "pubsub").Val().(string); l != "" {
		t.Errorf("CLIENT LIST TYPE pubsub = %q; want none", l)
	}
	if l := cdo(admin, "CLIENT", "LIST", "TYPE", "normal").Val().(string); strings.Count(l, "\n") != 4 {
		t.Errorf("CLIENT LIST TYPE normal:\n%s\nwant 4 clients", l)
	}
	// the old form closes the client at that address
	if got := cdo(admin, "CLIENT", "KILL", aAddr).Val(); got != "OK" {
		t.Errorf("CLIENT KILL %s = %v; want OK", aAddr, got)
	}
	gone(t, a, "CLIENT KILL ip:port")
	// ADDR with the new form answers a count
	if got := cdo(admin, "CLIENT", "KILL", "ADDR", bAddr, "SKIPME", "yes").Val(); got != int64(1) {
		t.Errorf("CLIENT KILL ADDR %s = %v; want 1", bAddr, got)
	}
	gone(t, b, "CLIENT KILL ADDR")
	// USER default and SKIPME yes (the default): everyone but the caller
	if got := cdo(admin, "CLIENT", "KILL", "USER", "default").Val(); got != int64(1) {
		t.Errorf("CLIENT KILL USER default = %v; want 1 (c; not the caller)", got)
	}
	gone(t, c, "CLIENT KILL USER")
	if err := admin.Ping(ctx).Err(); err != nil {
		t.Fatalf("the caller was closed by its own CLIENT KILL USER: %v", err)
	}
	// LADDR and SKIPME no: the caller too, after its reply
	laddr := srv.addr
	if got := cdo(admin, "CLIENT", "KILL", "LADDR", laddr, "SKIPME", "no").Val(); got != int64(1) {
		t.Errorf("CLIENT KILL LADDR %s SKIPME no = %v; want 1", laddr, got)
	}
	gone(t, admin, "CLIENT KILL SKIPME no")
}

// doErrConn runs args on c and returns the error reply's text.
func doErrConn(t *testing.T, c *redis.Conn, args ...any) string {
	t.Helper()
	err := cdo(c, args...).Err()
	if err == nil {
		t.Fatalf("%v succeeded; want an error", args)
	}
	return err.Error()
}

func TestClientKillOldFormThroughRedisCLI(t *testing.T) {
	srv := startServer(t, testConfig{})
	_, id, addr := pinned(t, srv)
	if got := srv.cli(t, "", "CLIENT", "KILL", addr); got != "OK\n" {
		t.Errorf("redis-cli CLIENT KILL %s printed %q; want OK", addr, got)
	}
	if got := srv.cli(t, "", "CLIENT", "LIST", "ID", strconv.FormatInt(id, 10)); got != "\n" && got != "" {
		t.Errorf("CLIENT LIST ID of the killed client printed %q; want nothing", got)
	}
}

// cdo runs args on the pinned connection c.
func cdo(c *redis.Conn, args ...any) *redis.Cmd {
	cmd := redis.NewCmd(context.Background(), args...)
	_ = c.Process(context.Background(), cmd)
	return cmd
}
