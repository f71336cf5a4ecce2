package commands

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-rl/sluice/internal/testutil"
	"github.com/sluice-rl/sluice/server"
)

// Access control over real sockets, with go-redis: users, categories, key
// patterns (RL.ALL's keys included), NOPERM's wording, the ACL LOG, the
// aclfile, rename-command; and the ACL check's cost on the hot path.

// asUser returns a RESP2 client that authenticates as user on connect.
func asUser(t *testing.T, ts *testServer, user, pass string) *redis.Client {
	t.Helper()
	return ts.client(t, &redis.Options{Protocol: 2, DisableIndentity: true, Username: user, Password: pass, PoolSize: 1})
}

// TestACLUserLimitedToItsKeyPrefix: a tenant limited to ~tenant-a:* and
// @limiter decides on its own keys and gets Redis's NOPERM for any key of
// tenant B, whichever command names it, RL.ALL's inner keys included.
func TestACLUserLimitedToItsKeyPrefix(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		ts := startServer(t, testConfig{EventLoops: loops})
		admin := ts.client(t, proto(2))
		do(t, admin, "ACL", "SETUSER", "a", "on", ">pa", "~tenant-a:*", "+@limiter", "+@connection", "+evalsha", "+set", "+get")
		a := asUser(t, ts, "a", "pa")

		if got := ints(t, do(t, a, "RL.TOKEN", "tenant-a:k", "1/h", 10, 1)); !strings.HasPrefix(got, "[1 10 9 ") {
			t.Fatalf("RL.TOKEN on its own key = %s", got)
		}
		const keyDenied = "NOPERM this user has no permissions to access one of the keys used as arguments"
		for _, cmd := range [][]any{
			{"RL.TOKEN", "tenant-b:k", "1/h", 10, 1},
			{"RL.ALL", 1, "TOKEN", "tenant-a:k", "1/h", 10, "TOKEN", "tenant-b:k", "1/h", 10},
			{"RL.ALL", 1, "FIXED", "tenant-b:x", "1/h", 10},
			{"CL.THROTTLE", "tenant-b:k", 10, 1, 60},
			{"EVALSHA", ululeIncr, 1, "tenant-b:k", 1, 60000},
			{"EVALSHA", ululeIncr, 2, "tenant-a:k2", "tenant-b:k", 1, 60000},
			{"SET", "tenant-b:s", "1"},
			{"GET", "tenant-b:s"},
		} {
			if got := doErr(t, a, cmd...); got != keyDenied {
				t.Errorf("%v = %q; want %q", cmd, got, keyDenied)
			}
		}
		if got := fmt.Sprint(do(t, a, "EVALSHA", ululeIncr, 1, "tenant-a:lim", 1, 60000)); got != "[1 60000]" {
			t.Fatalf("EVALSHA on its own key = %s", got)
		}
		// The RL.ALL that was refused changed nothing on tenant A's key.
		if got := ints(t, do(t, admin, "RL.TOKEN", "tenant-a:k", "1/h", 10, 0)); !strings.HasPrefix(got, "[1 10 9 ") {
			t.Errorf("tenant A's key after the refused RL.ALL = %s; want 9 left", got)
		}
		for _, cmd := range [][]any{{"DEL", "tenant-a:k"}, {"FLUSHALL"}, {"CONFIG", "GET", "port"}, {"RL.RESET", "tenant-a:k"}} {
			want := fmt.Sprintf("NOPERM this user has no permissions to run the '%s' command", strings.ToLower(cmd[0].(string)))
			if cmd[0] == "CONFIG" {
				want = "NOPERM this user has no permissions to run the 'config|get' command"
			}
			if got := doErr(t, a, cmd...); got != want {
				t.Errorf("%v = %q; want %q", cmd, got, want)
			}
		}
		if got := do(t, a, "ACL", "WHOAMI"); got != "a" {
			t.Errorf("ACL WHOAMI = %v", got)
		}
		if list := do(t, admin, "CLIENT", "LIST").(string); !strings.Contains(list, " user=a ") || !strings.Contains(list, " user=default ") {
			t.Errorf("CLIENT LIST does not show both users:\n%s", list)
		}
		// The default user is untouched by the check.
		if got := ints(t, do(t, admin, "RL.TOKEN", "tenant-b:k", "1/h", 10, 1)); !strings.HasPrefix(got, "[1 10 9 ") {
			t.Errorf("the default user on tenant B's key = %s", got)
		}
	})
}

