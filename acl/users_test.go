package acl

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestAuthenticate(t *testing.T) {
	us := NewUsers(sluiceRegistry(t))
	mustSet(t, us, "alice", "on", ">first", ">second")
	mustSet(t, us, "bob", "off", ">pw")
	mustSet(t, us, "carol", "on", "nopass")
	for _, tc := range []struct {
		user, pass string
		ok         bool
	}{
		{"alice", "first", true}, {"alice", "second", true}, {"alice", "third", false}, {"alice", "", false},
		{"alice", "firs", false}, {"alice", "first ", false},
		{"bob", "pw", false}, // off
		{"carol", "anything", true}, {"nobody", "x", false},
	} {
		u, err := us.Authenticate(tc.user, tc.pass)
		if tc.ok != (err == nil) || (!tc.ok && !errors.Is(err, ErrWrongPass)) || (tc.ok && u.Name() != tc.user) {
			t.Errorf("Authenticate(%s, %q) = %v, %v; want ok %v", tc.user, tc.pass, u, err, tc.ok)
		}
	}
	if ErrWrongPass.Error() != "WRONGPASS invalid username-password pair or user is disabled." {
		t.Fatal(ErrWrongPass)
	}
	if _, err := us.AuthDefault("x"); !errors.Is(err, ErrNoDefaultPass) {
		t.Fatalf("AUTH x with a nopass default user: %v", err)
	}
	us.SetDefaultPassword("s3cret")
	if !us.NeedsAuth() || !us.HasPasswords() {
		t.Fatal("requirepass set, yet no authentication needed")
	}
	if _, err := us.AuthDefault("s3cret"); err != nil {
		t.Fatal(err)
	}
	if _, err := us.AuthDefault("nope"); !errors.Is(err, ErrWrongPass) {
		t.Fatal(err)
	}
	if got := us.List()[3]; got != "user default on #"+HashPassword("s3cret")+" ~* &* +@all" {
		t.Fatalf("default after requirepass: %s", got)
	}
	us.SetDefaultPassword("")
	if us.NeedsAuth() {
		t.Fatal("requirepass cleared, yet authentication needed")
	}
	mustSet(t, us, DefaultUser, "off")
	if !us.NeedsAuth() {
		t.Fatal("the default user is off: connections must authenticate")
	}
}

func TestHashAndPasswordRules(t *testing.T) {
	// sha256("") and sha256("foobar"), as Redis prints them.
	if HashPassword("") != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" ||
		HashPassword("foobar") != "c3ab8ff13720e8ad9047dd39466b3c8974e592c2fa383d4a3960714caef0c4f2" {
		t.Fatal("HashPassword")
	}
	if checkPassword([]string{"zz"}, "x") {
		t.Fatal("a malformed stored hash matched")
	}
}

func TestSetUserIsAllOrNothing(t *testing.T) {
	us := NewUsers(sluiceRegistry(t))
	mustSet(t, us, "u", "on", ">p", "~a:*", "+@read")
	before := us.List()
	err := us.SetUser("u", "off", "resetkeys", "+@write", "+nosuch", "+@admin")
	var re *RuleError
	if !errors.As(err, &re) || re.Rule != "+nosuch" || !errors.Is(err, ErrUnknownCommand) ||
		err.Error() != "Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL" {
		t.Fatalf("SetUser with a bad rule: %v", err)
	}
	if !slices.Equal(us.List(), before) {
		t.Fatalf("a failed SETUSER changed the user: %q", us.List())
	}
	if err := us.SetUser("new", "on", "bogus"); err == nil || us.Get("new") != nil {
		t.Fatal("a failed SETUSER created the user")
	}
	if _, err := us.DelUser("u", DefaultUser); !errors.Is(err, ErrDeleteDefault) || us.Get("u") == nil {
		t.Fatalf("DelUser naming default: %v; nobody must be removed", err)
	}
	if err := us.SetUser("a b"); !errors.Is(err, ErrUsernameSpaces) {
		t.Fatal(err)
	}
	if _, err := us.GetUser("nobody"); err == nil || err.Error() != "Can not find user 'nobody' in ACL" {
		t.Fatal(err)
	}
	if _, err := us.DryRun("nobody", us.reg.Lookup("ping"), argv("ping")); err == nil || err.Error() != "User 'nobody' not found" {
		t.Fatal(err)
	}
	if got := us.Names(); !slices.Equal(got, []string{"default", "u"}) {
		t.Fatal(got)
	}
}

