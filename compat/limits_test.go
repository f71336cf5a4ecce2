package compat

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

func TestLimitsMovingWindowKeepsTheNewestLimitTimestamps(t *testing.T) {
	acq := Known.Lookup([]byte(LimitsAcquireSHA1))
	win := Known.Lookup([]byte(LimitsMovingWindowSHA1))
	k := &Key{}
	keys := []*Key{k}
	// 3 per 10 s: three hits at 100, 101, 102 s are admitted, the fourth
	// at 103 s is not, and at 110.5 s the first has left the window.
	for i, want := range []string{"1", "1", "1", "(nil)"} {
		ts := strconv.Itoa(100+i) + ".5"
		if got := play(acq, t0, keys, ts, "3", "10", "1"); got != want {
			t.Fatalf("acquire at %s = %s; want %s", ts, got, want)
		}
	}
	if got := play(win, t0, keys, "93", "3"); got != "[102 3]" {
		t.Fatalf("moving_window = %s; want [102 3] (the head: the newest entry)", got)
	}
	if got := play(acq, t0, keys, "110.75", "3", "10", "1"); got != "1" {
		t.Fatalf("acquire at 110.75 = %s; want 1", got)
	}
	if len(k.List) != 3 || k.Value.Kind() != List || k.PTTL(t0) != 10000 {
		t.Fatalf("list %v (kind %d), PTTL %d; want 3 entries, a list, 10000", k.List, k.Value.Kind(), k.PTTL(t0))
	}
	if got := play(win, t0, keys, "101", "3"); got != "[110 3]" {
		t.Fatalf("moving_window = %s; want [110 3]", got)
	}
	if got := play(win, t0, keys, "111", "3"); got != "[]" {
		t.Fatalf("moving_window past every entry = %s; want []", got)
	}
	// GET and INCRBY on the list are WRONGTYPE, as on Redis.
	if _, err := k.IncrBy(t0, 1); err != ErrWrongType {
		t.Fatalf("INCRBY on the list: %v; want WRONGTYPE", err)
	}
}

// limitsGen plays limits 2.8's three keyed scripts as its strategies send
// them (and odd arguments now and then), at the world's instant.
func limitsGen(rng *rand.Rand, w *world, names []string) step {
	// names[0] and [1] are moving windows' lists, the rest fixed windows'
	// counters; one call in twenty names the other kind (WRONGTYPE).
	list := rng.IntN(2)
	now := float64(w.now) / 1e9
	limit := 1 + rng.Int64N(6)
	expiry := 1 + rng.Int64N(4)
	var s *Script
	var argv []string
	switch rng.IntN(7) {
	case 0, 1: // FixedWindowRateLimiter.hit: incr(key, expiry, amount)
		s = Known.Lookup([]byte(LimitsIncrExpireSHA1))
		argv = []string{pick(rng, 0.03, itoa(expiry)), pick(rng, 0.03, itoa(1+rng.Int64N(3)))}
	case 2, 3: // MovingWindowRateLimiter.get_window_stats / test
		s = Known.Lookup([]byte(LimitsMovingWindowSHA1))
		argv = []string{pick(rng, 0.03, itoa(int64(now)-expiry)), pick(rng, 0.03, itoa(limit))}
	default: // MovingWindowRateLimiter.hit: acquire_entry(key, limit, expiry, amount)
		s = Known.Lookup([]byte(LimitsAcquireSHA1))
		amount := 1 + rng.Int64N(limit+1)
		switch rng.IntN(60) {
		case 0:
			amount = 0
		case 1:
			amount = MaxPush - 1 + rng.Int64N(4) // around unpack's limit
		}
		argv = []string{pick(rng, 0.03, strconv.FormatFloat(now, 'f', -1, 64)), pick(rng, 0.03, itoa(limit)),
			pick(rng, 0.03, itoa(expiry)), itoa(amount)}
		if rng.IntN(30) == 0 { // odd amounts, but none that makes Redis's loop run for ever
			argv[3] = []string{"", "abc", "1.5", "-1", "0x2", " 2", "nan", "-inf", "1e3"}[rng.IntN(9)]
		}
	}
	name := names[list]
	if (s.impl == implLimitsIncrExpire) != (rng.IntN(20) == 0) {
		name = names[2+rng.IntN(len(names)-2)]
	}
	// A string the plain steps left on a list's name (or the other way
	// round) would make every later call WRONGTYPE: remove it, most times,
	// as limits' clear does.
	if k := w.key(name); k.Live(w.now) && (k.Value.Kind() == List) != (s.impl != implLimitsIncrExpire) && rng.IntN(4) != 0 {
		w.del(name)
	}
	keys := []string{name}
	if rng.IntN(100) == 0 {
		keys = nil
	}
	if rng.IntN(100) == 0 {
		argv = argv[:rng.IntN(len(argv)+1)]
	}
	return step{s: s, keys: keys, argv: argv, ro: rng.IntN(50) == 0}
}

func TestLimitsMatchesRedis(t *testing.T) {
	runDifferential(t, 4000, []string{"LIMITER/a", "LIMITER/b", "LIMITER/c", "LIMITER/d"}, limitsGen)
}

func BenchmarkLimitsAcquire(b *testing.B) {
	s := Known.Lookup([]byte(LimitsAcquireSHA1))
	c := &Call{Keys: make([]Key, 1), Argv: [][]byte{nil, []byte("10"), []byte("60"), []byte("1")}}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		c.Now = t0 + int64(i)*int64(time.Millisecond)
		c.Argv[0] = strconv.AppendFloat(c.Argv[0][:0], float64(c.Now)/1e9, 'f', -1, 64)
		s.Run(c)
		c.Keys[0].Written = false
		c.Keys[0].List = append([]int64(nil), c.Keys[0].List...)
	}
}
