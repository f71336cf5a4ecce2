package acl

import (
	"errors"
	"slices"
	"testing"
)

// sluiceRegistry registers a representative part of sluice's commands with
// their categories and keys.
func sluiceRegistry(t testing.TB) *Registry {
	t.Helper()
	reg, err := NewRegistry(Categories)
	if err != nil {
		t.Fatal(err)
	}
	key1 := func(a Access) []KeySpec { return []KeySpec{{First: 1, Last: 1, Step: 1, Access: a}} }
	keysAll := func(a Access) []KeySpec { return []KeySpec{{First: 1, Last: -1, Step: 1, Access: a}} }
	for _, s := range []Spec{
		{Name: "rl.token", Categories: []string{"limiter", "write", "fast"}, Keys: key1(Read | Write)},
		{Name: "rl.fixed", Categories: []string{"limiter", "write", "fast"}, Keys: key1(Read | Write)},
		{Name: "rl.all", Categories: []string{"limiter", "write", "fast"}},
		{Name: "rl.info", Categories: []string{"read", "keyspace", "fast"}, Keys: key1(Read)},
		{Name: "rl.reset", Categories: []string{"keyspace", "write", "fast"}, Keys: keysAll(Write)},
		{Name: "del", Categories: []string{"keyspace", "write", "slow"}, Keys: keysAll(Write)},
		{Name: "exists", Categories: []string{"keyspace", "read", "fast"}, Keys: keysAll(0)},
		{Name: "type", Categories: []string{"keyspace", "read", "fast"}, Keys: key1(0)},
		{Name: "pttl", Categories: []string{"keyspace", "read", "fast"}, Keys: key1(0)},
		{Name: "scan", Categories: []string{"keyspace", "read", "slow"}},
		{Name: "flushall", Categories: []string{"keyspace", "write", "slow", "dangerous"}},
		{Name: "select", Categories: []string{"connection", "fast"}},
		{Name: "auth", Categories: []string{"connection", "fast"}, NoAuth: true},
		{Name: "hello", Categories: []string{"connection", "fast"}, NoAuth: true},
		{Name: "ping", Categories: []string{"connection", "fast"}},
		{Name: "multi", Categories: []string{"transaction", "fast"}},
		{Name: "exec", Categories: []string{"transaction", "slow"}},
		{Name: "config", Categories: []string{"slow"}},
		{Name: "config|get", Categories: []string{"admin", "slow", "dangerous"}},
		{Name: "config|set", Categories: []string{"admin", "slow", "dangerous"}},
		{Name: "client", Categories: []string{"slow"}},
		{Name: "client|kill", Categories: []string{"admin", "slow", "dangerous", "connection"}},
		{Name: "client|setname", Categories: []string{"slow", "connection"}},
		{Name: "shutdown", Categories: []string{"admin", "slow", "dangerous"}},
		{Name: "raft.members", Categories: []string{"admin", "slow"}},
		{Name: "raft.remove", Categories: []string{"admin", "slow", "dangerous"}},
		{Name: "rl.policy", Categories: []string{"policy", "admin", "slow"}},
		{Name: "rl.check", Categories: []string{"policy", "limiter", "write", "fast"}},
	} {
		if _, err := reg.Register(s); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

func TestRegistryRefusesBadCommands(t *testing.T) {
	reg := sluiceRegistry(t)
	for _, tc := range []struct {
		spec Spec
		err  error
	}{
		{Spec{Name: "rl.token"}, ErrDuplicateCommand},
		{Spec{Name: "RL.X"}, ErrBadName},
		{Spec{Name: "a b"}, ErrBadName},
		{Spec{Name: ""}, ErrBadName},
		{Spec{Name: "a|b|c"}, ErrBadName},
		{Spec{Name: "|x"}, ErrBadName},
		{Spec{Name: "nosuch|x"}, ErrNoParent},
		{Spec{Name: "client|kill|x"}, ErrBadName},
		{Spec{Name: "x", Categories: []string{"string"}}, ErrBadCategory},
	} {
		if _, err := reg.Register(tc.spec); !errors.Is(err, tc.err) {
			t.Errorf("Register(%+v) = %v; want %v", tc.spec, err, tc.err)
		}
	}
	if _, err := NewRegistry(make([]string, 65)); !errors.Is(err, ErrTooManyCats) {
		t.Errorf("65 categories: %v", err)
	}
	if c := reg.Lookup("CLIENT|Kill"); c == nil || c.Name != "client|kill" || c.Parent != reg.Lookup("client") {
		t.Fatalf("Lookup(CLIENT|Kill) = %+v", c)
	}
	got, err := reg.CategoryCommands("Dangerous")
	want := []string{"flushall", "config|get", "config|set", "client|kill", "shutdown", "raft.remove"}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("CategoryCommands(dangerous) = %v, %v; want %v", got, err, want)
	}
	if _, err := reg.CategoryCommands("string"); err == nil || err.Error() != "Unknown category 'string'" {
		t.Fatalf("CategoryCommands(string) error %v", err)
	}
	if got := reg.CategoriesOf(reg.Lookup("rl.check")); !slices.Equal(got, []string{"write", "fast", "limiter", "policy"}) {
		t.Fatalf("CategoriesOf(rl.check) = %v", got)
	}
	if got := reg.Categories(); !slices.Equal(got, Categories) {
		t.Fatalf("Categories() = %v", got)
	}
}
