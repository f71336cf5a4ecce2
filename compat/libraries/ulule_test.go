package libraries_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/ulule/limiter/v3"
	sredis "github.com/ulule/limiter/v3/drivers/store/redis"
)

// TestUluleStoreAgreesWithRedis: ulule/limiter v3.11.2's Redis store, as
// an application uses it (NewStoreWithOptions loads its scripts with SCRIPT
// LOAD; Get, Peek, Increment and Reset run them with EVALSHA, and DEL), on
// sluice and on redis-server 7 side by side: 600 random calls on four keys
// of two rates give the same limit, remaining and reached, and resets
// within a second (each side reads its own clock). Then a 1-second window
// ends on both.
func TestUluleStoreAgreesWithRedis(t *testing.T) {
	ctx := context.Background()
	redisAddr := startRedis(t)
	newLimiters := func(addr string) (hour, second *limiter.Limiter) {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { rdb.Close() })
		store, err := sredis.NewStoreWithOptions(rdb, limiter.StoreOptions{Prefix: "ulule", MaxRetry: 3})
		if err != nil {
			t.Fatalf("NewStore against %s: %v", addr, err)
		}
		return limiter.New(store, limiter.Rate{Period: time.Hour, Limit: 7}),
			limiter.New(store, limiter.Rate{Period: time.Second, Limit: 3})
	}
	sHour, sSecond := newLimiters(sluiceAddr)
	rHour, rSecond := newLimiters(redisAddr)
	rng := rand.New(rand.NewPCG(3, 11))
	keys := []string{"k1", "k2", "k3", "k4"}
	for step := 0; step < 600; step++ {
		key := keys[rng.IntN(len(keys))]
		var op string
		var sc, rc limiter.Context
		var se, re error
		switch rng.IntN(10) {
		case 0, 1, 2, 3:
			op = "Get"
			sc, se = sHour.Get(ctx, key)
			rc, re = rHour.Get(ctx, key)
		case 4, 5:
			op = "Peek"
			sc, se = sHour.Peek(ctx, key)
			rc, re = rHour.Peek(ctx, key)
		case 6, 7, 8:
			n := rng.Int64N(4)
			op = fmt.Sprintf("Increment(%d)", n)
			sc, se = sHour.Increment(ctx, key, n)
			rc, re = rHour.Increment(ctx, key, n)
		case 9:
			op = "Reset"
			sc, se = sHour.Reset(ctx, key)
			rc, re = rHour.Reset(ctx, key)
		}
		if fmt.Sprint(se) != fmt.Sprint(re) || !sameContext(sc, rc) {
			t.Fatalf("step %d %s %s: sluice %+v, %v; Redis %+v, %v", step, op, key, sc, se, rc, re)
		}
	}
	for i := 0; i < 4; i++ {
		sc, se := sSecond.Get(ctx, "short")
		rc, re := rSecond.Get(ctx, "short")
		if se != nil || re != nil || !sameContext(sc, rc) {
			t.Fatalf("Get %d on a 3/s limiter: sluice %+v, %v; Redis %+v, %v", i, sc, se, rc, re)
		}
	}
	time.Sleep(1100 * time.Millisecond)
	sc, _ := sSecond.Peek(ctx, "short")
	rc, _ := rSecond.Peek(ctx, "short")
	if !sameContext(sc, rc) || sc.Remaining != 3 || sc.Reached {
		t.Fatalf("after the window: sluice %+v; Redis %+v; want a fresh window of 3", sc, rc)
	}
}

func sameContext(a, b limiter.Context) bool {
	d := a.Reset - b.Reset
	return a.Limit == b.Limit && a.Remaining == b.Remaining && a.Reached == b.Reached && d >= -1 && d <= 1
}
