package acl

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-rl/sluice/internal/testutil"
)

// A real redis-server 7.0 as the reference: the tests build a Registry from
// its own command table (COMMAND, ACL CAT), so that the categories and the
// commands coincide, and compare what ACL SETUSER, ACL LIST, ACL GETUSER,
// ACL DRYRUN and ACL LOAD answer.

// startRedis runs redis-server (testutil.StartRedis) with extra flags until the test ends
// and returns a client of it; it skips the test when redis-server 7.0 is not installed.
func startRedis(t *testing.T, extra ...string) *redis.Client {
	t.Helper()
	r := testutil.StartRedis(t, extra...)
	if r.Major != 7 || r.Minor != 0 {
		t.Skip("redis-server is not 7.0: its ACL rendering may differ")
	}
	rdb := redis.NewClient(&redis.Options{Network: r.Network, Addr: r.Addr, Protocol: 2, DisableIndentity: true, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// redisTable is a registry built from a running Redis's command table, and
// which of its commands have keys the registry describes exactly.
type redisTable struct {
	reg       *Registry
	exactKeys map[string]bool
	names     []string // every command and subcommand, sorted
}

func loadRedisTable(t *testing.T, rdb *redis.Client) *redisTable {
	t.Helper()
	ctx := context.Background()
	cats, err := rdb.Do(ctx, "ACL", "CAT").StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	reg, err := NewRegistry(cats)
	if err != nil {
		t.Fatal(err)
	}
	all, err := rdb.Do(ctx, "COMMAND").Slice()
	if err != nil {
		t.Fatal(err)
	}
	rt := &redisTable{reg: reg, exactKeys: map[string]bool{}}
	for _, c := range all {
		rt.register(t, c.([]any))
	}
	for _, c := range reg.all {
		rt.names = append(rt.names, c.Name)
	}
	slices.Sort(rt.names)
	return rt
}

func (rt *redisTable) register(t *testing.T, info []any) {
	t.Helper()
	spec := Spec{Name: info[0].(string)}
	for _, c := range info[6].([]any) {
		spec.Categories = append(spec.Categories, strings.TrimPrefix(c.(string), "@"))
	}
	exact := true
	for _, ks := range info[8].([]any) {
		k, ok := keySpecOf(ks.([]any))
		if !ok {
			exact = false
			continue
		}
		spec.Keys = append(spec.Keys, k)
	}
	for _, f := range info[2].([]any) {
		if f == "no_auth" {
			spec.NoAuth = true
		}
	}
	if _, err := rt.reg.Register(spec); err != nil {
		t.Fatal(err)
	}
	rt.exactKeys[spec.Name] = exact
	if len(info) > 9 {
		for _, sub := range info[9].([]any) {
			rt.register(t, sub.([]any))
		}
	}
}

// keySpecOf reads a key specification of the simple kind (an index, then a
// range without a limit, with fixed flags).
func keySpecOf(ks []any) (KeySpec, bool) {
	m := pairs(ks)
	var k KeySpec
	for _, f := range m["flags"].([]any) {
		switch strings.ToUpper(f.(string)) { // 7.0 spells some in lower case
		case "ACCESS":
			k.Access |= Read
		case "UPDATE", "INSERT", "DELETE":
			k.Access |= Write
		case "VARIABLE_FLAGS", "INCOMPLETE":
			return k, false // the command's own code decides
		}
	}
	bs, fk := pairs(m["begin_search"].([]any)), pairs(m["find_keys"].([]any))
	if bs["type"] != "index" || fk["type"] != "range" {
		return k, false
	}
	k.First = int(pairs(bs["spec"].([]any))["index"].(int64))
	r := pairs(fk["spec"].([]any))
	last, step, limit := int(r["lastkey"].(int64)), int(r["keystep"].(int64)), r["limit"].(int64)
	if limit > 1 {
		return k, false
	}
	k.Step = step
	if last >= 0 {
		k.Last = k.First + last
	} else {
		k.Last = last
	}
	return k, true
}

func pairs(a []any) map[string]any {
	m := map[string]any{}
	for i := 0; i+1 < len(a); i += 2 {
		m[a[i].(string)] = a[i+1]
	}
	return m
}

// splitRules separates a rendered command description into the part whose
// order is Redis's algorithm's (+@all/-@all and categories) and the single
// commands, whose order is Redis's hash table's.
func splitRules(s string) (ordered string, singles []string) {
	var o []string
	for _, w := range strings.Fields(s) {
		if strings.HasPrefix(w, "+@") || strings.HasPrefix(w, "-@") {
			o = append(o, w)
		} else {
			singles = append(singles, w)
		}
	}
	slices.Sort(singles)
	return strings.Join(o, " "), singles
}

// sameRules compares two ACL LIST lines (or command descriptions) word by
// word, the single-command rules as a set.
func sameRules(a, b string) bool {
	oa, sa := splitRules(a)
	ob, sb := splitRules(b)
	return oa == ob && slices.Equal(sa, sb)
}

// compareUser sets the same rules on Redis and on us and compares the
// replies, ACL LIST and ACL GETUSER. It returns whether the rules applied.
func compareUser(t *testing.T, rdb *redis.Client, us *Users, name string, rules []string) bool {
	t.Helper()
	ctx := context.Background()
	args := []any{"ACL", "SETUSER", name}
	for _, r := range rules {
		args = append(args, r)
	}
	rerr := rdb.Do(ctx, args...).Err()
	err := us.SetUser(name, rules...)
	switch {
	case rerr == nil && err != nil:
		t.Fatalf("SETUSER %s %q: Redis OK, sluice %v", name, rules, err)
	case rerr != nil && err == nil:
		t.Fatalf("SETUSER %s %q: Redis %v, sluice OK", name, rules, rerr)
	case rerr != nil && rerr.Error() != "ERR "+err.Error():
		t.Fatalf("SETUSER %s %q:\n Redis  %v\n sluice ERR %v", name, rules, rerr, err)
	}
	want, err := rdb.Do(ctx, "ACL", "LIST").StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	got := us.List()
	if len(want) != len(got) {
		t.Fatalf("after SETUSER %s %q: ACL LIST has %d users on Redis, %d here", name, rules, len(want), len(got))
	}
	for i := range want {
		if !sameRules(want[i], got[i]) {
			t.Fatalf("after SETUSER %s %q, ACL LIST differs:\n Redis  %s\n sluice %s", name, rules, want[i], got[i])
		}
	}
	if rerr != nil {
		return false
	}
	v, err := rdb.Do(ctx, "ACL", "GETUSER", name).Slice()
	if err != nil {
		t.Fatal(err)
	}
	info, err := us.GetUser(name)
	if err != nil {
		t.Fatal(err)
	}
	r := pairs(v)
	var flags, passwords []string
	for _, f := range r["flags"].([]any) {
		flags = append(flags, f.(string))
	}
	for _, p := range r["passwords"].([]any) {
		passwords = append(passwords, p.(string))
	}
	if !slices.Equal(flags, info.Flags) || !slices.Equal(passwords, info.Passwords) || r["keys"] != info.Keys ||
		r["channels"] != info.Channels || !sameRules(r["commands"].(string), info.Commands) || len(r["selectors"].([]any)) != 0 {
		t.Fatalf("ACL GETUSER %s after %q differs:\n Redis  %v\n sluice %+v", name, rules, v, info)
	}
	return true
}

func TestRulesMatchRedis(t *testing.T) {
	rdb := startRedis(t)
	rt := loadRedisTable(t, rdb)
	us := NewUsers(rt.reg)
	h := HashPassword("hashed")
	for i, rules := range [][]string{
		{},
		{"on", ">p1", "~tenant-a:*", "%R~shared:*", "+@read", "-@dangerous", "+get", "+client|kill", "-info"},
		{"+@read", "+@write"},
		{"+@read", "-@read"},
		{"+get", "+set", "-get"},
		{"+@all", "-@dangerous"},
		{"allcommands", "-flushall"},
		{"+@write", "-set", "+@read"},
		{"nocommands", "+@admin", "-@dangerous"},
		{"+@read", "+@keyspace", "-@write"},
		{"allcommands", "-get", "+get"},
		{"+@all", "-@all", "+get"},
		{"-@all", "+@all", "-client"},
		{"+client"},
		{"+client|kill", "+client|list"},
		{"+config|get", "+@admin", "-config"},
		{"+select|0", "+select|1", "+select|0"},
		{"+select|0", "-select"},
		{"+select|0", "+@all"},
		{"reset"},
		{"on", "nopass", ">a"},
		{">a", "nopass"},
		{">", ">", "#" + h, "!" + h},
		{">x", "<x"},
		{"<nope"},
		{"#abc"},
		{"#" + strings.ToUpper(h)},
		{"!" + h},
		{"%RW~foo", "%R~foo", "~foo", "%W~bar", "%R~bar"},
		{"%R~*"},
		{"%R"},
		{"~"},
		{"%~x"}, {"%X~x"}, {"%RR~x"}, {"~a b"}, {"~a\x00b"},
		{"allkeys", "~foo"},
		{"~*", "%R~x"},
		{"~a", "allkeys"},
		{"~a", "resetkeys", "~b"},
		{"&a", "&*", "&b"},
		{"&a", "&a", "allchannels"},
		{"resetchannels", "&x:*"},
		{"bogus"}, {"+@bogus"}, {"+"}, {"+@"}, {"-client|kill"}, {"+client|bogus"}, {"+client|kill|x"}, {"+get|x|y"},
		{"-get|x"}, {"+client|"}, {"-nosuch"},
		{"ON", "NOPASS", "ALLKEYS", "+GET", "+@READ", "-@Write"},
		{"skip-sanitize-payload"}, {"sanitize-payload", "skip-sanitize-payload", "sanitize-payload"},
		{"", "on", ""},
		{"clearselectors"},
		{"on", "off", "on"},
	} {
		compareUser(t, rdb, us, fmt.Sprintf("u%d", i), rules)
	}
	// Names.
	for _, name := range []string{"", "ü", "a b", "tab\tname", "x\x00y"} {
		rerr := rdb.Do(context.Background(), "ACL", "SETUSER", name).Err()
		err := us.SetUser(name)
		if (rerr == nil) != (err == nil) || (rerr != nil && rerr.Error() != "ERR "+err.Error()) {
			t.Fatalf("SETUSER %q: Redis %v, sluice %v", name, rerr, err)
		}
	}
}
