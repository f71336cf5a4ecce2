package compat

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestRateLimitRedisWindowStartsAtTheFirstHit(t *testing.T) {
	inc := Known.Lookup([]byte(RateLimitRedisIncrementSHA1))
	get := Known.Lookup([]byte(RateLimitRedisGetSHA1))
	k := &Key{}
	keys := []*Key{k}
	if got := play(get, t0, keys); got != "[(nil) -2]" {
		t.Fatalf("get before any hit = %s; want [(nil) -2]", got)
	}
	ms := time.Millisecond
	steps := []struct {
		at   time.Duration
		want string
	}{
		{0, "[1 1000]"},
		{400 * ms, "[2 600]"},
		{1000 * ms, "[1 1000]"}, // PTTL 0 counts as expired: a new window
		{1500 * ms, "[2 500]"},
	}
	for i, st := range steps {
		if got := play(inc, t0+int64(st.at), keys, "1000"); got != st.want {
			t.Fatalf("step %d: increment(t0+%v) = %s; want %s", i, st.at, got, st.want)
		}
	}
	if got := play(get, t0+int64(1700*ms), keys); got != `["2" 300]` {
		t.Fatalf("get = %s; want [\"2\" 300]", got)
	}
}

func TestRateLimitRedisIncrementAfterDecrementOfNothingStartsAWindow(t *testing.T) {
	// decrement() is a plain DECR: on no key it leaves -1 without a TTL.
	// PTTL -1 is <= 0, so the next increment starts a window (SET 1 PX),
	// as redis-server 7.0.15 does.
	inc := Known.Lookup([]byte(RateLimitRedisIncrementSHA1))
	k := &Key{}
	if n, err := k.IncrBy(t0, -1); n != -1 || err != nil || k.PTTL(t0) != -1 {
		t.Fatalf("DECR on no key = %d, %v, PTTL %d; want -1, nil, -1", n, err, k.PTTL(t0))
	}
	if got := play(inc, t0, []*Key{k}, "1000"); got != "[1 1000]" {
		t.Fatalf("increment = %s; want [1 1000]", got)
	}
	if got := valueString(k, t0); got != "1" || k.PTTL(t0) != 1000 {
		t.Fatalf("GET %q PTTL %d; want \"1\", 1000", got, k.PTTL(t0))
	}
}

func TestRateLimitRedisGetIsReadOnly(t *testing.T) {
	get := Known.Lookup([]byte(RateLimitRedisGetSHA1))
	inc := Known.Lookup([]byte(RateLimitRedisIncrementSHA1))
	if !get.ReadOnly || inc.ReadOnly {
		t.Fatalf("ReadOnly: get %v, increment %v; want true, false", get.ReadOnly, inc.ReadOnly)
	}
	k := &Key{}
	c := Call{Now: t0, Keys: []Key{*k}, Argv: [][]byte{[]byte("1000")}, ReadOnly: true}
	inc.Run(&c)
	want := "ERR Write commands are not allowed from read-only scripts. script: " + RateLimitRedisIncrementSHA1 + ", on @user_script:4."
	if c.Reply.Type != Error || c.Reply.Err != want || c.Keys[0].Written {
		t.Fatalf("EVALSHA_RO increment = %s, written %v; want %s", c.Reply.String(), c.Keys[0].Written, want)
	}
}

func rateLimitRedisGen(rng *rand.Rand, w *world, names []string) step {
	s := Known.Lookup([]byte(RateLimitRedisIncrementSHA1))
	argv := []string{pick(rng, 0.03, itoa(500+rng.Int64N(4500)))}
	if rng.IntN(4) == 0 {
		s, argv = Known.Lookup([]byte(RateLimitRedisGetSHA1)), nil
	}
	keys := []string{names[rng.IntN(len(names))]}
	if rng.IntN(100) == 0 {
		keys = nil
	}
	if rng.IntN(100) == 0 {
		argv = nil
	}
	return step{s: s, keys: keys, argv: argv, ro: rng.IntN(50) == 0}
}

func TestRateLimitRedisMatchesRedis(t *testing.T) {
	runDifferential(t, 4000, []string{"rl:a", "rl:b", "rl:c"}, rateLimitRedisGen)
}

func BenchmarkRateLimitRedisIncrement(b *testing.B) {
	s := Known.Lookup([]byte(RateLimitRedisIncrementSHA1))
	c := &Call{Keys: make([]Key, 1), Argv: [][]byte{[]byte("60000")}}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		c.Now = t0 + int64(i)*int64(time.Millisecond)
		s.Run(c)
		c.Keys[0].Written = false
	}
}

func BenchmarkRateLimitRedisGet(b *testing.B) {
	s := Known.Lookup([]byte(RateLimitRedisGetSHA1))
	c := &Call{Keys: []Key{{Value: IntValue(7), Expire: NoExpire - 1}}}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		c.Now = t0 + int64(i)*int64(time.Millisecond)
		s.Run(c)
	}
}

// rateLimitRedis45Gen plays 4.2.0's and 5.0.0's increment (ARGV
// {resetExpiryOnChange, windowMs}) and the get they share.
func rateLimitRedis45Gen(rng *rand.Rand, w *world, names []string) step {
	s := Known.Lookup([]byte(RateLimitRedisIncrement5SHA1))
	if rng.IntN(2) == 0 {
		s = Known.Lookup([]byte(RateLimitRedisIncrement4SHA1))
	}
	reset := "0"
	if rng.IntN(3) == 0 {
		reset = "1"
	}
	argv := []string{pick(rng, 0.03, reset), pick(rng, 0.03, itoa(500+rng.Int64N(4500)))}
	if rng.IntN(4) == 0 {
		s, argv = Known.Lookup([]byte(RateLimitRedisGetSHA1)), nil
	}
	keys := []string{names[rng.IntN(len(names))]}
	if rng.IntN(100) == 0 {
		keys = nil
	}
	if rng.IntN(100) == 0 {
		argv = argv[:rng.IntN(len(argv)+1)]
	}
	return step{s: s, keys: keys, argv: argv, ro: rng.IntN(50) == 0}
}

func TestRateLimitRedis4And5MatchRedis(t *testing.T) {
	runDifferential(t, 4000, []string{"rl:a", "rl:b", "rl:c"}, rateLimitRedis45Gen)
}
