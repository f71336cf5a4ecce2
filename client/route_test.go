package client

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-rl/sluice/client/sluicetest"
)

// routeRecorder is a go-redis hook that answers every command itself, without a server, and
// records the argument go-redis's ClusterClient and Ring would hash to route it.
type routeRecorder struct{ routed []string }

var errNotSent = errors.New("not sent")

func (h *routeRecorder) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *routeRecorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *routeRecorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.routed = append(h.routed, fmt.Sprint(cmd.Args()[firstKeyPos(cmd)]))
		cmd.SetErr(errNotSent)
		return errNotSent
	}
}

// firstKeyPos is go-redis v9's cmdFirstKeyPos for the commands this package sends: the
// position the command set (its unexported keyPos, read by reflection), else 1.
func firstKeyPos(cmd redis.Cmder) int {
	if pos := reflect.ValueOf(cmd).Elem().FieldByName("keyPos").Int(); pos != 0 {
		return int(pos)
	}
	return 1
}

// TestEveryCommandRoutesByItsSubject: each command the client builds names, at the position
// go-redis routes by, the key or subject whose slot holds its state; without SetFirstKeyPos
// RL.CHECK routed by its policy, RL.ALL by its count and RL.OVERRIDE and RL.RESET POLICY by a
// subcommand.
func TestEveryCommandRoutesByItsSubject(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer rdb.Close()
	h := &routeRecorder{}
	rdb.AddHook(h)
	c := New(rdb)
	ctx := context.Background()
	calls := []struct {
		name string
		call func()
		want string
	}{
		{"Token", func() { c.Token(ctx, "k.token", PerSecond(1), 1, 1) }, "k.token"},
		{"Fixed", func() { c.Fixed(ctx, "k.fixed", 1, time.Second, 1) }, "k.fixed"},
		{"Check", func() { c.Check(ctx, "pol", "subj.check", 1) }, "subj.check"},
		{"CheckAll", func() { c.CheckAll(ctx, 1, Policy("pol", "subj.all"), Policy("p2", "subj.other")) }, "subj.all"},
		{"All", func() { c.All(ctx, 1, Token("k.all", PerSecond(1), 1), Fixed("k.all2", 1, time.Second)) }, "k.all"},
		{"Reset", func() { c.Reset(ctx, "k.reset") }, "k.reset"},
		{"ResetPolicy", func() { c.ResetPolicy(ctx, "pol", "subj.reset") }, "subj.reset"},
		{"Info", func() { c.Info(ctx, "k.info") }, "k.info"},
		{"Throttle", func() { c.Throttle(ctx, "k.cell", 1, 1, time.Second, 1) }, "k.cell"},
		{"Acquire", func() { c.Acquire(ctx, "k.sem", 1, time.Second, "id") }, "k.sem"},
		{"SetOverride", func() { c.SetOverride(ctx, "pol", "subj.set", Deny()) }, "subj.set"},
		{"GetOverride", func() { c.GetOverride(ctx, "pol", "subj.get") }, "subj.get"},
		{"DeleteOverride", func() { c.DeleteOverride(ctx, "pol", "subj.del") }, "subj.del"},
	}
	for _, tc := range calls {
		h.routed = h.routed[:0]
		tc.call()
		if len(h.routed) != 1 || h.routed[0] != tc.want {
			t.Errorf("%s routes by %q; want %q", tc.name, h.routed, tc.want)
		}
	}
}

// TestClusterClientReachesSingleNode: a go-redis ClusterClient, which reads the node's CLUSTER
// SLOTS (one shard owning every slot), routes each typed call to the node and each succeeds.
func TestClusterClientReachesSingleNode(t *testing.T) {
	srv := sluicetest.Start(t)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{srv.Addr}, MaxRetries: -1,
		ContextTimeoutEnabled: true, ReadTimeout: 10 * time.Second})
	defer rdb.Close()
	c := New(rdb)
	ctx := context.Background()
	ok := func(name string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s through ClusterClient: %v\nserver log:\n%s", name, err, srv.Log())
		}
	}
	ok("SetPolicy", c.SetPolicy(ctx, "api", Token("", PerSecond(10), 5), PolicyOptions{}))
	r, err := c.Token(ctx, "ck.token", PerSecond(10), 5, 1)
	ok("Token", err)
	if !r.Allowed || r.Remaining != 4 {
		t.Fatalf("Token = %+v; want admitted with 4 left", r)
	}
	_, err = c.Check(ctx, "api", "ck.user", 1)
	ok("Check", err)
	_, err = c.CheckAll(ctx, 1, Policy("api", "ck.user"), Policy("api", "ck.user2"))
	ok("CheckAll", err)
	_, err = c.All(ctx, 1, Token("ck.a", PerSecond(10), 5), Fixed("ck.b", 5, time.Second))
	ok("All", err)
	ok("SetOverride", c.SetOverride(ctx, "api", "ck.user", Unlimited()))
	_, _, err = c.GetOverride(ctx, "api", "ck.user")
	ok("GetOverride", err)
	_, err = c.DeleteOverride(ctx, "api", "ck.user")
	ok("DeleteOverride", err)
	_, err = c.ResetPolicy(ctx, "api", "ck.user")
	ok("ResetPolicy", err)
	_, err = c.Info(ctx, "ck.token")
	ok("Info", err)
	n, err := c.Reset(ctx, "ck.token")
	ok("Reset", err)
	if n != 1 {
		t.Fatalf("Reset = %d; want 1", n)
	}
}