// TestACLDeniesEachCategory: a user given everything but one category is
// refused that category's commands and runs the others.
func TestACLDeniesEachCategory(t *testing.T) {
	ts := startServer(t, testConfig{})
	admin := ts.client(t, proto(2))
	// Every category ACL CAT lists has a probe: a command of it, and a
	// command outside it that the same user still runs.
	probes := map[string][]any{
		"limiter":     {"RL.TOKEN", "k", "1/h", 10, 1},
		"read":        {"RL.INFO", "k"},
		"keyspace":    {"DEL", "k"},
		"admin":       {"RAFT.MEMBERS"},
		"write":       {"RL.RESET", "k"},
		"dangerous":   {"FLUSHALL"},
		"connection":  {"ECHO", "x"},
		"transaction": {"MULTI"},
		"policy":      {"RL.CHECK", "api", "user-1"},
		"fast":        {"PING"},
		"slow":        {"FLUSHALL"},
	}
	allowed := map[string][]any{"connection": {"DBSIZE"}, "fast": {"FLUSHALL"}, "slow": {"PING"}}
	cats := do(t, admin, "ACL", "CAT").([]any)
	if len(cats) != 11 || cats[9] != "limiter" || cats[10] != "policy" {
		t.Errorf("ACL CAT = %v", cats)
	}
	for _, c := range cats {
		if probes[c.(string)] == nil {
			t.Errorf("no probe for category %s", c)
		}
	}
	for cat, cmd := range probes {
		user := "no-" + cat
		do(t, admin, "ACL", "SETUSER", user, "on", "nopass", "allkeys", "+@all", "-@"+cat)
		c := asUser(t, ts, user, "x")
		got := doErr(t, c, cmd...)
		want := fmt.Sprintf("NOPERM this user has no permissions to run the '%s' command", strings.ToLower(cmd[0].(string)))
		if got != want {
			t.Errorf("-@%s: %v = %q; want %q", cat, cmd, got, want)
		}
		other := allowed[cat]
		if other == nil {
			other = []any{"PING"}
		}
		if err := c.Do(context.Background(), other...).Err(); err != nil {
			t.Errorf("-@%s: %v: %v", cat, other, err)
		}
	}
}

