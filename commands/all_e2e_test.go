package commands

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestCellSecondsRounding(t *testing.T) {
	for _, c := range []struct{ ns, want int64 }{
		{0, 0}, {1, 0}, {999_999, 0}, {1_000_000, 1}, {999_999_999, 1}, {1_000_000_000, 1},
		{2_000_999_999, 2}, {2_001_000_000, 3}, {3_900_000_000, 4},
	} {
		if got := cellSeconds(c.ns); got != c.want {
			t.Fatalf("cellSeconds(%d) = %d; want %d (redis-cell: whole seconds, +1 when the ms part is above 0)", c.ns, got, c.want)
		}
	}
}

func TestE2EAllResp2(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	limits := []any{"TOKEN", "u:1/s", "10/s", 10, "fixed", "u:1/day", 3, "1d", "Log", "api", 5000, "1s"}
	got := fmt.Sprint(do(t, rdb, append([]any{"RL.ALL", 2}, limits...)...))
	if want := "[1 -1 [[1 10 8 0 200] [1 3 1 0 57600000] [1 5000 4998 0 1000]]]"; got != want {
		t.Fatalf("RL.ALL admitted = %s; want %s", got, want) // the 1d window ends at midnight UTC, 16 h after 08:00
	}
	// The daily limit has 1 left: 2 more is denied there, and nothing is
	// taken anywhere; the others report their state as it stands.
	got = fmt.Sprint(do(t, rdb, append([]any{"RL.ALL", 2}, limits...)...))
	if want := "[0 1 [[1 10 8 0 200] [0 3 1 57600000 57600000] [1 5000 4998 0 1000]]]"; got != want {
		t.Fatalf("RL.ALL denied = %s; want %s", got, want)
	}
	// n = 0 peeks at all of them; a negative n refunds all of them.
	got = fmt.Sprint(do(t, rdb, append([]any{"RL.ALL", -2}, limits...)...))
	if want := "[1 -1 [[1 10 10 0 0] [1 3 3 0 0] [1 5000 5000 0 0]]]"; got != want {
		t.Fatalf("RL.ALL refund = %s; want %s", got, want)
	}
	if got := do(t, rdb, "DBSIZE"); got != int64(0) {
		t.Fatalf("DBSIZE after refunding everything = %v", got)
	}
	// The same key twice is charged twice.
	got = fmt.Sprint(do(t, rdb, "RL.ALL", 1, "FIXED", "k", 2, "1m", "FIXED", "k", 2, "1m"))
	if want := "[1 -1 [[1 2 1 0 60000] [1 2 0 0 60000]]]"; got != want {
		t.Fatalf("RL.ALL with k twice = %s; want %s", got, want)
	}
	for _, bad := range []struct {
		args []any
		want string
	}{
		{[]any{"RL.ALL", 1, "TOKEN", "a", "1/s", 1, "FIXED", "k"}, "ERR wrong number of arguments for 'rl.all' command"},
		{[]any{"RL.ALL", 1, "CONCURRENCY", "a", 1, "1s"}, "ERR unknown algorithm 'CONCURRENCY' in RL.ALL: use TOKEN, LEAKY, FIXED, SLIDING or LOG"},
		{[]any{"RL.ALL", "x", "TOKEN", "a", "1/s", 1}, "ERR value is not an integer or out of range"},
		{[]any{"RL.ALL", 1, "TOKEN", "a", "1/s", 1, "LOG", "b", 20000, "1s"}, "ERR limit is above log-max-limit (10000)"},
		{[]any{"RL.ALL", 1, "TOKEN", "a", "1/s", 1, "SLIDING", "k", 2, "1m"}, "WRONGTYPE Operation against a key holding the wrong kind of value"},
	} {
		if e := doErr(t, rdb, bad.args...); e != bad.want {
			t.Fatalf("%v: %q; want %q", bad.args, e, bad.want)
		}
	}
	if got := do(t, rdb, "EXISTS", "a"); got != int64(0) {
		t.Fatal("a refused RL.ALL changed a key")
	}
}

