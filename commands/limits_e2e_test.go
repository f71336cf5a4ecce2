package commands

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// End-to-end tests of the decision commands through go-redis over a real
// socket, with the debug clock frozen and moved by the tests.

func TestE2EToken(t *testing.T) {
	s := startServer(t, testConfig{})
	s.play(t, []call{
		{ms(0), []any{"RL.TOKEN", "user:42", "10/s", 20}, "[1 20 19 0 100]"}, // the README's first call
		{ms(0), []any{"RL.TOKEN", "user:42", "10/s", 20, 19}, "[1 20 0 0 2000]"},
		{ms(0), []any{"RL.TOKEN", "user:42", "10/s", 20}, "[0 20 0 100 2000]"},
		{ms(99), []any{"RL.TOKEN", "user:42", "10/s", 20, 0}, "[1 20 0 0 1901]"},
		{ms(100), []any{"RL.TOKEN", "user:42", "10/s", 20}, "[1 20 0 0 2000]"},
		{ms(100), []any{"RL.TOKEN", "user:42", "10/s", 20, 21}, "[0 20 0 -1 2000]"},
		{ms(100), []any{"RL.TOKEN", "user:42", "10/s", 20, -5}, "[1 20 5 0 1500]"},
	})
}

func TestE2ELeaky(t *testing.T) {
	s := startServer(t, testConfig{})
	s.play(t, []call{
		// 1/s, capacity 3, four calls at one instant (docs/commands.md's RL.LEAKY example).
		{ms(0), []any{"RL.LEAKY", "q", "1/s", 3}, "[1 3 2 0 1000]"},
		{ms(0), []any{"RL.LEAKY", "q", "1/s", 3}, "[1 3 1 1000 2000]"},
		{ms(0), []any{"RL.LEAKY", "q", "1/s", 3}, "[1 3 0 2000 3000]"},
		{ms(0), []any{"RL.LEAKY", "q", "1/s", 3}, "[0 3 0 1000 3000]"},
		{ms(999), []any{"RL.LEAKY", "q", "1/s", 3, 0}, "[1 3 0 2001 2001]"}, // peek: 2.001s of queue
		{ms(1000), []any{"RL.LEAKY", "q", "1/s", 3}, "[1 3 0 2000 3000]"},
		{ms(1000), []any{"RL.LEAKY", "q", "1/s", 3, -2}, "[1 3 2 0 1000]"}, // refund
		// 3/s: 333,333,334 ns apart; every ms field rounds up.
		{ms(0), []any{"RL.LEAKY", "r", "3/s", 2, 2}, "[1 2 0 0 667]"},
		{ms(0), []any{"RL.LEAKY", "r", "3/s", 2}, "[0 2 0 334 667]"},
	})
}

func TestE2EFixed(t *testing.T) {
	s := startServer(t, testConfig{})
	s.play(t, []call{
		{ms(0), []any{"RL.FIXED", "f", 2, "1m"}, "[1 2 1 0 60000]"},
		{ms(59_999), []any{"RL.FIXED", "f", 2, "1m", 1}, "[1 2 0 0 1]"},
		{ms(59_999), []any{"RL.FIXED", "f", 2, "1m"}, "[0 2 0 1 1]"},
		{ms(60_000), []any{"RL.FIXED", "f", 2, "1m", 2}, "[1 2 0 0 60000]"}, // on the minute: a new window
		{ms(60_000), []any{"RL.FIXED", "f", 2, "1m", 3}, "[0 2 0 -1 60000]"},
		{ms(60_000), []any{"RL.FIXED", "f", 2, "1m", -1}, "[1 2 1 0 60000]"},
		{ms(60_000), []any{"RL.FIXED", "g", 5, "1500ms", 0}, "[1 5 5 0 0]"},
	})
}