// TestACLAuthAndHello: AUTH user pass and HELLO 3 AUTH user pass switch the
// connection's user; a wrong pair is WRONGPASS and is logged; requirepass
// is the default user's password.
func TestACLAuthAndHello(t *testing.T) {
	ts := startServer(t, testConfig{Password: "root"})
	c := testutil.Dial(t, ts.addr)
	if got := c.Do("RL.TOKEN k 1/h 10 1\r\n"); got != "-NOAUTH Authentication required." {
		t.Fatalf("before AUTH = %q", got)
	}
	if got := c.Do("AUTH root\r\n"); got != "+OK" {
		t.Fatalf("AUTH root = %q", got)
	}
	if got := c.Do("ACL SETUSER bob on >secret ~bob:* +@limiter +@connection\r\n"); got != "+OK" {
		t.Fatalf("SETUSER = %q", got)
	}
	if got := c.Do("AUTH bob wrong\r\n"); got != "-WRONGPASS invalid username-password pair or user is disabled." {
		t.Fatalf("AUTH bob wrong = %q", got)
	}
	if got := c.Do("ACL WHOAMI\r\n"); got != "$default" {
		t.Fatalf("after a failed AUTH, WHOAMI = %q; want still default", got)
	}
	if got := c.Do("HELLO 2 AUTH bob secret\r\n"); !strings.HasPrefix(got, "[$server $sluice") {
		t.Fatalf("HELLO 2 AUTH bob secret = %q", got)
	}
	if got := c.Do("ACL WHOAMI\r\n"); got != "$bob" {
		t.Fatalf("after HELLO AUTH, WHOAMI = %q", got)
	}
	// go-redis with a username and RESP3 sends HELLO 3 AUTH bob secret.
	b := ts.client(t, &redis.Options{Protocol: 3, DisableIndentity: true, Username: "bob", Password: "secret", PoolSize: 1})
	if got := do(t, b, "ACL", "WHOAMI"); got != "bob" {
		t.Fatalf("HELLO 3 AUTH: WHOAMI = %v", got)
	}
	if got := doErr(t, b, "ACL", "LIST"); got != "NOPERM this user has no permissions to run the 'acl|list' command" {
		t.Fatalf("bob's ACL LIST = %q", got)
	}
	admin := asUser(t, ts, "default", "root")
	log := do(t, admin, "ACL", "LOG").([]any)
	if len(log) < 2 {
		t.Fatalf("ACL LOG = %v; want the denial and the failed AUTH", log)
	}
	first := fmt.Sprint(log[0])
	if !strings.Contains(first, "reason command") || !strings.Contains(first, "object acl|list") || !strings.Contains(first, "username bob") {
		t.Errorf("newest ACL LOG entry = %s", first)
	}
	second := fmt.Sprint(log[1])
	if !strings.Contains(second, "reason auth") || !strings.Contains(second, "object auth") {
		t.Errorf("second ACL LOG entry = %s", second)
	}
	if got := do(t, admin, "ACL", "LOG", "RESET"); got != "OK" {
		t.Errorf("ACL LOG RESET = %v", got)
	}
	if got := do(t, admin, "ACL", "LOG").([]any); len(got) != 0 {
		t.Errorf("ACL LOG after RESET = %v", got)
	}
}

