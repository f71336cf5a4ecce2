package client

import (
	"context"
	"fmt"
	"runtime/debug"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-rl/sluice/client/sluicetest"
)

// The client's cost over go-redis's own, per call, against a real server. "raw" is the call a
// user writes by hand, rdb.Do(ctx, "RL.TOKEN", key, "10/s", burst, n), reading the reply with
// Val(): go-redis's allocations. The typed call must not allocate more.

func benchClient(b testing.TB, proto int) (*Client, *redis.Client) {
	srv := sluicetest.Start(b)
	rdb := srv.Client(proto)
	return New(rdb), rdb
}

// The key and burst are variables, as in real code: boxing them for Do allocates.
var benchKey, benchBurst = "bench:user:42", int64(1000000)

func rawToken(ctx context.Context, rdb *redis.Client) error {
	return rdb.Do(ctx, "RL.TOKEN", benchKey, "1000000/s", benchBurst, 1).Err()
}

func typedToken(ctx context.Context, c *Client) error {
	_, err := c.Token(ctx, benchKey, PerSecond(1000000), benchBurst, 1)
	return err
}

// The server starts once per benchmark, outside the timed loops: a sub-benchmark's function
// runs once per round of b.N.
func BenchmarkTokenRawDo(b *testing.B) {
	srv := sluicetest.Start(b)
	for _, proto := range []int{2, 3} {
		b.Run(fmt.Sprintf("RESP%d", proto), func(b *testing.B) {
			rdb := srv.Client(proto)
			ctx := context.Background()
			rawToken(ctx, rdb) // connect outside the timed loop
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := rawToken(ctx, rdb); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkToken(b *testing.B) {
	srv := sluicetest.Start(b)
	for _, proto := range []int{2, 3} {
		b.Run(fmt.Sprintf("RESP%d", proto), func(b *testing.B) {
			c := New(srv.Client(proto))
			ctx := context.Background()
			typedToken(ctx, c)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := typedToken(ctx, c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkAllTo(b *testing.B) {
	c, _ := benchClient(b, 2)
	ctx := context.Background()
	var out AllResult
	limits := []Limit{Token("b:s", PerSecond(1000000), 1000000), Fixed("b:d", 1<<40, 24*time.Hour), Token("b:api", PerSecond(1000000), 1000000)}
	if err := c.AllTo(ctx, &out, 1, limits...); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := c.AllTo(ctx, &out, 1, limits...); err != nil {
			b.Fatal(err)
		}
	}
}

// The typed call allocates exactly what go-redis allocates for one command whose arguments are
// already built (the Cmd, reading the reply, its connection check): argument building and
// decoding add nothing. The raw Do allocates more, boxing its arguments. (Counts of
// allocations, not timings: deterministic.) Under -race, sync.Pool drops a quarter of what is
// put back on purpose, so the argument buffers are sometimes built anew: the bound there allows
// for those few, and the exact bound holds in every build without -race.
func TestTokenAllocatesNothingBeyondGoRedis(t *testing.T) {
	slack := 0.0
	if raceEnabled() {
		slack = 3 // new(argv), its spans and its buffer, when the pool dropped them
	}
	for _, proto := range []int{2, 3} {
		c, rdb := benchClient(t, proto)
		ctx := context.Background()
		prebuilt := []any{"RL.TOKEN", benchKey, "1000000/s", benchBurst, int64(1)}
		goRedisOnly := func() { rdb.Process(ctx, redis.NewCmd(ctx, prebuilt...)) }
		goRedisOnly() // warm the pools and the connection
		typedToken(ctx, c)
		floor := testing.AllocsPerRun(500, goRedisOnly)
		raw := testing.AllocsPerRun(500, func() { rawToken(ctx, rdb) })
		typed := testing.AllocsPerRun(500, func() { typedToken(ctx, c) })
		t.Logf("RESP%d allocations per call: go-redis alone %.1f, raw Do %.1f, typed Token %.1f", proto, floor, raw, typed)
		if typed > floor+slack {
			t.Errorf("RESP%d: Token allocates %.1f per call; go-redis alone, %.1f (allowance %.0f)", proto, typed, floor, slack)
		}
	}
}

// raceEnabled reports whether the test binary was built with -race.
func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}