func TestE2ESliding(t *testing.T) {
	s := startServer(t, testConfig{})
	s.play(t, []call{
		{ms(0), []any{"RL.SLIDING", "s", 10, "1m", 10}, "[1 10 0 0 120000]"},
		{ms(60_000), []any{"RL.SLIDING", "s", 10, "1m"}, "[0 10 0 1 60000]"}, // 1ns away, rounded up to 1ms
		{ms(90_000), []any{"RL.SLIDING", "s", 10, "1m", 0}, "[1 10 5 0 30000]"},
		{ms(90_000), []any{"RL.SLIDING", "s", 10, "1m", 6}, "[0 10 5 1 30000]"}, // fits 1ns later: floor(10·(30s−1ns)/60s) = 4
		{ms(90_000), []any{"RL.SLIDING", "s", 10, "1m", 5}, "[1 10 0 0 90000]"},
	})
}

func TestE2ELog(t *testing.T) {
	s := startServer(t, testConfig{})
	s.play(t, []call{
		{ms(0), []any{"RL.LOG", "l", 3, "10s"}, "[1 3 2 0 10000]"},
		{ms(2000), []any{"RL.LOG", "l", 3, "10s", 2}, "[1 3 0 0 10000]"},
		{ms(5000), []any{"RL.LOG", "l", 3, "10s"}, "[0 3 0 5000 7000]"},
		{ms(10_000), []any{"RL.LOG", "l", 3, "10s"}, "[1 3 0 0 10000]"}, // the first entry left exactly now
		{ms(10_000), []any{"RL.LOG", "l", 3, "10s", -1}, "[1 3 1 0 2000]"},
	})
	rdb := s.client(t, proto(2))
	if e := doErr(t, rdb, "RL.LOG", "l", 10001, "1s"); e != "ERR limit is above log-max-limit (10000)" {
		t.Fatalf("limit 10001: %q", e)
	}
	small := startServer(t, testConfig{LogMaxLimit: 5})
	if e := doErr(t, small.client(t, proto(2)), "RL.LOG", "l", 6, "1s"); e != "ERR limit is above log-max-limit (5)" {
		t.Fatalf("limit 6 under log-max-limit 5: %q", e)
	}
}

func TestE2EThrottle(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(3)) // redis-cell answers an array in RESP3 too
	if got := ints(t, do(t, rdb, "CL.THROTTLE", "user123", 15, 30, 60)); got != "[0 16 15 -1 2]" {
		t.Fatalf("README example = %s; want [0 16 15 -1 2]", got)
	}
	// redis-cell's unit test sequence, rounded to seconds as redis-cell
	// replies: 3.9s → 4, 1s → 1.
	s.play(t, []call{
		{ms(0), []any{"CL.THROTTLE", "k", 4, 1, 1, 6}, "[1 5 5 -1 0]"},
		{ms(0), []any{"CL.THROTTLE", "k", 4, 1, 1}, "[0 5 4 -1 1]"},
		{ms(0), []any{"CL.THROTTLE", "k", 4, 1, 1}, "[0 5 3 -1 2]"},
		{ms(0), []any{"CL.THROTTLE", "k", 4, 1, 1}, "[0 5 2 -1 3]"},
		{ms(0), []any{"CL.THROTTLE", "k", 4, 1, 1}, "[0 5 1 -1 4]"},
		{ms(0), []any{"CL.THROTTLE", "k", 4, 1, 1}, "[0 5 0 -1 5]"},
		{ms(0), []any{"CL.THROTTLE", "k", 4, 1, 1}, "[1 5 0 1 5]"},
		{ms(3000), []any{"CL.THROTTLE", "k", 4, 1, 1}, "[0 5 2 -1 3]"},
		{ms(3100), []any{"CL.THROTTLE", "k", 4, 1, 1}, "[0 5 1 -1 4]"},
		{ms(4000), []any{"CL.THROTTLE", "k", 4, 1, 1}, "[0 5 1 -1 4]"},
		{ms(8000), []any{"CL.THROTTLE", "k", 4, 1, 1}, "[0 5 4 -1 1]"},
		{ms(9500), []any{"CL.THROTTLE", "k", 4, 1, 1}, "[0 5 4 -1 1]"},
		{ms(9500), []any{"CL.THROTTLE", "k", 4, 1, 1, 0}, "[0 5 4 -1 1]"},
		{ms(9500), []any{"CL.THROTTLE", "k", 4, 1, 1, 2}, "[0 5 2 -1 3]"},
		{ms(9500), []any{"CL.THROTTLE", "k", 4, 1, 1, 5}, "[1 5 2 3 3]"},
		// 7 per 2s is 285,714,285ns apart: reset 0.285714285s rounds to 1s.
		{ms(20_000), []any{"CL.THROTTLE", "m", 0, 7, 2}, "[0 1 0 -1 1]"},
	})
	for _, bad := range []struct {
		args []any
		want string
	}{
		{[]any{"CL.THROTTLE", "k", -1, 1, 1}, "ERR max_burst must not be negative"},
		{[]any{"CL.THROTTLE", "k", 1, 0, 1}, "ERR count must be positive"},
		{[]any{"CL.THROTTLE", "k", 1, 1, 0}, "ERR period must be positive"},
		{[]any{"CL.THROTTLE", "k", 1, 1, 1, -1}, "ERR quantity must not be negative"},
		{[]any{"CL.THROTTLE", "k", 1, 1, "9223372037"}, "ERR period is out of range"},
		{[]any{"CL.THROTTLE", "k", 1, "2000000000", 1}, "ERR rate is too high: at most 1 per nanosecond (1000000000/s)"},
		{[]any{"CL.THROTTLE", "k", "9223372036854775807", 1, 1}, "ERR max_burst is out of range"},
		{[]any{"CL.THROTTLE", "k", "1.5", 1, 1}, "ERR value is not an integer or out of range"},
	} {
		if got := doErr(t, rdb, bad.args...); got != bad.want {
			t.Fatalf("%v: %q; want %q", bad.args, got, bad.want)
		}
	}
}