// TestACLUserCommands: GETUSER, LIST, USERS, DELUSER, DRYRUN and the rule
// errors, with Redis 7's replies.
func TestACLUserCommands(t *testing.T) {
	ts := startServer(t, testConfig{})
	rdb := ts.client(t, proto(2))
	do(t, rdb, "ACL", "SETUSER", "t", "on", "#"+strings.Repeat("a", 64), "~t:*", "%R~shared:*", "+rl.token", "+@read")
	u := fmt.Sprint(do(t, rdb, "ACL", "GETUSER", "t"))
	for _, want := range []string{"flags [on]", "passwords [" + strings.Repeat("a", 64) + "]", "keys ~t:* %R~shared:*", "channels "} {
		if !strings.Contains(u, want) {
			t.Errorf("GETUSER t = %s; want %q in it", u, want)
		}
	}
	if v, err := rdb.Do(context.Background(), "ACL", "GETUSER", "nobody").Result(); err != redis.Nil {
		t.Errorf("GETUSER nobody = %v, %v; want nil", v, err)
	}
	if got := fmt.Sprint(do(t, rdb, "ACL", "USERS")); got != "[default t]" {
		t.Errorf("ACL USERS = %s", got)
	}
	list := fmt.Sprint(do(t, rdb, "ACL", "LIST"))
	if !strings.Contains(list, "user default on nopass ~* &* +@all") || !strings.Contains(list, "user t on #"+strings.Repeat("a", 64)) {
		t.Errorf("ACL LIST = %s", list)
	}
	for _, tc := range []struct {
		args []any
		want any
	}{
		{[]any{"ACL", "DRYRUN", "t", "RL.TOKEN", "t:1", "1/h", "10", "1"}, "OK"},
		{[]any{"ACL", "DRYRUN", "t", "RL.TOKEN", "u:1", "1/h", "10", "1"}, "This user has no permissions to access the 'u:1' key"},
		{[]any{"ACL", "DRYRUN", "t", "RL.INFO", "shared:x"}, "OK"},
		{[]any{"ACL", "DRYRUN", "t", "DEL", "t:1"}, "This user has no permissions to run the 'del' command"},
	} {
		if got := do(t, rdb, tc.args...); got != tc.want {
			t.Errorf("%v = %v; want %v", tc.args, got, tc.want)
		}
	}
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"ACL", "SETUSER", "t", "+nosuch"}, "ERR Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL"},
		{[]any{"ACL", "SETUSER", "t", "bogus"}, "ERR Error in ACL SETUSER modifier 'bogus': Syntax error"},
		{[]any{"ACL", "DRYRUN", "nobody", "PING"}, "ERR User 'nobody' not found"},
		{[]any{"ACL", "DRYRUN", "t", "NOSUCH"}, "ERR Command 'NOSUCH' not found"},
		{[]any{"ACL", "CAT", "nosuch"}, "ERR Unknown category 'nosuch'"},
		{[]any{"ACL", "DELUSER", "default"}, "ERR The 'default' user cannot be removed"},
		{[]any{"ACL", "SAVE"}, "ERR " + errNoACLFile.Error()},
		{[]any{"ACL", "NOSUCH"}, "ERR unknown subcommand 'NOSUCH'. Try ACL HELP."},
		{[]any{"ACL", "WHOAMI", "x"}, "ERR wrong number of arguments for 'acl|whoami' command"},
	} {
		if got := doErr(t, rdb, tc.args...); got != tc.want {
			t.Errorf("%v = %q; want %q", tc.args, got, tc.want)
		}
	}
	if got := do(t, rdb, "ACL", "DELUSER", "t", "nobody"); got != int64(1) {
		t.Errorf("DELUSER t nobody = %v; want 1", got)
	}
}

// TestACLSaveAndLoad: ACL SAVE writes the aclfile, ACL LOAD reads it back,
// and a broken file is refused with the users in force kept.
func TestACLSaveAndLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users.acl")
	if err := os.WriteFile(path, []byte("user ops on >ops ~* +@all\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, testConfig{ACLFile: path})
	rdb := ts.client(t, proto(2))
	if got := fmt.Sprint(do(t, rdb, "ACL", "USERS")); got != "[default ops]" {
		t.Fatalf("users loaded from the aclfile = %s", got)
	}
	do(t, rdb, "ACL", "SETUSER", "svc", "on", ">p", "~svc:*", "+@limiter")
	if got := do(t, rdb, "ACL", "SAVE"); got != "OK" {
		t.Fatalf("ACL SAVE = %v", got)
	}
	text, _ := os.ReadFile(path)
	if !strings.Contains(string(text), "user svc on #") || !strings.Contains(string(text), "~svc:* resetchannels -@all +@limiter") {
		t.Fatalf("aclfile after SAVE:\n%s", text)
	}
	do(t, rdb, "ACL", "DELUSER", "svc")
	if got := do(t, rdb, "ACL", "LOAD"); got != "OK" {
		t.Fatalf("ACL LOAD = %v", got)
	}
	if got := fmt.Sprint(do(t, rdb, "ACL", "USERS")); got != "[default ops svc]" {
		t.Fatalf("after LOAD = %s", got)
	}
	os.WriteFile(path, []byte("user x on +nosuch\n"), 0o600)
	if got := doErr(t, rdb, "ACL", "LOAD"); !strings.Contains(got, "nosuch") {
		t.Fatalf("ACL LOAD of a broken file = %q", got)
	}
	if got := fmt.Sprint(do(t, rdb, "ACL", "USERS")); got != "[default ops svc]" {
		t.Fatalf("after a refused LOAD = %s", got)
	}
}

// TestOnlyAuthHelloAndQuitAnswerBeforeAuth: with a password set, every
// other command of the table gets NOAUTH before AUTH, under both I/O
// models.
func TestOnlyAuthHelloAndQuitAnswerBeforeAuth(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		ts := startServer(t, testConfig{Password: "pw", EventLoops: loops})
		c := testutil.Dial(t, ts.addr)
		var noauth []string
		for name, cmd := range commandTable {
			if cmd.flags&flagNoAuth != 0 {
				noauth = append(noauth, name)
				continue
			}
			if got := c.Do(name + " x\r\n"); got != "-NOAUTH Authentication required." {
				t.Errorf("%s before AUTH = %q", name, got)
			}
		}
		slices.Sort(noauth)
		if got := strings.Join(noauth, " "); got != "auth hello quit" {
			t.Errorf("commands allowed before AUTH: %s; want auth hello quit", got)
		}
		if got := c.Do("HELLO 2\r\n"); got != "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time" {
			t.Errorf("HELLO 2 before AUTH = %q", got)
		}
		if got := c.Do("AUTH pw\r\n"); got != "+OK" {
			t.Fatalf("AUTH pw = %q", got)
		}
		if got := c.Do("PING\r\n"); got != "+PONG" {
			t.Fatalf("PING after AUTH = %q", got)
		}
	})
}

