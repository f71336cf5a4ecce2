package acl

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// The aclfile compared with Redis: ACL LOAD of the same files (their
// errors word for word), and ACL SAVE.

func TestLoadFileMatchesRedis(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "users.acl")
	// Every file also has an admin, whom the test connects as: ACL LOAD
	// closes the connections of the users it replaces, and some files take
	// the default user's rights away.
	const admin = "user admin on >adminpw ~* &* +@all\n"
	if err := os.WriteFile(path, []byte("user default on nopass ~* &* +@all\n"+admin), 0o600); err != nil {
		t.Fatal(err)
	}
	first := startRedis(t, "--aclfile", path)
	rt := loadRedisTable(t, first)
	rdb := redis.NewClient(&redis.Options{Addr: first.Options().Addr, Username: "admin", Password: "adminpw", Protocol: 2,
		DisableIndentity: true, MaxRetries: 2})
	defer rdb.Close()
	us := NewUsers(rt.reg)
	ctx := context.Background()
	h := HashPassword("x")
	for _, text := range []string{
		"user alice on >p ~a:* %R~r:* +@read -@dangerous +client|kill\nuser default on nopass ~* &* +@all\n",
		"# a comment\nuser alice on\n",
		"user\n",
		"users alice on\n",
		"user alice on\nuser bob off\nuser alice off\n",
		"user a on bogus +nosuch\n",
		"user\ta on\n",
		"user a  on   +get\n",
		"user a\tb on\n",
		"user a on\r\nuser b on >x\r\n",
		"user a on #" + h + " ~x\n",
		"user default off\n",
		"user default on >secret ~* +@all\nuser ops on >o allkeys allcommands\n",
		"",
		"\n\n   \n",
		"user a on ~* ~b\n",
		"user a on (~x +get)\n",
		"   user a on   \n",
		"user a on\nuser a on\nbad line\nuser b #abc\n",
	} {
		text += "\n" + admin
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		rerr := rdb.Do(ctx, "ACL", "LOAD").Err()
		err := us.LoadFile(path)
		if strings.Contains(text, "(") {
			// Redis has selectors; sluice refuses them, as a file fault.
			if err == nil || !strings.Contains(err.Error(), path+":1: Selectors are not supported. ") {
				t.Fatalf("a selector in the file: %v", err)
			}
			continue
		}
		switch {
		case (rerr == nil) != (err == nil):
			t.Fatalf("ACL LOAD of %q: Redis %v, sluice %v", text, rerr, err)
		case rerr != nil && rerr.Error() != "ERR "+err.Error():
			t.Fatalf("ACL LOAD of %q:\n Redis  %v\n sluice ERR %v", text, rerr, err)
		}
		want, err := rdb.Do(ctx, "ACL", "LIST").StringSlice()
		if err != nil {
			t.Fatal(err)
		}
		got := us.List()
		if len(want) != len(got) {
			t.Fatalf("after loading %q: Redis lists %q, sluice %q", text, want, got)
		}
		for i := range want {
			if !sameRules(want[i], got[i]) {
				t.Fatalf("after loading %q:\n Redis  %s\n sluice %s", text, want[i], got[i])
			}
		}
	}

	// ACL SAVE writes what ACL LIST shows.
	if err := rdb.Do(ctx, "ACL", "SETUSER", "carol", "on", ">c", "%W~w:*", "+@write", "-del").Err(); err != nil {
		t.Fatal(err)
	}
	if err := us.SetUser("carol", "on", ">c", "%W~w:*", "+@write", "-del"); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Do(ctx, "ACL", "SAVE").Err(); err != nil {
		t.Fatal(err)
	}
	redisFile, _ := os.ReadFile(path)
	ours := filepath.Join(dir, "ours.acl")
	if err := us.SaveFile(ours); err != nil {
		t.Fatal(err)
	}
	ourFile, _ := os.ReadFile(ours)
	wl, gl := strings.Split(string(redisFile), "\n"), strings.Split(string(ourFile), "\n")
	if len(wl) != len(gl) {
		t.Fatalf("ACL SAVE:\n Redis\n%s\n sluice\n%s", redisFile, ourFile)
	}
	for i := range wl {
		if !sameRules(wl[i], gl[i]) {
			t.Fatalf("ACL SAVE line %d:\n Redis  %s\n sluice %s", i+1, wl[i], gl[i])
		}
	}

	// A file that is gone.
	os.Remove(path)
	rerr := rdb.Do(ctx, "ACL", "LOAD").Err()
	err := us.LoadFile(path)
	if rerr == nil || err == nil || rerr.Error() != "ERR "+err.Error() {
		t.Fatalf("ACL LOAD of a missing file: Redis %v, sluice %v", rerr, err)
	}
}