// Encode is deterministic (the same users, however they were made, give
// the same bytes), and Decode restores them.
func TestEncodeDecode(t *testing.T) {
	reg := sluiceRegistry(t)
	a, b := NewUsers(reg), NewUsers(reg)
	mustSet(t, a, "x", "on", ">p", "~a:*", "+@read", "-rl.info")
	mustSet(t, a, "y", "off", "%R~r:*", "+@limiter", "+select|0")
	mustSet(t, b, "y", "+@all", "-@all", "%R~r:*", "+select|0", "+@limiter")
	mustSet(t, b, "x", "on", "#"+HashPassword("p"), "~a:*", "+@read", "-rl.info")
	if string(a.Encode()) != string(b.Encode()) {
		t.Fatalf("encodings differ:\n%s\n%s", a.Encode(), b.Encode())
	}
	c := NewUsers(reg)
	def := c.Default()
	mustSet(t, c, "stale", "on")
	stale := c.Get("stale")
	if err := c.Decode(a.Encode()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.List(), a.List()) {
		t.Fatalf("decoded %q; want %q", c.List(), a.List())
	}
	if c.Default() != def || !stale.Deleted() || c.Get("stale") != nil {
		t.Fatal("Decode must keep the default user and retire the others")
	}
	for _, bad := range [][]byte{nil, []byte("user x on\n"), []byte("sluice-acl 1\nuser x bogus\n"), []byte("sluice-acl 2\n")} {
		if err := c.Decode(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Decode(%q) = %v; want ErrCorrupt", bad, err)
		}
	}
	if !slices.Equal(c.List(), a.List()) {
		t.Fatal("a failed Decode changed the users")
	}
}

func TestSaveAndLoadFile(t *testing.T) {
	reg := sluiceRegistry(t)
	us := NewUsers(reg)
	mustSet(t, us, "ops", "on", ">o", "allkeys", "+@all", "-@dangerous", "+shutdown")
	mustSet(t, us, "tenant-a", "on", ">a", "~tenant-a:*", "+@limiter", "+@read")
	path := filepath.Join(t.TempDir(), "users.acl")
	if err := us.SaveFile(path); err != nil {
		t.Fatal(err)
	}
	text, _ := os.ReadFile(path)
	if string(text) != strings.Join(us.List(), "\n")+"\n" {
		t.Fatalf("saved %q", text)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v", fi.Mode())
	}
	other := NewUsers(reg)
	if err := other.LoadFile(path); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(other.List(), us.List()) {
		t.Fatalf("loaded %q; want %q", other.List(), us.List())
	}
	if err := us.SaveFile(filepath.Join(t.TempDir(), "missing", "users.acl")); err == nil {
		t.Fatal("saving into a missing directory worked")
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("the directory holds %d files; a temporary file stayed", len(entries))
	}
	err := other.LoadFile(filepath.Join(t.TempDir(), "nope.acl"))
	var le *LoadError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "No such file or directory") {
		t.Fatalf("loading a missing file: %v", err)
	}
}

func words(ws ...string) [][]byte {
	out := make([][]byte, len(ws))
	for i, w := range ws {
		out[i] = []byte(w)
	}
	return out
}

// Two replicas that apply the same changes in the same order hold the same
// users, byte for byte; Check refuses what Apply would refuse, and changes
// nothing.
func TestApplyIsDeterministicAndCheckChangesNothing(t *testing.T) {
	reg := sluiceRegistry(t)
	a, b := NewUsers(reg), NewUsers(reg)
	changes := [][][]byte{
		words("setuser", "tenant-a", "on", ">pa", "~tenant-a:*", "+@limiter"),
		words("setuser", "tenant-b", "on", "#"+strings.Repeat("ab", 32), "%R~tenant-b:*", "+rl.info"),
		words("deluser", "tenant-b", "nobody"),
		words("load", "users.acl", "user default on nopass ~* &* +@all\nuser ops on >po ~* +@all -@dangerous\n"),
		words("setuser", "ops", "-flushall"),
	}
	counts := []int64{0, 0, 1, 0, 0}
	for i, c := range changes {
		before := a.Encode()
		if err := a.Check(c); err != nil {
			t.Fatalf("Check(%q): %v", c, err)
		}
		if !slices.Equal(before, a.Encode()) {
			t.Fatalf("Check(%q) changed the users", c)
		}
		na, errA := a.Apply(c)
		nb, errB := b.Apply(c)
		if errA != nil || errB != nil || na != counts[i] || nb != counts[i] {
			t.Fatalf("Apply(%q) = %d %v, %d %v; want %d", c, na, errA, nb, errB, counts[i])
		}
		if !slices.Equal(a.Encode(), b.Encode()) {
			t.Fatalf("after %q the replicas differ:\n%s\n%s", c, a.Encode(), b.Encode())
		}
	}
	if a.Get("tenant-a") != nil || a.Get("ops") == nil {
		t.Fatalf("users after the load: %v", a.Names())
	}
	for _, tc := range []struct {
		change [][]byte
		want   string
	}{
		{words("setuser", "ops", "+nosuch"), "Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL"},
		{words("setuser", "a b"), ErrUsernameSpaces.Error()},
		{words("deluser", "ops", "default"), ErrDeleteDefault.Error()},
		{words("load", "f.acl", "user ops on +nosuch\n"), "f.acl:1: Error in applying operation '+nosuch': Unknown command or category name in ACL. " +
			"WARNING: ACL errors detected, no change to the previously active ACL rules was performed"},
		{words("flush"), ErrBadChange.Error()},
		{nil, ErrBadChange.Error()},
	} {
		before := a.Encode()
		errC := a.Check(tc.change)
		_, errA := a.Apply(tc.change)
		if errC == nil || errA == nil || errC.Error() != tc.want || errA.Error() != tc.want {
			t.Errorf("%q: Check %v, Apply %v; want %q", tc.change, errC, errA, tc.want)
		}
		if !slices.Equal(before, a.Encode()) {
			t.Errorf("%q changed the users", tc.change)
		}
	}
}