// The cost of the ACL check on the hot path: the default user (allcommands
// allkeys) pays one atomic load and a branch; a user held to a key prefix
// pays a glob match per key. Compare with BenchmarkHandlerTokenP16.

// restricted returns a loopback connection authenticated as a user allowed
// @limiter on ~user:*, the keys pipeline uses.
func restricted(tb testing.TB) *server.Conn {
	tb.Helper()
	c := loopback(tb)
	feed(tb, c, []byte(frame("ACL", "SETUSER", "tenant", "on", ">pw", "~user:*", "+@limiter", "+@connection")))
	feed(tb, c, []byte(frame("AUTH", "tenant", "pw")))
	return c
}

func BenchmarkHandlerTokenP16RestrictedUser(b *testing.B) {
	c := restricted(b)
	batch := pipeline(16, 1000, "RL.TOKEN")
	feed(b, c, batch)
	b.ReportAllocs()
	b.SetBytes(int64(len(batch) / 16))
	b.ResetTimer()
	for i := 0; i < b.N; i += 16 {
		feed(b, c, batch)
	}
}

// TestACLCheckDoesNotAllocate: a restricted user's pipelined RL.TOKEN, its
// keys matched against its pattern, allocates nothing either.
func TestACLCheckDoesNotAllocate(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation count is measured in full runs")
	}
	c := restricted(t)
	batch := pipeline(16, 16, "RL.TOKEN")
	run := func() { feed(t, c, batch) }
	run()
	if allocs := testing.AllocsPerRun(200, run); allocs != 0 {
		t.Fatalf("a restricted user's batch of 16 RL.TOKEN allocates %.1f times; want 0", allocs)
	}
}

// TestRenameCommandHidesAndRenames: rename-command hides CONFIG ("") and
// answers FLUSHALL only under its new name, over a real socket, and the
// old names are unknown commands, pipelined or not.
func TestRenameCommandHidesAndRenames(t *testing.T) {
	ts := startServer(t, testConfig{Renames: []Rename{{From: "CONFIG", To: ""}, {From: "flushall", To: "flushall-9f2c"}}})
	c := testutil.Dial(t, ts.addr)
	if got := c.Do("CONFIG GET port\r\n"); !strings.HasPrefix(got, "-ERR unknown command 'CONFIG'") {
		t.Errorf("a hidden CONFIG = %q", got)
	}
	c.Send("FLUSHALL\r\nFLUSHALL-9F2C\r\nflushall\r\nPING\r\n")
	for i, want := range []string{"-ERR unknown command 'FLUSHALL'", "+OK", "-ERR unknown command 'flushall'", "+PONG"} {
		if got := c.Reply(); !strings.HasPrefix(got, want) {
			t.Errorf("reply %d = %q; want %q…", i, got, want)
		}
	}
	// Another server in the same process keeps every name.
	other := testutil.Dial(t, startServer(t, testConfig{}).addr)
	if got := other.Do("FLUSHALL\r\n"); got != "+OK" {
		t.Errorf("FLUSHALL on a server without renames = %q", got)
	}
}

