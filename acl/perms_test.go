package acl

import (
	"strings"
	"testing"
)

func argv(words ...string) [][]byte {
	out := make([][]byte, len(words))
	for i, w := range words {
		out[i] = []byte(w)
	}
	return out
}

// check runs a command line for user name.
func check(t *testing.T, us *Users, name, line string) Denial {
	t.Helper()
	words := strings.Fields(line)
	c := us.reg.Lookup(words[0])
	if len(c.Subs) > 0 {
		c = us.reg.Lookup(words[0] + "|" + words[1])
	}
	return us.Get(name).Perms().Check(c, argv(words...))
}

func mustSet(t *testing.T, us *Users, name string, rules ...string) {
	t.Helper()
	if err := us.SetUser(name, rules...); err != nil {
		t.Fatal(err)
	}
}

func TestDefaultUserMayDoEverything(t *testing.T) {
	us := NewUsers(sluiceRegistry(t))
	if got := us.List(); len(got) != 1 || got[0] != "user default on nopass ~* &* +@all" {
		t.Fatalf("ACL LIST = %q", got)
	}
	for _, c := range us.reg.all {
		if d := us.Default().Perms().Check(c, argv(c.Name, "k", "v")); d.Reason != Allowed {
			t.Errorf("the default user is denied %s: %v", c.Name, d.Reason)
		}
	}
	if us.NeedsAuth() || us.HasPasswords() {
		t.Fatal("a fresh set needs authentication")
	}
}

// A tenant's user decides on its own prefix only, whichever command it
// uses; keys that no KeySpec locates (inside RL.ALL) go through CheckKey.
func TestKeyPatternsConfineATenant(t *testing.T) {
	us := NewUsers(sluiceRegistry(t))
	mustSet(t, us, "a", "on", ">pa", "~tenant-a:*", "+@limiter", "+@read", "+del")
	for _, tc := range []struct {
		line string
		want Reason
		pos  int
	}{
		{"rl.token tenant-a:u1 10/s 20", Allowed, 0},
		{"rl.token tenant-b:u1 10/s 20", DeniedKey, 1},
		{"rl.info tenant-a:u1", Allowed, 0},
		{"rl.info tenant-b:u1", DeniedKey, 1},
		{"del tenant-a:1 tenant-a:2", Allowed, 0},
		{"del tenant-a:1 tenant-b:2 tenant-a:3", DeniedKey, 2},
		{"exists tenant-b:1", DeniedKey, 1},
		{"rl.reset tenant-a:1", DeniedCommand, 0},
		{"flushall", DeniedCommand, 0},
		{"scan 0", Allowed, 0},
	} {
		d := check(t, us, "a", tc.line)
		if d.Reason != tc.want || (tc.want == DeniedKey && d.Pos != tc.pos) {
			t.Errorf("%s: %v at %d; want %v at %d", tc.line, d.Reason, d.Pos, tc.want, tc.pos)
		}
	}
	p := us.Get("a").Perms()
	for key, want := range map[string]bool{"tenant-a:x": true, "tenant-b:x": false, "tenant-a": false, "": false} {
		if got := p.CheckKey([]byte(key), Read|Write); got != want {
			t.Errorf("CheckKey(%q) = %v; want %v", key, got, want)
		}
	}
	if p.AllowsAllKeys() || !us.Default().Perms().AllowsAllKeys() {
		t.Fatal("AllowsAllKeys")
	}
}

