package commands

import (
	"fmt"
	"strings"
	"testing"
)

// TestACLKeyPatternsReachPolicyStateKeys: RL.CHECK, RL.INFO POLICY and
// RL.RESET POLICY name no key, but they reach the state under
// pol:<policy>:<algo>:<subject>; a user limited to tenant A's subjects is
// refused tenant B's, in one pair or several (nothing applied), and the
// ACL LOG names the derived key.
func TestACLKeyPatternsReachPolicyStateKeys(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		ts := startServer(t, testConfig{EventLoops: loops})
		admin := ts.client(t, proto(2))
		do(t, admin, "RL.POLICY", "SET", "free", "TOKEN", "1/h", 10)
		do(t, admin, "ACL", "SETUSER", "a", "on", ">pa", "~pol:*:tenant-a:*", "+@limiter", "+@policy", "+@connection", "+rl.info", "+rl.reset")
		a := asUser(t, ts, "a", "pa")

		if got := ints(t, do(t, a, "RL.CHECK", "free", "tenant-a:1")); !strings.HasPrefix(got, "[1 10 9 ") {
			t.Fatalf("RL.CHECK on its own subject = %s", got)
		}
		const keyDenied = "NOPERM this user has no permissions to access one of the keys used as arguments"
		for _, cmd := range [][]any{
			{"RL.CHECK", "free", "tenant-b:1"},
			{"RL.CHECK", "free", "tenant-a:1", "free", "tenant-b:1"},
			{"RL.INFO", "POLICY", "free", "tenant-b:1"},
			{"RL.RESET", "POLICY", "free", "tenant-b:1"},
		} {
			if got := doErr(t, a, cmd...); got != keyDenied {
				t.Errorf("%v = %q; want %q", cmd, got, keyDenied)
			}
		}
		// The refused pair of two applied nothing to tenant A's subject.
		if got := ints(t, do(t, a, "RL.CHECK", "free", "tenant-a:1", 0)); !strings.HasPrefix(got, "[1 10 9 ") {
			t.Errorf("tenant A's subject after the refused pairs = %s; want 9 left", got)
		}
		if got := fmt.Sprint(do(t, a, "RL.RESET", "POLICY", "free", "tenant-a:1")); got != "1" {
			t.Errorf("RL.RESET POLICY on its own subject = %s; want 1", got)
		}
		log := fmt.Sprint(do(t, admin, "ACL", "LOG"))
		if !strings.Contains(log, "pol:free:token:tenant-b:1") {
			t.Errorf("ACL LOG does not name the derived key:\n%s", log)
		}
		// The default user is not restricted.
		if got := ints(t, do(t, admin, "RL.CHECK", "free", "tenant-b:1")); !strings.HasPrefix(got, "[1 10 9 ") {
			t.Errorf("the default user on tenant B's subject = %s", got)
		}
	})
}

// TestACLKeyPatternsReachOverrideKeys: RL.OVERRIDE names no key either; it
// reaches ovr:<policy>:<subject>, and a user limited to tenant A's
// overrides may set, read, list and delete those only.
func TestACLKeyPatternsReachOverrideKeys(t *testing.T) {
	ts := startServer(t, testConfig{})
	admin := ts.client(t, proto(2))
	do(t, admin, "RL.POLICY", "SET", "free", "TOKEN", "1/h", 10)
	do(t, admin, "RL.OVERRIDE", "SET", "free", "tenant-b:1", "DENY")
	do(t, admin, "ACL", "SETUSER", "a", "on", ">pa", "~ovr:free:tenant-a:*", "~pol:*:tenant-a:*", "+@policy", "+@connection")
	a := asUser(t, ts, "a", "pa")
	do(t, a, "RL.OVERRIDE", "SET", "free", "tenant-a:1", "UNLIMITED")
	if got := ints(t, do(t, a, "RL.CHECK", "free", "tenant-a:1")); got != "[1 10 10 0 0]" {
		t.Fatalf("RL.CHECK of its own overridden subject = %s", got)
	}
	const keyDenied = "NOPERM this user has no permissions to access one of the keys used as arguments"
	for _, cmd := range [][]any{
		{"RL.OVERRIDE", "SET", "free", "tenant-b:1", "UNLIMITED"},
		{"RL.OVERRIDE", "GET", "free", "tenant-b:1"},
		{"RL.OVERRIDE", "DEL", "free", "tenant-b:1"},
		{"RL.OVERRIDE", "LIST", "free"}, // the whole policy's overrides
	} {
		if got := doErr(t, a, cmd...); got != keyDenied {
			t.Errorf("%v = %q; want %q", cmd, got, keyDenied)
		}
	}
	// Tenant B's override is untouched.
	if got := ints(t, do(t, admin, "RL.CHECK", "free", "tenant-b:1")); got != "[0 10 0 -1 0]" {
		t.Errorf("tenant B's subject after the refusals = %s; want its DENY", got)
	}
	if got := fmt.Sprint(do(t, a, "RL.OVERRIDE", "DEL", "free", "tenant-a:1")); got != "1" {
		t.Errorf("RL.OVERRIDE DEL of its own = %s; want 1", got)
	}
}

// TestACLPolicyChangesAreAdminOnly: RL.POLICY SET, DEL and RELOAD change
// every tenant's limits, so they are @admin and @dangerous like CONFIG SET
// and outside @policy: a user confined to its own keys with +@policy gets
// NOPERM for them, and the policy is unchanged, while RL.POLICY GET and
// LIST stay in @policy.
func TestACLPolicyChangesAreAdminOnly(t *testing.T) {
	ts := startServer(t, testConfig{})
	admin := ts.client(t, proto(2))
	do(t, admin, "RL.POLICY", "SET", "free", "TOKEN", "1/h", 10)
	do(t, admin, "ACL", "SETUSER", "a", "on", ">pa", "~pol:*:tenant-a:*", "-@all", "+@policy", "+@connection")
	a := asUser(t, ts, "a", "pa")
	for _, cmd := range [][]any{
		{"RL.POLICY", "SET", "free", "TOKEN", "1/h", 1000000},
		{"RL.POLICY", "DEL", "free"},
		{"RL.POLICY", "RELOAD"},
	} {
		want := fmt.Sprintf("NOPERM this user has no permissions to run the 'rl.policy|%s' command",
			strings.ToLower(cmd[1].(string)))
		if got := doErr(t, a, cmd...); got != want {
			t.Errorf("%v = %q; want %q", cmd, got, want)
		}
	}
	if got := fmt.Sprint(do(t, a, "RL.POLICY", "GET", "free")); !strings.Contains(got, "1/h") && !strings.Contains(got, "3600") {
		t.Errorf("RL.POLICY GET free = %s", got)
	}
	do(t, a, "RL.POLICY", "LIST")
	if got := ints(t, do(t, a, "RL.CHECK", "free", "tenant-a:1")); !strings.HasPrefix(got, "[1 10 9 ") {
		t.Errorf("RL.CHECK after the refused changes = %s; want the policy's 10", got)
	}
	for cat, want := range map[string]bool{"admin": true, "dangerous": true, "policy": false} {
		list := fmt.Sprint(do(t, admin, "ACL", "CAT", cat))
		for _, sub := range []string{"set", "del", "reload"} {
			if got := strings.Contains(" "+strings.Trim(list, "[]")+" ", " rl.policy|"+sub+" "); got != want {
				t.Errorf("ACL CAT %s lists rl.policy|%s: %v; want %v (%s)", cat, sub, got, want, list)
			}
		}
	}
}
