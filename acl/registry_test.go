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

// TestLocateFindsTheKeys: a command registered with Locate has the keys
// Locate returns checked, with their access, instead of Keys' ranges (EVAL's
// numkeys: "eval s 2 a b c" has keys a and b, not c).
func TestLocateFindsTheKeys(t *testing.T) {
	reg, err := NewRegistry(Categories)
	if err != nil {
		t.Fatal(err)
	}
	numkeys := func(argv [][]byte, buf []KeyRef) []KeyRef {
		n := int(argv[2][0] - '0')
		for i := 3; i < 3+n && i < len(argv); i++ {
			buf = append(buf, KeyRef{Pos: i, Access: Read | Write})
		}
		return buf
	}
	c, err := reg.Register(Spec{Name: "eval", Categories: []string{"slow"}, Keys: []KeySpec{{First: 1, Last: -1, Step: 1}},
		Locate: numkeys})
	if err != nil {
		t.Fatal(err)
	}
	us := NewUsers(reg)
	if err := us.SetUser("u", "on", "+@all", "~a", "~b", "%R~c"); err != nil {
		t.Fatal(err)
	}
	p := us.Get("u").Perms()
	argv := func(s ...string) [][]byte {
		out := make([][]byte, len(s))
		for i, a := range s {
			out[i] = []byte(a)
		}
		return out
	}
	for _, tc := range []struct {
		argv []string
		want Denial
	}{
		{[]string{"eval", "s", "2", "a", "b", "x"}, Denial{}},
		{[]string{"eval", "s", "3", "a", "b", "x"}, Denial{Reason: DeniedKey, Pos: 5}},
		{[]string{"eval", "s", "1", "c"}, Denial{Reason: DeniedKey, Pos: 3}}, // read only: c needs write too
		{[]string{"eval", "s", "0", "x"}, Denial{}},
	} {
		if got := p.Check(c, argv(tc.argv...)); got != tc.want {
			t.Errorf("Check(%v) = %+v; want %+v", tc.argv, got, tc.want)
		}
	}
}