func TestE2ELeases(t *testing.T) {
	s := startServer(t, testConfig{})
	s.play(t, []call{
		{ms(0), []any{"RL.ACQUIRE", "jobs", 2, "30s", "req-1"}, "[1 2 1 0 30000]"},
		{ms(1000), []any{"RL.ACQUIRE", "jobs", 2, "30s", "req-2"}, "[1 2 0 0 30000]"},
		{ms(2000), []any{"RL.ACQUIRE", "jobs", 2, "30s", "req-3"}, "[0 2 0 28000 29000]"},
		{ms(2000), []any{"RL.ACQUIRE", "jobs", 2, "30s", "req-1"}, "[1 2 0 0 30000]"},   // a retry renews
		{ms(31_000), []any{"RL.ACQUIRE", "jobs", 2, "30s", "req-3"}, "[1 2 0 0 30000]"}, // req-2 died
	})
	rdb := s.client(t, proto(2))
	for _, c := range []struct {
		id   string
		want int64
	}{{"req-3", 1}, {"req-3", 0}, {"never", 0}} {
		if got := do(t, rdb, "RL.RELEASE", "jobs", c.id); got != c.want {
			t.Fatalf("RL.RELEASE jobs %s = %v; want %d", c.id, got, c.want)
		}
	}
	if got := do(t, rdb, "RL.RELEASE", "jobs", "req-1"); got != int64(1) {
		t.Fatalf("last release = %v", got)
	}
	if got := do(t, rdb, "EXISTS", "jobs"); got != int64(0) {
		t.Fatalf("EXISTS after the last release = %v; want 0", got)
	}
	if e := doErr(t, rdb, "RL.ACQUIRE", "jobs", 10001, "1s", "x"); e != "ERR limit is above log-max-limit (10000)" {
		t.Fatalf("limit 10001: %q", e)
	}
	if e := doErr(t, rdb, "RL.ACQUIRE", "jobs", 1, "30", "x"); e != "ERR lease needs a unit, like 60s or 1500ms" {
		t.Fatalf("lease without a unit: %q", e)
	}
}