func TestRenameCommandRefusesBadDirectives(t *testing.T) {
	for _, r := range [][]Rename{
		{{From: "nosuch", To: "x"}},
		{{From: "del", To: "ping"}},
		{{From: "del", To: "has space"}},
		{{From: "del", To: ""}, {From: "del", To: "x"}},
	} {
		if _, err := renamedTable(r); err == nil {
			t.Errorf("%v accepted", r)
		}
	}
}

// TestACLChecksCommandsQueuedInMulti: a restricted user's MULTI queues
// nothing it may not run: the denial is the NOPERM error of the queued
// command, EXEC aborts and nothing changes, and ACL LOG says "multi".
func TestACLChecksCommandsQueuedInMulti(t *testing.T) {
	ts := startServer(t, testConfig{})
	admin := ts.client(t, proto(2))
	do(t, admin, "ACL", "SETUSER", "a", "on", ">pa", "~tenant-a:*", "+@limiter", "+@connection", "+@transaction")
	do(t, admin, "RL.TOKEN", "tenant-b:k", "1/h", 10, 1)
	c := testutil.Dial(t, ts.addr)
	if got := c.Do("AUTH a pa\r\n"); got != "+OK" {
		t.Fatalf("AUTH = %q", got)
	}
	c.Send("MULTI\r\nRL.TOKEN tenant-a:k 1/h 10 1\r\nRL.TOKEN tenant-b:k 1/h 10 5\r\nFLUSHALL\r\nEXEC\r\n")
	for i, want := range []string{"+OK", "+QUEUED",
		"-NOPERM this user has no permissions to access one of the keys used as arguments",
		"-NOPERM this user has no permissions to run the 'flushall' command",
		"-EXECABORT Transaction discarded because of previous errors."} {
		if got := c.Reply(); got != want {
			t.Errorf("reply %d = %q; want %q", i, got, want)
		}
	}
	if got := ints(t, do(t, admin, "RL.TOKEN", "tenant-b:k", "1/h", 10, 0)); !strings.HasPrefix(got, "[1 10 9 ") {
		t.Errorf("tenant B's key after the aborted transaction = %s; want 9 left", got)
	}
	if got := ints(t, do(t, admin, "RL.TOKEN", "tenant-a:k", "1/h", 10, 0)); !strings.HasPrefix(got, "[1 10 10 ") {
		t.Errorf("tenant A's key after the aborted transaction = %s; want untouched", got)
	}
	if entry := fmt.Sprint(do(t, admin, "ACL", "LOG", 1)); !strings.Contains(entry, "context multi") || !strings.Contains(entry, "object flushall") {
		t.Errorf("ACL LOG = %s; want the FLUSHALL denial in context multi", entry)
	}
}

