package acl

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// Random rule sequences and DRYRUN checks, compared with Redis over its own
// command table.

// randomRules draws 1 to 8 rules from a vocabulary of every kind of rule,
// valid and not, over rt's commands and categories.
func randomRules(r *rand.Rand, rt *redisTable) []string {
	cats := rt.reg.Categories()
	pick := func(list []string) string { return list[r.IntN(len(list))] }
	h := HashPassword("p3")
	fixed := []string{"on", "off", "nopass", "resetpass", ">p1", ">p2", "<p1", "#" + h, "!" + h, "reset",
		"~a:*", "~b:*", "%R~r:*", "%W~w:*", "%RW~x:*", "allkeys", "resetkeys", "~*", "~", "%R~*",
		"&c1", "allchannels", "resetchannels", "&*", "allcommands", "nocommands", "+@all", "-@all",
		"+select|0", "+select|1", "bogus", "+nosuch", "%X~a", "#abc", "<never", "sanitize-payload", "skip-sanitize-payload"}
	n := 1 + r.IntN(8)
	out := make([]string, 0, n)
	for range n {
		switch r.IntN(4) {
		case 0:
			out = append(out, pick(fixed))
		case 1:
			out = append(out, pick([]string{"+@", "-@"})+pick(cats))
		default:
			out = append(out, pick([]string{"+", "-"})+pick(rt.names))
		}
	}
	return out
}

// TestRandomRulesMatchRedis sets 1000 users with random rules on Redis and
// here, and compares every reply, ACL LIST line and ACL GETUSER answer;
// then deletes them on both.
func TestRandomRulesMatchRedis(t *testing.T) {
	rdb := startRedis(t)
	rt := loadRedisTable(t, rdb)
	us := NewUsers(rt.reg)
	r := rand.New(rand.NewPCG(1, 2))
	applied := 0
	for i := 0; i < 1000; i++ {
		name := fmt.Sprintf("r%d", i%20)
		if compareUser(t, rdb, us, name, randomRules(r, rt)) {
			applied++
		}
		if i%20 == 19 {
			var names []any
			for j := 0; j < 20; j++ {
				names = append(names, fmt.Sprintf("r%d", j))
			}
			want, err := rdb.Do(context.Background(), append([]any{"ACL", "DELUSER"}, names...)...).Int()
			if err != nil {
				t.Fatal(err)
			}
			var snames []string
			for _, n := range names {
				snames = append(snames, n.(string))
			}
			if got, err := us.DelUser(snames...); err != nil || got != want {
				t.Fatalf("DELUSER: Redis %d, sluice %d, %v", want, got, err)
			}
		}
	}
	t.Logf("1000 random rule sets (%d applied) rendered as Redis renders them", applied)
}

// lookupArgv finds the command argv runs, as Redis does: a subcommand when
// the command has them.
func lookupArgv(reg *Registry, argv [][]byte) *Command {
	c := reg.Lookup(string(argv[0]))
	if c != nil && len(c.Subs) > 0 && len(argv) > 1 {
		if sub := reg.Lookup(string(argv[0]) + "|" + string(argv[1])); sub != nil {
			return sub
		}
	}
	return c
}

func TestDryRunMatchesRedis(t *testing.T) {
	rdb := startRedis(t)
	rt := loadRedisTable(t, rdb)
	us := NewUsers(rt.reg)
	ctx := context.Background()
	users := map[string][]string{
		"keys":     {"on", "~a:*", "%R~r:*", "%W~w:*", "+@all"},
		"reader":   {"on", "allkeys", "+@read", "-keys"},
		"selector": {"on", "allkeys", "+select|0", "+client|list"},
		"none":     {"on"},
		"nokeys":   {"on", "+@all"},
		"rw":       {"on", "%R~k*", "%W~k*", "+@all"},
	}
	calls := []string{"get a:1", "get r:1", "get w:1", "set a:1 x", "set r:1 x", "set w:1 x", "mget a:1 r:2 w:3",
		"del w:1", "del r:1", "exists w:1", "type r:1", "ttl w:1", "object encoding r:1", "keys *", "select 0",
		"select 1", "client list", "client kill id 1", "client info", "flushall", "auth x y", "ping",
		"copy a:1 w:2", "copy r:1 w:2", "copy w:1 a:2", "rename a:1 a:2", "get k1", "set k2 v", "lmove r:1 w:1 left right",
		"incr w:1", "getdel r:1", "getdel a:1", "eval x 1 a:1", "hello 3"}
	compared := 0
	for name, rules := range users {
		if !compareUser(t, rdb, us, name, rules) {
			t.Fatalf("%s's rules did not apply", name)
		}
		for _, call := range calls {
			words := strings.Fields(call)
			argv := make([][]byte, len(words))
			args := []any{"ACL", "DRYRUN", name}
			for i, w := range words {
				argv[i] = []byte(w)
				args = append(args, w)
			}
			c := lookupArgv(rt.reg, argv)
			if c == nil || !rt.exactKeys[c.Name] {
				continue
			}
			want, err := rdb.Do(ctx, args...).Text()
			if err != nil {
				t.Fatalf("DRYRUN %s %s on Redis: %v", name, call, err)
			}
			compared++
			got, err := us.DryRun(name, c, argv)
			if err != nil || got != want {
				t.Errorf("DRYRUN %s %s: Redis %q, sluice %q (%v)", name, call, want, got, err)
			}
		}
	}
	t.Logf("%d DRYRUN answers the same as Redis's", compared)
}