func TestE2EPeeksCreateNothingAndTypesAreNamed(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	cmds := []struct {
		typ  string
		args []any
	}{
		{"rl-token", []any{"RL.TOKEN", "k:token", "10/s", 5}},
		{"rl-leaky", []any{"RL.LEAKY", "k:leaky", "10/s", 5}},
		{"rl-fixed", []any{"RL.FIXED", "k:fixed", 5, "1m"}},
		{"rl-sliding", []any{"RL.SLIDING", "k:sliding", 5, "1m"}},
		{"rl-log", []any{"RL.LOG", "k:log", 5, "1m"}},
		{"cl-throttle", []any{"CL.THROTTLE", "k:throttle", 4, 10, 1}},
	}
	for _, c := range cmds {
		do(t, rdb, append(c.args, 0)...)
		if c.typ != "cl-throttle" { // CL.THROTTLE refuses negative quantities
			do(t, rdb, append(c.args, -1)...)
		}
	}
	if got := do(t, rdb, "DBSIZE"); got != int64(0) {
		t.Fatalf("DBSIZE after peeks and refunds on absent keys = %v; want 0", got)
	}
	for _, c := range cmds {
		reply := do(t, rdb, append(c.args, 1)...).([]any)
		if got := do(t, rdb, "TYPE", c.args[1]); got != c.typ {
			t.Fatalf("TYPE %v = %v; want %s", c.args[1], got, c.typ)
		}
		// PTTL is reset_after: the state expires when it is back to initial.
		reset, pttl := reply[4].(int64), do(t, rdb, "PTTL", c.args[1]).(int64)
		if c.typ == "cl-throttle" { // seconds
			pttl = cellSeconds(pttl * 1e6)
		}
		if got := pttl; got != reset {
			t.Fatalf("PTTL %v = %v; want reset_after %d ms", c.args[1], got, reset)
		}
	}
	do(t, rdb, "RL.ACQUIRE", "k:lease", 2, "1m", "a")
	if got := do(t, rdb, "TYPE", "k:lease"); got != "rl-concurrency" {
		t.Fatalf("TYPE k:lease = %v", got)
	}
	// Every key is the wrong type for every other command.
	for _, c := range cmds {
		for _, other := range cmds {
			if other.typ == c.typ {
				continue
			}
			args := append([]any{other.args[0], c.args[1]}, other.args[2:]...)
			if e := doErr(t, rdb, args...); e != "WRONGTYPE Operation against a key holding the wrong kind of value" {
				t.Fatalf("%v on a %s key: %q", other.args[0], c.typ, e)
			}
		}
		if e := doErr(t, rdb, "RL.ACQUIRE", c.args[1], 1, "1s", "x"); !strings.HasPrefix(e, "WRONGTYPE") {
			t.Fatalf("RL.ACQUIRE on a %s key: %q", c.typ, e)
		}
	}
	if e := doErr(t, rdb, "RL.RELEASE", "k:token", "a"); !strings.HasPrefix(e, "WRONGTYPE") {
		t.Fatalf("RL.RELEASE on a token key: %q", e)
	}
}

func TestE2EInfoAndReset(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	do(t, rdb, "RL.FIXED", "f", 5, "1m", 2)
	got := fmt.Sprint(do(t, rdb, "RL.INFO", "f"))
	want := fmt.Sprintf("[algorithm rl-fixed expire_at_ns %d ttl_ms 60000 window_start_ns %d count 2]",
		(epochMs+60_000)*1_000_000, epochMs*1_000_000)
	if got != want {
		t.Fatalf("RL.INFO f = %s; want %s", got, want)
	}
	do(t, rdb, "RL.LOG", "l", 5, "1s", 2)
	s.at(ms(250))
	do(t, rdb, "RL.LOG", "l", 5, "1s", 1)
	r3 := s.client(t, proto(3))
	info := do(t, r3, "RL.INFO", "l").(map[any]any)
	if info["algorithm"] != "rl-log" || info["count"] != int64(3) || info["ttl_ms"] != int64(1000) ||
		fmt.Sprint(info["entries_ns"]) != fmt.Sprintf("[%d %d %d]", epochMs*1_000_000, epochMs*1_000_000, (epochMs+250)*1_000_000) {
		t.Fatalf("RL.INFO l (RESP3) = %v", info)
	}
	do(t, rdb, "RL.ACQUIRE", "c", 3, "10s", "job")
	leases := do(t, r3, "RL.INFO", "c").(map[any]any)["leases"].([]any)
	if len(leases) != 1 || leases[0].([]any)[1] != int64((epochMs+10_250)*1_000_000) {
		t.Fatalf("RL.INFO c leases = %v; want one lease ending at +10.25s", leases)
	}
	if v, err := rdb.Do(t.Context(), "RL.INFO", "nope").Result(); err == nil || v != nil {
		t.Fatalf("RL.INFO on an absent key = %v, %v; want nil", v, err)
	}
	if got := do(t, rdb, "RL.RESET", "f", "l", "nope", "f"); got != int64(2) {
		t.Fatalf("RL.RESET f l nope f = %v; want 2", got)
	}
	if got := ints(t, do(t, rdb, "RL.FIXED", "f", 5, "1m", 0)); got != "[1 5 5 0 0]" {
		t.Fatalf("after RL.RESET: %s; want a fresh limit", got)
	}
}