func TestReadAndWritePatterns(t *testing.T) {
	us := NewUsers(sluiceRegistry(t))
	mustSet(t, us, "u", "on", "nopass", "%R~shared:*", "%W~sink:*", "~own:*", "+@all")
	for line, want := range map[string]Reason{
		"rl.info shared:1":        Allowed,   // reads
		"rl.token shared:1 1 1":   DeniedKey, // reads and writes
		"type shared:1":           Allowed,   // names the key only
		"type sink:1":             Allowed,   // any pattern that matches
		"rl.info sink:1":          DeniedKey, // write-only
		"del sink:1":              Allowed,   // writes
		"del shared:1":            DeniedKey, // read-only
		"rl.token own:1 1 1":      Allowed,   // ~ is both
		"rl.token other:1 1 1":    DeniedKey, // no pattern
		"exists shared:1 sink:2":  Allowed,   // names only
		"auth x":                  Allowed,   // no keys
		"rl.token":                Allowed,   // argv too short to hold a key
		"config get x":            Allowed,   // allcommands
		"client kill id 1":        Allowed,   // allcommands
		"exists other:1":          DeniedKey, // no pattern matches
		"raft.remove n1":          Allowed,   // no keys
		"rl.policy x":             Allowed,   // no keys
		"rl.fixed shared:1 1 1s":  DeniedKey, // reads and writes
		"select 0":                Allowed,   // no keys
		"multi":                   Allowed,   // no keys
		"pttl nothing":            DeniedKey, // no pattern matches
		"rl.reset own:1 sink:1":   Allowed,   // writes
		"rl.reset shared:1":       DeniedKey, // read-only
		"ping":                    Allowed,   // no keys
		"hello 3":                 Allowed,   // no keys
		"shutdown":                Allowed,   // no keys
		"rl.check x":              Allowed,   // no KeySpec
		"exec":                    Allowed,   // no keys
		"scan 0":                  Allowed,   // no KeySpec
		"flushall":                Allowed,   // no keys
		"client setname x":        Allowed,   // no keys
		"raft.members":            Allowed,   // no keys
		"config set x y":          Allowed,   // no keys
		"rl.all 1 TOKEN k 1 1":    Allowed,   // its keys are the caller's to check
		"del own:1 shared:2":      DeniedKey, // one of them
		"rl.info other:1":         DeniedKey, // no pattern
		"type other:1":            DeniedKey, // no pattern
		"rl.info own:1":           Allowed,   // ~ is both
		"del own:1":               Allowed,   // ~ is both
		"exists own:1 other:1":    DeniedKey, // the second
		"pttl own:1":              Allowed,   // any pattern
		"pttl shared:1":           Allowed,   // any pattern
		"pttl sink:1":             Allowed,   // any pattern
		"rl.token sink:1 1 1":     DeniedKey, // write-only
		"rl.fixed own:1 1 1s":     Allowed,   // ~ is both
		"rl.info shared:":         Allowed,   // the pattern's * matches nothing
		"rl.info shared":          DeniedKey, // no ':'
		"rl.info Shared:1":        DeniedKey, // case matters
		"rl.info shared:\x00\xff": Allowed,   // any bytes
	} {
		if d := check(t, us, "u", line); d.Reason != want {
			t.Errorf("%q: %v; want %v", line, d.Reason, want)
		}
	}
}

// A user denied one category at a time: every command of that category
// is refused (but AUTH and HELLO, which every user may run), every other
// command allowed.
func TestEachCategoryCanBeDenied(t *testing.T) {
	reg := sluiceRegistry(t)
	us := NewUsers(reg)
	for i, cat := range Categories {
		name := "no-" + cat
		mustSet(t, us, name, "on", "allkeys", "+@all", "-@"+cat)
		p := us.Get(name).Perms()
		for _, c := range reg.all {
			in := c.cats&(1<<i) != 0 || (c.Parent != nil && c.Parent.cats&(1<<i) != 0)
			want := Allowed
			if in && !c.noAuth {
				want = DeniedCommand
			}
			if d := p.Check(c, argv(c.Name, "k")); d.Reason != want {
				t.Errorf("+@all -@%s, %s: %v; want %v", cat, c.Name, d.Reason, want)
			}
		}
		// And allowed one category at a time.
		mustSet(t, us, "only-"+cat, "on", "allkeys", "+@"+cat)
		p = us.Get("only-" + cat).Perms()
		for _, c := range reg.all {
			in := c.cats&(1<<i) != 0 || (c.Parent != nil && c.Parent.cats&(1<<i) != 0)
			want := DeniedCommand
			if in || c.noAuth {
				want = Allowed
			}
			if d := p.Check(c, argv(c.Name, "k")); d.Reason != want {
				t.Errorf("+@%s, %s: %v; want %v", cat, c.Name, d.Reason, want)
			}
		}
	}
}

