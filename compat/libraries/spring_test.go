package libraries_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-rl/sluice/compat"
)

// TestSpringScriptThroughScriptRunAgreesWithRedis: Spring Cloud Gateway's
// request_rate_limiter.lua, its exact texts, sent the way Spring Data sends
// them (go-redis's Script.Run: EVALSHA, then EVAL on NOSCRIPT), to sluice
// and to redis-server 7 side by side, 3,000 random steps of each text:
//
//   - the 4.3.0 text with Spring's empty now argument, which makes the
//     script read TIME: each side reads its own clock, so a step that
//     straddles a second on the test's clock is not compared and the keys
//     are copied from Redis to sluice (a handful of steps in a run);
//     two pauses of a second let the buckets refill;
//   - the 3.0.0 text, whose now is the client's epoch seconds, moved on by
//     0–3 s at random.
//
// Replies (allowed, tokens left), the keys' values and their TTLs (within a
// second) must be equal.
func TestSpringScriptThroughScriptRunAgreesWithRedis(t *testing.T) {
	ctx := context.Background()
	redisAddr := startRedis(t)
	sdb := redis.NewClient(&redis.Options{Addr: sluiceAddr})
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { sdb.Close(); rdb.Close() })
	for _, v := range []struct {
		sha      string
		clientTS bool
	}{{"0ad5736ed1c04aae6ec194376c784b89b8c08a7a", false}, {"9d491aea731237273f4274f9ed9660b432b23791", true}} {
		script := redis.NewScript(compat.Known.Lookup([]byte(v.sha)).Text)
		rng := rand.New(rand.NewPCG(9, uint64(len(v.sha))))
		clientNow := time.Now().Unix()
		skipped := 0
		for step := 0; step < 3000; step++ {
			if !v.clientTS && (step == 1000 || step == 2000) {
				time.Sleep(time.Second)
			}
			id := "route." + strconv.Itoa(rng.IntN(3))
			keys := []string{"request_rate_limiter.{" + id + "}.tokens", "request_rate_limiter.{" + id + "}.timestamp"}
			rate := []int{1, 2, 10}[rng.IntN(3)]
			burst := []int{1, 5, 20}[rng.IntN(3)]
			requested := []int{0, 1, 1, 1, 3, 25}[rng.IntN(6)]
			now := ""
			if v.clientTS {
				clientNow += int64(rng.IntN(4)) * int64(rng.IntN(2))
				now = strconv.FormatInt(clientNow, 10)
			}
			before := time.Now().Unix()
			got, gerr := script.Run(ctx, sdb, keys, rate, burst, now, requested).Result()
			want, werr := script.Run(ctx, rdb, keys, rate, burst, now, requested).Result()
			if !v.clientTS && time.Now().Unix() != before {
				skipped++
				copyKeys(t, rdb, sdb, keys)
				continue
			}
			if fmt.Sprint(got, gerr) != fmt.Sprint(want, werr) {
				t.Fatalf("%s step %d %v %d %d %q %d: sluice %v, %v; Redis %v, %v",
					v.sha[:8], step, keys, rate, burst, now, requested, got, gerr, want, werr)
			}
			for _, k := range keys {
				gv, _ := sdb.Get(ctx, k).Result()
				wv, _ := rdb.Get(ctx, k).Result()
				gt, _ := sdb.PTTL(ctx, k).Result()
				wt, _ := rdb.PTTL(ctx, k).Result()
				if gv != wv || (gt-wt).Abs() > time.Second {
					t.Fatalf("%s step %d key %s: sluice %q ttl %v; Redis %q ttl %v", v.sha[:8], step, k, gv, gt, wv, wt)
				}
			}
		}
		if skipped > 30 {
			t.Fatalf("%d steps straddled a second; the comparison is too thin", skipped)
		}
	}
}

// copyKeys sets keys on dst to their values and TTLs on src.
func copyKeys(t *testing.T, src, dst *redis.Client, keys []string) {
	ctx := context.Background()
	for _, k := range keys {
		v, err := src.Get(ctx, k).Result()
		if err == redis.Nil {
			dst.Del(ctx, k)
			continue
		}
		ttl, _ := src.PTTL(ctx, k).Result()
		if ttl < 0 {
			ttl = 0
		}
		if err := dst.Set(ctx, k, v, ttl).Err(); err != nil {
			t.Fatal(err)
		}
	}
}
