package cluster

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-rl/sluice/keyslot"
)

// --cluster-proxy: a plain client on one node decides on the keys of
// every group, exactly.

func TestClusterProxyServesPlainClientOnEveryGroupsKeys(t *testing.T) {
	procs := newShardedClusterProxying(t, true)
	ctx := context.Background()
	entry := procs[1] // a follower or leader of group 1: either proxies
	for _, proto := range []int{2, 3} {
		rdb := redis.NewClient(&redis.Options{Addr: entry.addr, Protocol: proto, MaxRetries: -1})
		defer rdb.Close()
		groupsHit := map[int]int{}
		for k := 0; k < 40; k++ {
			key := fmt.Sprintf("p%d:user:%d", proto, k)
			admitted := 0
			for i := 0; i < 7; i++ {
				v, err := rdb.Do(ctx, "RL.TOKEN", key, "1/h", 5).Slice()
				if err != nil {
					t.Fatalf("RESP%d %s: %v", proto, key, err)
				}
				if v[0] == int64(1) {
					admitted++
				}
			}
			if admitted != 5 {
				t.Fatalf("RESP%d %s admitted %d of 7 at capacity 5", proto, key, admitted)
			}
			groupsHit[1+keyslot.Of([]byte(key))/8192]++
		}
		if groupsHit[1] == 0 || groupsHit[2] == 0 {
			t.Fatalf("RESP%d: keys hit groups %v", proto, groupsHit)
		}
	}
	// The state sits in the owning group only: its leader's client sees
	// the key spent; the entry node's own store has no such key.
	key := "p2:user:0"
	for k := 1; keyslot.Of([]byte(key)) < 8192; k++ {
		key = fmt.Sprintf("p2:user:%d", k)
	}
	owner := groupLeader(t, procs, 2)
	direct := redis.NewClient(&redis.Options{Addr: owner.addr, Protocol: 2, MaxRetries: -1})
	defer direct.Close()
	if v, err := direct.Do(ctx, "RL.TOKEN", key, "1/h", 5, 0).Slice(); err != nil || v[2] != int64(0) {
		t.Fatalf("the owner's peek of %s: %v %v, want 0 remaining", key, v, err)
	}
	plain := redis.NewClient(&redis.Options{Addr: entry.addr, Protocol: 2, MaxRetries: -1})
	defer plain.Close()

	// Replies and the owner's errors pass through unchanged.
	for _, args := range [][]any{
		{"EXISTS", key},
		{"TYPE", key},
		{"RL.TOKEN", key, "bad-rate", 5},
		{"RL.TOKEN", key, "1/h", 5, "EXTRA"},
		{"RL.ALL", 1, "TOKEN", "{u42}:s", "10/s", 20, "TOKEN", "{u42}:d", "1000/d", 1000},
	} {
		got, gerr := plain.Do(ctx, args...).Result()
		want, werr := direct.Do(ctx, args...).Result()
		if args[0] == "RL.ALL" { // a decision: the second one took one more
			if gerr != nil || werr != nil {
				t.Fatalf("%v: through the proxy %v; at the owner %v", args, gerr, werr)
			}
			continue
		}
		if args[0] == "RL.TOKEN" && werr == nil {
			t.Fatalf("%v: no error at the owner", args)
		}
		if fmt.Sprint(gerr) != fmt.Sprint(werr) || !reflect.DeepEqual(got, want) {
			t.Fatalf("%v: through the proxy %v %v; at the owner %v %v", args, got, gerr, want, werr)
		}
	}
	if v, err := plain.Do(ctx, "RL.INFO", key).Slice(); err != nil || len(v) < 2 || v[1] != "rl-token" {
		t.Fatalf("RL.INFO %s through the proxy: %v %v", key, v, err)
	}
	if err := plain.Do(ctx, "RL.ALL", 1, "TOKEN", "a", "1/h", 5, "TOKEN", "b", "1/h", 5).Err(); err == nil || !strings.HasPrefix(err.Error(), "CROSSSLOT") {
		t.Fatalf("RL.ALL across slots through the proxy: %v", err)
	}

	// MULTI is not proxied: another group's key answers MOVED when queued.
	txConn := plain.Conn()
	defer txConn.Close()
	tx := func(args ...any) error {
		cmd := redis.NewCmd(ctx, args...)
		txConn.Process(ctx, cmd)
		return cmd.Err()
	}
	if err := tx("MULTI"); err != nil {
		t.Fatal(err)
	}
	if err := tx("RL.TOKEN", key, "1/h", 5); err == nil || !strings.HasPrefix(err.Error(), "MOVED ") {
		t.Fatalf("RL.TOKEN of another group's key in MULTI: %v, want MOVED", err)
	}
	if err := tx("EXEC"); err == nil || !strings.HasPrefix(err.Error(), "EXECABORT") {
		t.Fatalf("EXEC: %v, want EXECABORT", err)
	}

	// Another proxy's connection is never proxied again: MOVED.
	conn := plain.Conn()
	defer conn.Close()
	do := func(args ...any) error {
		cmd := redis.NewCmd(ctx, args...)
		conn.Process(ctx, cmd)
		return cmd.Err()
	}
	if err := do("CLUSTER", "PROXIED"); err != nil {
		t.Fatal(err)
	}
	slot := keyslot.Of([]byte(key))
	if err := do("RL.TOKEN", key, "1/h", 5); err == nil || err.Error() != fmt.Sprintf("MOVED %d %s", slot, owner.addr) {
		t.Fatalf("a proxied connection's command for another group: %v, want MOVED", err)
	}

	// An owner that cannot be reached: CLUSTERDOWN, nothing was applied.
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	owner.srv.Shutdown(sctx)
	cancel()
	served := <-owner.served
	owner.served <- served // for the cleanup
	fresh := fmt.Sprintf("fresh:%d", time.Now().UnixNano())
	for keyslot.Of([]byte(fresh)) < 8192 {
		fresh += "x"
	}
	other := procs[2] // group 1, a fresh pool of connections
	cl := redis.NewClient(&redis.Options{Addr: other.addr, Protocol: 3, MaxRetries: -1})
	defer cl.Close()
	if err := cl.Do(ctx, "RL.TOKEN", fresh, "1/h", 5).Err(); err == nil || !strings.HasPrefix(err.Error(), "CLUSTERDOWN cannot reach "+owner.addr) {
		t.Fatalf("the owner's leader unreachable: %v, want CLUSTERDOWN", err)
	}
}