func TestE2EAllResp3IsTheArrayAndNamedOnRequest(t *testing.T) {
	s := startServer(t, testConfig{})
	r3 := s.client(t, proto(3))
	if got := fmt.Sprint(do(t, r3, "RL.ALL", 1, "FIXED", "f", 2, "1m")); got != "[1 -1 [[1 2 1 0 60000]]]" {
		t.Fatalf("RESP3 RL.ALL = %s; want the RESP2 array", got)
	}
	rdb := s.client(t, &redis.Options{Protocol: 3, OnConnect: namedReplies})
	got := do(t, rdb, "RL.ALL", 1, "LEAKY", "q", "1/s", 1, "SLIDING", "s", 1, "1s").(map[any]any)
	results := got["results"].([]any)
	if got["allowed"] != true || got["denied_index"] != int64(-1) || len(results) != 2 ||
		results[0].(map[any]any)["reset_after_ms"] != int64(1000) || results[1].(map[any]any)["allowed"] != true {
		t.Fatalf("RESP3 RL.ALL = %#v", got)
	}
	got = do(t, rdb, "RL.ALL", 1, "LEAKY", "q", "1/s", 1, "SLIDING", "s", 1, "1s").(map[any]any)
	if got["allowed"] != false || got["denied_index"] != int64(0) {
		t.Fatalf("RESP3 RL.ALL denied = %#v", got)
	}
}

// TestE2EAllRacingClients: 16 clients race RL.ALL over two keys, always
// together, in both orders, pipelined. At the frozen instant the limits
// admit exactly 100 groups; both keys must end with the same count.
func TestE2EAllRacingClients(t *testing.T) {
	s := startServer(t, testConfig{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rdb := s.client(t, proto(2))
			pipe := rdb.Pipeline()
			cmds := make([]interface{ Val() any }, 0, 20)
			for i := 0; i < 20; i++ {
				a, b := []any{"FIXED", "a", 100, "1h"}, []any{"TOKEN", "b", "1/h", 100}
				if (w+i)%2 == 0 {
					a, b = b, a
				}
				cmds = append(cmds, pipe.Do(t.Context(), append(append([]any{"RL.ALL", 1}, a...), b...)...))
			}
			if _, err := pipe.Exec(t.Context()); err != nil {
				t.Error(err)
				return
			}
			for _, c := range cmds {
				if c.Val().([]any)[0] == int64(1) {
					mu.Lock()
					admitted++
					mu.Unlock()
				}
			}
		}(w)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("racing RL.ALL clients did not finish")
	}
	rdb := s.client(t, proto(2))
	a := ints(t, do(t, rdb, "RL.FIXED", "a", 100, "1h", 0))
	b := ints(t, do(t, rdb, "RL.TOKEN", "b", "1/h", 100, 0))
	if admitted != 100 || a != "[1 100 0 0 3600000]" || b != "[1 100 0 0 360000000]" {
		t.Fatalf("admitted %d groups; a %s, b %s; want 100 and both used up", admitted, a, b)
	}
}

// TestE2EAllBoundsItsSize: an RL.ALL naming more limits than
// all-max-limits, or whose LOG limits would log more units than
// all-max-log-units (n times their number), is refused with its error and
// changes nothing; at the bounds it is carried out.
func TestE2EAllBoundsItsSize(t *testing.T) {
	s := startServer(t, testConfig{AllMaxLimits: 4, AllMaxLogUnits: 10})
	rdb := s.client(t, proto(2))
	limit := []any{"FIXED", "f", 100, "1m"}
	logs := func(n int) []any {
		var args []any
		for i := 0; i < n; i++ {
			args = append(args, "LOG", fmt.Sprint("g", i), 100, "1m")
		}
		return args
	}
	for _, bad := range []struct {
		args []any
		want string
	}{
		{append(append([]any{"RL.ALL", 1}, limit...), logs(4)...), "ERR too many limits in RL.ALL: at most all-max-limits (4)"},
		{append([]any{"RL.ALL", 4}, logs(3)...), "ERR too many LOG units in RL.ALL: n times the number of LOG limits is at most all-max-log-units (10)"},
		{append(append([]any{"RL.ALL", 11}, limit...), logs(1)...), "ERR too many LOG units in RL.ALL: n times the number of LOG limits is at most all-max-log-units (10)"},
	} {
		if e := doErr(t, rdb, bad.args...); e != bad.want {
			t.Fatalf("%v: %q; want %q", bad.args, e, bad.want)
		}
	}
	if n := do(t, rdb, "DBSIZE"); n != int64(0) {
		t.Fatalf("DBSIZE = %v after refused groups", n)
	}
	for _, ok := range [][]any{
		append(append([]any{"RL.ALL", 1}, limit...), logs(3)...),
		append([]any{"RL.ALL", 5}, logs(2)...),
		append(append([]any{"RL.ALL", 100}, limit...), limit...), // no LOG: any n
		append([]any{"RL.ALL", -50}, logs(4)...),                 // refunds log nothing
	} {
		if v := do(t, rdb, ok...).([]any); len(v) != 3 || len(v[2].([]any)) != (len(ok)-2)/4 {
			t.Fatalf("%v = %v; want a decision per limit", ok, v)
		}
	}
}
