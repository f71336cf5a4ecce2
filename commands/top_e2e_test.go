package commands

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RL.TOP over real sockets: who was denied, and decided, most often, with
// the windows driven by the debug clock.

// topText renders RL.TOP's reply as "key count err policy subject" lines.
func topText(t *testing.T, v any) string {
	t.Helper()
	rows, ok := v.([]any)
	if !ok {
		t.Fatalf("RL.TOP replied %#v; want an array", v)
	}
	var lines []string
	for _, r := range rows {
		f := r.([]any)
		if len(f) != 5 {
			t.Fatalf("entry %v: want 5 fields", f)
		}
		s := fmt.Sprintf("%v %v %v", f[0], f[1], f[2])
		for _, x := range f[3:] {
			if x == nil {
				s += " -"
			} else {
				s += fmt.Sprintf(" %v", x)
			}
		}
		lines = append(lines, s)
	}
	return strings.Join(lines, "\n")
}

func TestTopListsTheKeysDeniedAndDecidedMostOften(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		for _, p := range []int{2, 3} {
			t.Run(fmt.Sprintf("resp%d", p), func(t *testing.T) {
				srv := startServer(t, testConfig{EventLoops: loops})
				rdb := srv.client(t, proto(p))
				ctx := context.Background()
				pipe := rdb.Pipeline()
				for i := 0; i < 10; i++ {
					pipe.Do(ctx, "RL.TOKEN", "user:a", "1/m", 2) // 2 admitted, 8 denied
				}
				for i := 0; i < 5; i++ {
					pipe.Do(ctx, "RL.FIXED", "user:b", 10, "1m") // 5 admitted
				}
				pipe.Do(ctx, "RL.TOKEN", "user:c", "1/m", 2, 0) // a peek: not counted
				if _, err := pipe.Exec(ctx); err != nil {
					t.Fatal(err)
				}
				if got, want := topText(t, do(t, rdb, "RL.TOP")), "user:a 8 0 - -"; got != want {
					t.Errorf("RL.TOP:\n%s\nwant\n%s", got, want)
				}
				want := "user:a 10 0 - -\nuser:b 5 0 - -"
				if got := topText(t, do(t, rdb, "RL.TOP", "DECISIONS", "WINDOW", "5m")); got != want {
					t.Errorf("RL.TOP DECISIONS WINDOW 5m:\n%s\nwant\n%s", got, want)
				}
				if got := topText(t, do(t, rdb, "rl.top", "count", "1", "decisions")); got != "user:a 10 0 - -" {
					t.Errorf("RL.TOP COUNT 1 DECISIONS:\n%s", got)
				}
			})
		}
	})
}

func TestTopNamesThePolicyAndSubjectOfPolicyDecisions(t *testing.T) {
	srv := startServer(t, testConfig{})
	rdb := srv.client(t, proto(3))
	do(t, rdb, "RL.POLICY", "SET", "api:free", "TOKEN", "1/m", 1)
	do(t, rdb, "RL.POLICY", "SET", "dry", "TOKEN", "1/m", 1, "SHADOW")
	for i := 0; i < 3; i++ {
		do(t, rdb, "RL.CHECK", "api:free", "alice")
		do(t, rdb, "RL.CHECK", "dry", "bob")
	}
	// a shadow policy's would-be denials count as denials
	want := "pol:api%3Afree:token:alice 2 0 api:free alice\npol:dry:token:bob 2 0 dry bob"
	if got := topText(t, do(t, rdb, "RL.TOP", "DENIED")); got != want {
		t.Errorf("RL.TOP DENIED:\n%s\nwant\n%s", got, want)
	}
}

func TestTopWindowsCoverTheirPeriodAndTheOneBefore(t *testing.T) {
	srv := startServer(t, testConfig{})
	rdb := srv.client(t, proto(2))
	deny := func(key string, n int) {
		for i := 0; i < n; i++ {
			do(t, rdb, "RL.FIXED", key, 0+1, "1h")
		}
	}
	srv.at(0)          // on a whole hour
	deny("k:first", 4) // 3 denied in minute 0
	srv.at(90 * time.Second)
	deny("k:second", 3) // 2 denied in minute 1
	check := func(when, window, want string) {
		t.Helper()
		if got := topText(t, do(t, rdb, "RL.TOP", "WINDOW", window)); got != want {
			t.Errorf("%s, RL.TOP WINDOW %s:\n%s\nwant\n%s", when, window, got, want)
		}
	}
	check("t0+90s", "1m", "k:first 3 0 - -\nk:second 2 0 - -")
	srv.at(150 * time.Second) // minute 2: minute 0 has left the 1m window
	check("t0+150s", "1m", "k:second 2 0 - -")
	check("t0+150s", "5m", "k:first 3 0 - -\nk:second 2 0 - -")
	srv.at(10*time.Minute + time.Second) // the third five minutes: the first has left
	check("t0+10m1s", "5m", "")
	check("t0+10m1s", "1h", "k:first 3 0 - -\nk:second 2 0 - -")
	srv.at(2*time.Hour + time.Second)
	check("t0+2h", "1h", "")
	// and counting resumes after the gap
	deny("k:third", 2)
	check("t0+2h", "1h", "k:third 1 0 - -")
}

