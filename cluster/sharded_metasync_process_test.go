package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Read-your-writes for the meta group's state across groups: a policy or a
// user that one node acknowledged is found by the next command on any
// node, although the other nodes' meta replicas apply it a commit
// interval later. A node that finds no such policy, or no such user or
// password, first catches its meta replica up with the meta leader's
// commit index (META.INDEX) and looks again.

func TestProcessShardedReadYourMetaWrites(t *testing.T) {
	ps := startShardedProcs(t, 2)
	ctx := context.Background()
	client := func(p *proc) *redis.Client {
		rdb := redis.NewClient(&redis.Options{Addr: p.addr(), Protocol: 2, MaxRetries: -1, PoolSize: 1,
			ReadTimeout: 5 * time.Second})
		t.Cleanup(func() { rdb.Close() })
		return rdb
	}
	const rounds = 20

	t.Run("policy-set-then-check-on-another-group", func(t *testing.T) {
		setters := []*redis.Client{client(ps[0][0]), client(ps[0][1]), client(ps[0][2])}
		checkers := []*redis.Client{client(ps[1][0]), client(ps[1][1]), client(ps[1][2])}
		subject := keyOfGroup(2, "ryw-subject")
		for i := range rounds {
			name := fmt.Sprintf("ryw-pol-%d", i)
			if err := setters[i%3].Do(ctx, "RL.POLICY", "SET", name, "TOKEN", "1/h", 5).Err(); err != nil {
				t.Fatalf("RL.POLICY SET %s on %s: %v", name, ps[0][i%3].id, err)
			}
			v, err := checkers[(i/3)%3].Do(ctx, "RL.CHECK", name, subject).Slice()
			if err != nil {
				t.Fatalf("round %d: RL.CHECK %s %s on %s right after RL.POLICY SET on %s: %v; want a decision",
					i, name, subject, ps[1][(i/3)%3].id, ps[0][i%3].id, err)
			}
			if v[0] != int64(1) {
				t.Fatalf("round %d: RL.CHECK %s %s = %v; want admitted (a new bucket of 5)", i, name, subject, v)
			}
		}
		// A policy no one made is still unknown, once the node has caught up.
		start := time.Now()
		err := checkers[0].Do(ctx, "RL.CHECK", "ryw-never-set", subject).Err()
		if err == nil || !strings.HasPrefix(err.Error(), "ERR no such policy") {
			t.Fatalf("RL.CHECK ryw-never-set = %v; want ERR no such policy", err)
		}
		t.Logf("RL.CHECK of an unknown policy answered in %v", time.Since(start).Round(time.Microsecond))
	})

	t.Run("policy-set-then-get-or-check-pairs-on-another-group", func(t *testing.T) {
		setters := []*redis.Client{client(ps[0][0]), client(ps[0][1]), client(ps[0][2])}
		readers := []*redis.Client{client(ps[1][0]), client(ps[1][1]), client(ps[1][2])}
		if err := setters[0].Do(ctx, "RL.POLICY", "SET", "ryw-pair-base", "TOKEN", "1/h", 5).Err(); err != nil {
			t.Fatalf("RL.POLICY SET ryw-pair-base: %v", err)
		}
		for i := range rounds {
			name := fmt.Sprintf("ryw-pair-pol-%d", i)
			if err := setters[i%3].Do(ctx, "RL.POLICY", "SET", name, "TOKEN", "1/h", 5).Err(); err != nil {
				t.Fatalf("RL.POLICY SET %s on %s: %v", name, ps[0][i%3].id, err)
			}
			on := ps[1][(i/3)%3]
			if i%2 == 0 {
				v, err := readers[(i/3)%3].Do(ctx, "RL.POLICY", "GET", name).Slice()
				if err != nil || len(v) < 2 || v[1] != name {
					t.Fatalf("round %d: RL.POLICY GET %s on %s right after RL.POLICY SET = %v, %v; want the policy", i, name, on.id, v, err)
				}
				continue
			}
			// Several pairs: one decision under both, the first policy made
			// before the rounds; a new subject each round, whose buckets
			// are full.
			subject := keyOfGroup(2, fmt.Sprintf("ryw-pairs-%d-", i))
			v, err := readers[(i/3)%3].Do(ctx, "RL.CHECK", "ryw-pair-base", subject, name, subject).Slice()
			if err != nil || len(v) == 0 || v[0] != int64(1) {
				t.Fatalf("round %d: RL.CHECK ryw-pair-base %s %s %s on %s right after RL.POLICY SET = %v, %v; want admitted",
					i, subject, name, subject, on.id, v, err)
			}
		}
	})

	t.Run("acl-setuser-then-auth-on-another-group", func(t *testing.T) {
		setters := []*redis.Client{client(ps[0][0]), client(ps[0][1]), client(ps[0][2])}
		for i := range rounds {
			user, pass := fmt.Sprintf("ryw-user-%d", i), fmt.Sprintf("ryw-pw-%d", i)
			if err := setters[i%3].Do(ctx, "ACL", "SETUSER", user, "on", ">"+pass, "~*", "+@all").Err(); err != nil {
				t.Fatalf("ACL SETUSER %s on %s: %v", user, ps[0][i%3].id, err)
			}
			on := ps[1][(i/3)%3]
			rdb := redis.NewClient(&redis.Options{Addr: on.addr(), Protocol: 2, MaxRetries: -1, PoolSize: 1,
				Username: user, Password: pass, ReadTimeout: 5 * time.Second})
			err := rdb.Ping(ctx).Err()
			rdb.Close()
			if err != nil {
				t.Fatalf("round %d: AUTH %s on %s right after ACL SETUSER on %s: %v; want OK", i, user, on.id, ps[0][i%3].id, err)
			}
		}
		// A wrong password is still refused.
		err := client(ps[1][0]).Do(ctx, "AUTH", "ryw-user-0", "wrong").Err()
		if err == nil || !strings.HasPrefix(err.Error(), "WRONGPASS") {
			t.Fatalf("AUTH ryw-user-0 wrong = %v; want WRONGPASS", err)
		}
	})
}