func TestSubcommandsAndFirstArguments(t *testing.T) {
	us := NewUsers(sluiceRegistry(t))
	mustSet(t, us, "u", "on", "+client|setname", "+config", "-config|set", "+select|0")
	for line, want := range map[string]Reason{
		"client setname x": Allowed,
		"client kill id 1": DeniedCommand,
		"config get x":     Allowed,
		"config set x y":   DeniedCommand,
		"select 0":         Allowed,
		"select 1":         DeniedCommand,
		"ping":             DeniedCommand,
		"auth x":           Allowed, // NoAuth
	} {
		if d := check(t, us, "u", line); d.Reason != want {
			t.Errorf("%q: %v; want %v", line, d.Reason, want)
		}
	}
	if got := us.List()[1]; got != "user u on resetchannels -@all +select|0 +config -config|set +client|setname" {
		t.Fatalf("ACL LIST: %s", got)
	}
	if d := (&Perms{}).Check(us.reg.Lookup("select"), argv("select")); d.Reason != DeniedCommand {
		t.Fatal("a first argument that is not there")
	}
}

// Connections keep the User: a change of its rules reaches them, and a
// deleted user is refused everything.
func TestPermissionsChangeInPlace(t *testing.T) {
	us := NewUsers(sluiceRegistry(t))
	mustSet(t, us, "u", "on", ">p", "allkeys", "+@read")
	u, err := us.Authenticate("u", "p")
	if err != nil {
		t.Fatal(err)
	}
	tok := us.reg.Lookup("rl.token")
	if u.Perms().Check(tok, argv("rl.token", "k", "1", "1")).Reason != DeniedCommand {
		t.Fatal("rl.token allowed before +@limiter")
	}
	mustSet(t, us, "u", "+@limiter")
	if u.Perms().Check(tok, argv("rl.token", "k", "1", "1")).Reason != Allowed {
		t.Fatal("rl.token denied after +@limiter")
	}
	if n, err := us.DelUser("u", "nobody"); n != 1 || err != nil {
		t.Fatalf("DelUser = %d, %v", n, err)
	}
	if !u.Deleted() || u.Perms().Check(tok, argv("rl.token", "k")).Reason != DeniedCommand ||
		u.Perms().Check(us.reg.Lookup("auth"), argv("auth", "x")).Reason != Allowed {
		t.Fatal("a deleted user's connection")
	}
	if us.Get("u") != nil {
		t.Fatal("Get after DelUser")
	}
}

func TestDenialTexts(t *testing.T) {
	a := argv("get", "k1", "k2")
	for _, tc := range []struct {
		d            Denial
		msg, err     string
		reasonString string
	}{
		{Denial{}, "OK", "", "unknown"},
		{Denial{Reason: DeniedCommand}, "This user has no permissions to run the 'get' command",
			"NOPERM this user has no permissions to run the 'get' command", "command"},
		{Denial{Reason: DeniedKey, Pos: 2}, "This user has no permissions to access the 'k2' key",
			"NOPERM this user has no permissions to access one of the keys used as arguments", "key"},
		{Denial{Reason: DeniedChannel, Pos: 1}, "This user has no permissions to access the 'k1' channel",
			"NOPERM this user has no permissions to access one of the channels used as arguments", "channel"},
	} {
		if got := tc.d.Message("get", a); got != tc.msg {
			t.Errorf("Message = %q; want %q", got, tc.msg)
		}
		if got := tc.d.Error("get"); got != tc.err {
			t.Errorf("Error = %q; want %q", got, tc.err)
		}
		if got := tc.d.Reason.String(); got != tc.reasonString {
			t.Errorf("String = %q; want %q", got, tc.reasonString)
		}
	}
	if DeniedAuth.String() != "auth" {
		t.Fatal("DeniedAuth")
	}
}
