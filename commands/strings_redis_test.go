package commands

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-rl/sluice/compat"
)

// TestStringCommandsAndScriptsAgreeWithRedis plays 3,000 random steps of the
// string commands (SETEX, PSETEX, SETNX, GETDEL and MGET among them), the key-space commands and three libraries' scripts on a
// few keys, through go-redis, on sluice (running clock) and on Redis 7, and
// requires the same replies: types, values and error texts, with times left
// (PTTL, TTL, a script's TTL) equal within 50 ms (1 s for TTL), the two
// servers' clocks being read a moment apart. About one step in five is a
// transaction instead (go-redis's TxPipelined: MULTI, two to five random
// commands, EXEC), whose replies are compared command by command. The
// libraries' windows are long, so no key expires during the run unless a
// step says so (EXPIRE 0, PXAT in the past).
func TestStringCommandsAndScriptsAgreeWithRedis(t *testing.T) {
	redisDB := startRedis(t)
	s := startServer(t, testConfig{RealClock: true})
	sluiceDB := s.client(t, proto(2))
	ctx := context.Background()
	if err := redisDB.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for _, sha := range []string{compat.UluleIncrSHA1, compat.UlulePeekSHA1, compat.RateLimitRedisIncrementSHA1,
		compat.RateLimitRedisGetSHA1, compat.FlexibleSHA1} {
		if err := redisDB.ScriptLoad(ctx, compat.Known.Lookup([]byte(sha)).Text).Err(); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(16, 7))
	keys := []string{"a", "b", "c", "lim"}
	odd := []string{"1", "0", "-1", "5", "x", "", "1.5", "9223372036854775807", "-9223372036854775808", "60000", "abc def"}
	pick := func(l []string) string { return l[rng.IntN(len(l))] }
	randomStep := func() ([]any, int64) {
		k := pick(keys)
		var args []any
		tol := int64(0)
		switch rng.IntN(21) {
		case 0:
			args = []any{"GET", k}
		case 1:
			args = []any{"SET", k, pick(odd)}
			switch rng.IntN(6) {
			case 0:
				args = append(args, "EX", pick([]string{"10", "100", "0", "-5", "x"}))
			case 1:
				args = append(args, "PX", pick([]string{"10000", "60000", "0"}))
			case 2:
				args = append(args, "NX")
			case 3:
				args = append(args, "XX", "GET")
			case 4:
				args = append(args, "KEEPTTL")
			case 5:
				args = append(args, "PX", "100", "EX", "1") // syntax error
			}
		case 2:
			args = []any{"INCR", k}
		case 3:
			args = []any{"INCRBY", k, pick(odd)}
		case 4:
			args = []any{"DECR", k}
		case 5:
			args = []any{"DECRBY", k, pick(odd)}
		case 6:
			args = []any{"PEXPIRE", k, pick([]string{"30000", "60000", "x", "-1"})}
			if rng.IntN(3) == 0 {
				args = append(args, pick([]string{"NX", "XX", "GT", "LT", "ZZ"}))
			}
		case 7:
			args = []any{"EXPIRE", k, pick([]string{"30", "100", "0"})}
		case 8:
			args, tol = []any{"PTTL", k}, 50
		case 9:
			args, tol = []any{"TTL", k}, 1
		case 10:
			args = []any{"EXISTS", k, pick(keys)}
		case 11:
			args = []any{"TYPE", k}
		case 12:
			if rng.IntN(4) == 0 {
				args = []any{"DEL", k}
			} else {
				args = []any{"GET", k}
			}
		case 13:
			args, tol = []any{"EVALSHA", compat.UluleIncrSHA1, 1, k, pick([]string{"1", "2", "x"}), pick([]string{"60000", "30000"})}, 50
		case 14:
			args, tol = []any{"EVALSHA", compat.RateLimitRedisIncrementSHA1, 1, k, pick([]string{"60000", "30000"})}, 50
		case 15:
			args, tol = []any{"EVALSHA", compat.FlexibleSHA1, 1, k, pick([]string{"1", "3", "-1"}), "60", "10", "60"}, 50
		case 16:
			args = []any{"SETEX", k, pick([]string{"10", "100", "0", "-5", "x", "9223372036854775807"}), pick(odd)}
		case 17:
			args = []any{"PSETEX", k, pick([]string{"10000", "60000", "0", "-1", "x", "9223372036854775807"}), pick(odd)}
		case 18:
			args = []any{"SETNX", k, pick(odd)}
		case 19:
			args = []any{"GETDEL", k}
		case 20:
			args = []any{"MGET", k}
			for n := rng.IntN(4); n > 0; n-- {
				args = append(args, pick(keys))
			}
		}
		return args, tol
	}
	for step := 0; step < 3000; step++ {
		if rng.IntN(5) == 0 {
			n := 2 + rng.IntN(4)
			steps := make([][]any, n)
			tols := make([]int64, n)
			for i := range steps {
				steps[i], tols[i] = randomStep()
			}
			want, got := txRun(ctx, redisDB, steps), txRun(ctx, sluiceDB, steps)
			for i := range steps {
				if !agree(got[i], want[i], tols[i]) {
					t.Fatalf("step %d, command %d of MULTI %v: sluice %v; Redis %v", step, i, steps, got[i], want[i])
				}
			}
			continue
		}
		args, tol := randomStep()
		want := render(redisDB.Do(ctx, args...))
		got := render(sluiceDB.Do(ctx, args...))
		if os.Getenv("DBG") != "" {
			t.Log(step, args, got)
		}
		if !agree(got, want, tol) {
			t.Fatalf("step %d %v: sluice %v; Redis %v", step, args, got, want)
		}
	}
}

// txRun sends steps inside MULTI … EXEC and renders each command's reply.
func txRun(ctx context.Context, db *redis.Client, steps [][]any) [][]string {
	cmds := make([]*redis.Cmd, len(steps))
	db.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i, args := range steps {
			cmds[i] = p.Do(ctx, args...)
		}
		return nil
	})
	out := make([][]string, len(steps))
	for i, c := range cmds {
		out[i] = render(c)
	}
	return out
}

// render turns a reply into a list of scalars ("int:5", "str:x", "nil",
// "err:…") for comparison.
func render(c *redis.Cmd) []string {
	v, err := c.Result()
	switch {
	case err == redis.Nil:
		return []string{"nil"}
	case err != nil:
		return []string{"err:" + err.Error()}
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case []any:
			out = append(out, "array:"+strconv.Itoa(len(x)))
			for _, e := range x {
				walk(e)
			}
		case int64:
			out = append(out, "int:"+strconv.FormatInt(x, 10))
		case string:
			out = append(out, "str:"+x)
		case nil:
			out = append(out, "nil")
		default:
			out = append(out, fmt.Sprintf("%T:%v", x, x))
		}
	}
	walk(v)
	return out
}

// agree compares rendered replies, integers within tol when tol > 0 and
// both are positive (a time left).
func agree(got, want []string, tol int64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] == want[i] {
			continue
		}
		var g, w int64
		if _, err := fmt.Sscanf(got[i], "int:%d", &g); err != nil {
			return false
		}
		if _, err := fmt.Sscanf(want[i], "int:%d", &w); err != nil {
			return false
		}
		if tol == 0 || g < 0 || w < 0 || g-w > tol || w-g > tol {
			return false
		}
	}
	return true
}