func TestTopCountsTransactionsDecisions(t *testing.T) {
	srv := startServer(t, testConfig{})
	rdb := srv.client(t, proto(2))
	ctx := context.Background()
	if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i := 0; i < 3; i++ {
			p.Do(ctx, "RL.TOKEN", "tx:key", "1/m", 1)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := topText(t, do(t, rdb, "RL.TOP")); got != "tx:key 2 0 - -" {
		t.Errorf("RL.TOP after MULTI/EXEC: %q; want \"tx:key 2 0 - -\"", got)
	}
}

func TestTopRefusesBadArguments(t *testing.T) {
	srv := startServer(t, testConfig{})
	rdb := srv.client(t, proto(2))
	for _, c := range []struct {
		args []any
		want string
	}{
		{[]any{"RL.TOP", "COUNT", 0}, "ERR value is out of range, must be positive"},
		{[]any{"RL.TOP", "COUNT", "ten"}, "ERR value is not an integer or out of range"},
		{[]any{"RL.TOP", "COUNT"}, "ERR syntax error"},
		{[]any{"RL.TOP", "WINDOW", "2m"}, "ERR WINDOW must be 1m, 5m or 1h"},
		{[]any{"RL.TOP", "EVERYTHING"}, "ERR syntax error"},
		{[]any{"RL.TOP", "DENIED", "COUNT", 1, "WINDOW", "1m", "X"}, "ERR wrong number of arguments for 'rl.top' command"},
	} {
		if got := doErr(t, rdb, c.args...); got != c.want {
			t.Errorf("%v: %q; want %q", c.args, got, c.want)
		}
	}
	if got := do(t, rdb, "PING"); got != "PONG" {
		t.Errorf("PING after the errors = %v", got)
	}
}

func TestTopIsRefusedWhenOff(t *testing.T) {
	srv := startServer(t, testConfig{NoTopKeys: true})
	rdb := srv.client(t, proto(2))
	do(t, rdb, "RL.TOKEN", "k", "1/s", 1)
	if got, want := doErr(t, rdb, "RL.TOP"), "ERR top keys are not kept on this server (start it with --top-keys 64)"; got != want {
		t.Errorf("RL.TOP = %q; want %q", got, want)
	}
}

func TestTopThroughRedisCLI(t *testing.T) {
	srv := startServer(t, testConfig{})
	rdb := srv.client(t, proto(2))
	for i := 0; i < 3; i++ {
		do(t, rdb, "RL.TOKEN", "user:42", "1/m", 1)
	}
	got := srv.cli(t, "", "--no-raw", "RL.TOP")
	want := "1) 1) \"user:42\"\n   2) (integer) 2\n   3) (integer) 0\n   4) (nil)\n   5) (nil)\n"
	if got != want {
		t.Errorf("redis-cli RL.TOP:\n%s\nwant\n%s", got, want)
	}
}

// TestTopShowsAUserOnlyTheKeysItMayRead: RL.TOP lists the keys of every
// tenant; a user sees only the entries whose key it could read (a
// policy's entry by its pol:<policy>:<algo>:<subject> key, as RL.INFO
// POLICY reads it), COUNT counting the entries it sees. The user is
// docs/security.md's tenant example.
func TestTopShowsAUserOnlyTheKeysItMayRead(t *testing.T) {
	srv := startServer(t, testConfig{})
	admin := srv.client(t, proto(2))
	do(t, admin, "RL.POLICY", "SET", "free", "TOKEN", "1/m", 1)
	long := "tenant-a:" + strings.Repeat("x", 60) // kept by its first 48 bytes
	for key, n := range map[string]int{"tenant-b:k": 5, "tenant-a:k": 3, long: 2} {
		for i := 0; i < n; i++ {
			do(t, admin, "RL.TOKEN", key, "1/m", 1)
		}
	}
	for i := 0; i < 4; i++ {
		do(t, admin, "RL.CHECK", "free", "tenant-b:1")
		do(t, admin, "RL.CHECK", "free", "tenant-a:1")
	}
	do(t, admin, "ACL", "SETUSER", "tenant-a", "on", ">pa", "~tenant-a:*", "resetchannels", "-@all", "+@limiter", "+@read")
	do(t, admin, "ACL", "SETUSER", "pol-a", "on", ">pa", "~pol:*:tenant-a:*", "resetchannels", "-@all", "+@read")
	a := asUser(t, srv, "tenant-a", "pa")
	p := asUser(t, srv, "pol-a", "pa")

	all := topText(t, do(t, admin, "RL.TOP", "DENIED"))
	for _, key := range []string{"tenant-b:k", "tenant-a:k", "pol:free:token:tenant-b:1", "pol:free:token:tenant-a:1", long[:48] + "..."} {
		if !strings.Contains(all, key+" ") {
			t.Fatalf("the default user's RL.TOP DENIED lacks %s:\n%s", key, all)
		}
	}
	want := "tenant-a:k 2 0 - -\n" + long[:48] + "... 1 0 - -"
	if got := topText(t, do(t, a, "RL.TOP", "DENIED")); got != want {
		t.Errorf("tenant-a's RL.TOP DENIED:\n%s\nwant\n%s", got, want)
	}
	if got := topText(t, do(t, a, "RL.TOP", "DENIED", "COUNT", 1)); got != "tenant-a:k 2 0 - -" {
		t.Errorf("tenant-a's RL.TOP DENIED COUNT 1:\n%s", got)
	}
	if got := topText(t, do(t, p, "RL.TOP", "DECISIONS")); got != "pol:free:token:tenant-a:1 4 0 free tenant-a:1" {
		t.Errorf("pol-a's RL.TOP DECISIONS:\n%s", got)
	}
}