// TestACLExecChecksQueuedCommandsAgain: rules changed on another
// connection between MULTI and EXEC are checked again at EXEC, as Redis
// 7.0 does: each command they no longer allow (by command, by key, or by
// RL.CHECK's derived pol: key) answers its NOPERM element and changes
// nothing; the other commands run, and ACL LOG records context multi.
func TestACLExecChecksQueuedCommandsAgain(t *testing.T) {
	ts := startServer(t, testConfig{})
	admin := ts.client(t, proto(2))
	do(t, admin, "RL.POLICY", "SET", "free", "TOKEN", "1/h", 10)
	do(t, admin, "ACL", "SETUSER", "a", "on", ">pa", "~tenant-a:*", "~pol:*:tenant-a:*", "+@limiter", "+@policy",
		"+@connection", "+@transaction", "+set", "+get")
	c := testutil.Dial(t, ts.addr)
	if got := c.Do("AUTH a pa\r\n"); got != "+OK" {
		t.Fatalf("AUTH = %q", got)
	}
	queued := []string{
		"RL.TOKEN tenant-a:k 1/h 10 1",               // its key is no longer allowed
		"RL.CHECK free tenant-a:1",                   // nor its derived key
		"RL.CHECK free tenant-a:ok2 free tenant-a:2", // nor one of its pairs' keys
		"RL.TOKEN tenant-a:ok 1/h 10 1",              // still allowed
		"RL.CHECK free tenant-a:ok",                  // still allowed
		"SET tenant-a:okstr v",                       // SET is no longer allowed
		"GET tenant-a:okstr",                         // still allowed: SET did not run
		"PING",
	}
	c.Send("MULTI\r\n")
	if got := c.Reply(); got != "+OK" {
		t.Fatalf("MULTI = %q", got)
	}
	for _, cmd := range queued {
		if got := c.Do(cmd + "\r\n"); got != "+QUEUED" {
			t.Fatalf("%s = %q; want +QUEUED", cmd, got)
		}
	}
	do(t, admin, "ACL", "SETUSER", "a", "resetkeys", "~tenant-a:ok*", "~pol:*:tenant-a:ok*", "-set")
	const changed = "-NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. " +
		"This command is no longer allowed for the following reason: "
	keyDenied := changed + "no permission to touch the specified keys"
	want := "[" + strings.Join([]string{keyDenied, keyDenied, keyDenied,
		"[:1 :10 :9 :0 :3600000]", "[:1 :10 :9 :0 :3600000]",
		changed + "no permission to execute the command or subcommand",
		"$nil", "+PONG"}, " ") + "]"
	if got := c.Do("EXEC\r\n"); got != want {
		t.Errorf("EXEC =\n%s\nwant\n%s", got, want)
	}
	// The denied commands changed nothing.
	for key, cmd := range map[string][]any{
		"tenant-a:k":                  {"RL.TOKEN", "tenant-a:k", "1/h", 10, 0},
		"pol:free:token:tenant-a:1":   {"RL.CHECK", "free", "tenant-a:1", 0},
		"pol:free:token:tenant-a:2":   {"RL.CHECK", "free", "tenant-a:2", 0},
		"pol:free:token:tenant-a:ok2": {"RL.CHECK", "free", "tenant-a:ok2", 0},
	} {
		if got := ints(t, do(t, admin, cmd...)); !strings.HasPrefix(got, "[1 10 10 ") {
			t.Errorf("%s after the EXEC = %s; want untouched", key, got)
		}
	}
	if got := do(t, admin, "EXISTS", "tenant-a:okstr"); got != int64(0) {
		t.Errorf("EXISTS tenant-a:okstr = %v; want 0 (SET was denied)", got)
	}
	if got := ints(t, do(t, admin, "RL.CHECK", "free", "tenant-a:ok", 0)); !strings.HasPrefix(got, "[1 10 9 ") {
		t.Errorf("tenant-a:ok's subject after the EXEC = %s; want one taken", got)
	}
	log := fmt.Sprint(do(t, admin, "ACL", "LOG"))
	for _, object := range []string{"object tenant-a:k", "object pol:free:token:tenant-a:1", "object set"} {
		if !strings.Contains(log, object) {
			t.Errorf("ACL LOG lacks %s:\n%s", object, log)
		}
	}
	if !strings.Contains(log, "context multi") {
		t.Errorf("ACL LOG lacks context multi:\n%s", log)
	}
}