func TestE2EResp3DecisionIsTheArrayAndNamedOnRequest(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(3))
	if got := ints(t, do(t, rdb, "RL.SLIDING", "s", 3, "1s")); got != "[1 3 2 0 2000]" {
		t.Fatalf("RESP3 RL.SLIDING = %s; want the five integers", got)
	}
	named := s.client(t, &redis.Options{Protocol: 3, OnConnect: namedReplies})
	got := do(t, named, "RL.SLIDING", "s", 3, "1s")
	m, ok := got.(map[any]any)
	if !ok || m["allowed"] != true || m["limit"] != int64(3) || m["remaining"] != int64(1) ||
		m["retry_after_ms"] != int64(0) || m["reset_after_ms"] != int64(2000) {
		t.Fatalf("RESP3 RL.SLIDING = %#v", got)
	}
}

// TestE2EExtremeArguments sends every decision command the largest
// parameters the parsers accept, with the largest costs and refunds, at the
// start of the clock and at the latest instant DEBUG CLOCK allows: every
// reply must be well formed, with no negative field but a -1 retry.
func TestE2EExtremeArguments(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	const max, min = "9223372036854775807", "-9223372036854775808"
	const maxRefill = "4611686018427387904" // 2^62 ns: the longest a bucket may take to fill
	cmds := [][]any{
		{"RL.TOKEN", "t", "1000000000/s", maxRefill},
		{"RL.TOKEN", "t2", "1/53375d", 1},
		{"RL.LEAKY", "l", "1/53375d", 1},
		{"RL.LEAKY", "l2", "1000000000/s", maxRefill},
		{"RL.FIXED", "f", max, "106751d"},
		{"RL.SLIDING", "s", max, "106751d"},
		{"RL.SLIDING", "s2", max, "1ms"},
		{"RL.LOG", "g", 10000, "106751d"},
		{"CL.THROTTLE", "c", "4611686017", 1, 1},
		{"CL.THROTTLE", "c2", 0, 1, 4611686018},
	}
	check := func(args []any, reply any) {
		vals := reply.([]any)
		for i, v := range vals {
			if n := v.(int64); n < 0 && !(i == 3 && n == -1) {
				t.Fatalf("%v = %v: field %d is negative", args, vals, i)
			}
		}
	}
	for _, clock := range []string{"0", "4611686018427"} {
		do(t, rdb, "DEBUG", "CLOCK", "SET", clock)
		do(t, rdb, "FLUSHALL")
		for _, c := range cmds {
			for _, n := range []any{1, 10000, max, 0, -1, min} {
				if c[0] == "CL.THROTTLE" && (n == -1 || n == min) {
					continue
				}
				check(c, do(t, rdb, append(c, n)...))
			}
		}
		check([]any{"RL.ACQUIRE"}, do(t, rdb, "RL.ACQUIRE", "a", 10000, "106751d", "id"))
		v := do(t, rdb, "RL.ALL", max, "FIXED", "f2", max, "106751d", "SLIDING", "s3", max, "106751d", "TOKEN", "t3", "1/53375d", 1)
		for _, r := range v.([]any)[2].([]any) {
			check([]any{"RL.ALL"}, r)
		}
	}
	if got := do(t, rdb, "PING"); got != "PONG" {
		t.Fatalf("PING after extreme arguments = %v", got)
	}
}
