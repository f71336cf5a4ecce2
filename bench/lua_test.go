package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/resp"
)

// The Lua limiters, run by a real redis-server, as scripts of instants: the
// caller passes now, so the test drives time.

func startRedis(t *testing.T) *server {
	t.Helper()
	srv, err := redisTarget(t).open(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.stop)
	return srv
}

func evalsha(t *testing.T, srv *server, args ...string) string {
	t.Helper()
	v, err := srv.call(2*time.Second, append([]string{"EVALSHA"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return v.String()
}

func TestLuaTokenBucket(t *testing.T) {
	srv := startRedis(t)
	sha, err := loadScript(srv, tokenBucketLua)
	if err != nil {
		t.Fatal(err)
	}
	take := func(now int64, n int) string {
		// rate 1/s, capacity 2
		return evalsha(t, srv, sha, "2", "b.tokens", "b.ts", "1", "2", fmt.Sprint(now), fmt.Sprint(n))
	}
	t0 := int64(1_700_000_000)
	steps := []struct {
		at   int64
		n    int
		want string
	}{
		{t0, 1, "*2[:1 :1]"},      // a new bucket starts full: 2 - 1
		{t0, 1, "*2[:1 :0]"},      // the last token
		{t0, 1, "*2[:0 :0]"},      // empty: denied
		{t0 + 1, 1, "*2[:1 :0]"},  // one second refills one token
		{t0 + 1, 3, "*2[:0 :0]"},  // more than the capacity: denied
		{t0 + 10, 2, "*2[:1 :0]"}, // refill stops at the capacity
		{t0 + 9, 1, "*2[:0 :0]"},  // time going back refills nothing
	}
	for i, s := range steps {
		if got := take(s.at, s.n); got != s.want {
			t.Fatalf("step %d: take(t0+%d, n=%d) = %s; want %s", i, s.at-t0, s.n, got, s.want)
		}
	}
	// Both keys live for twice the fill time: floor(2/1*2) = 4 s.
	for _, key := range []string{"b.tokens", "b.ts"} {
		v, err := srv.call(time.Second, "TTL", key)
		if err != nil || !v.IsInt() || v.Num < 3 || v.Num > 4 {
			t.Fatalf("TTL %s = %v, %v; want 4 s (twice the time to fill)", key, describeOrNil(v), err)
		}
	}
	// A fractional refill: rate 0.5/s for 3 s gives 1.5 tokens; the reply truncates.
	if got := evalsha(t, srv, sha, "2", "c.tokens", "c.ts", "0.5", "2", fmt.Sprint(t0), "2"); got != "*2[:1 :0]" {
		t.Fatalf("drain at rate 0.5 = %s", got)
	}
	if got := evalsha(t, srv, sha, "2", "c.tokens", "c.ts", "0.5", "2", fmt.Sprint(t0+3), "1"); got != "*2[:1 :0]" {
		t.Fatalf("take 1 of 1.5 tokens = %s; want admitted with 0.5 left, shown as 0", got)
	}
}

func TestLuaFixedWindow(t *testing.T) {
	srv := startRedis(t)
	sha, err := loadScript(srv, fixedWindowLua)
	if err != nil {
		t.Fatal(err)
	}
	hit := func(n int) string { return evalsha(t, srv, sha, "1", "w", "2", "10", fmt.Sprint(n)) } // limit 2 per 10 s
	for i, want := range []string{"*2[:1 :1]", "*2[:1 :2]", "*2[:0 :3]", "*2[:0 :5]"} {
		n := 1
		if i == 3 {
			n = 2
		}
		if got := hit(n); got != want {
			t.Fatalf("hit %d (n=%d) = %s; want %s", i+1, n, got, want)
		}
	}
	v, err := srv.call(time.Second, "TTL", "w")
	if err != nil || !v.IsInt() || v.Num < 9 || v.Num > 10 {
		t.Fatalf("TTL = %v, %v; want the window's 10 s, set by the first hit only", describeOrNil(v), err)
	}
}

func describeOrNil(v *resp.Value) string {
	if v == nil {
		return "no reply"
	}
	return v.String()
}
