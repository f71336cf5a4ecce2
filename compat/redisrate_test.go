package compat

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestRedisRateAllowNKeepsRedisFloatError(t *testing.T) {
	s := Known.Lookup([]byte(AllowNSHA1v911))
	k := &Key{}
	keys := []*Key{k}
	ms := time.Millisecond
	// burst 2, 10 per second: one token every 100 ms. The script counts in
	// float seconds since 2017 (2.9e8 s: a 6e-8 s step), so the first call
	// leaves 0.9999998 tokens, shown as 0, and the second is denied for
	// 6e-8 s. The wanted replies are redis-server 7.0.15's for the same TIME
	// (its TIME variant, see timeVariant).
	steps := []struct {
		at   time.Duration
		n    string
		want string
	}{
		{0, "1", `[1 0 "-1" "0.10000002384186"]`},
		{0, "1", `[0 0 "5.9604644775391e-08" "0.10000002384186"]`},
		{50 * ms, "1", `[1 0 "-1" "0.15000003576279"]`},
		{100 * ms, "1", `[0 0 "5.9604644775391e-08" "0.10000002384186"]`},
		{100 * ms, "0", `[0 0 "-1" "0.10000002384186"]`}, // n = 0 reads
		{10 * time.Second, "3", `[0 0 "0.10000002384186" "0"]`},
	}
	for i, st := range steps {
		now := t0 + int64(st.at)
		if got := play(s, now, keys, "2", "10", "1", st.n); got != st.want {
			t.Fatalf("step %d: allowN(t0+%v, n=%s) = %s; want %s", i, st.at, st.n, got, st.want)
		}
	}
}

func TestRedisRateStoresTATAsPercent17g(t *testing.T) {
	s := Known.Lookup([]byte(AllowNSHA1v911))
	k := &Key{}
	now := t0 + 123456*int64(time.Microsecond)
	play(s, now, []*Key{k}, "10", "10", "1", "1")
	// seconds since 2017-01-01 plus µs, plus 0.1: Redis 7.0 writes the Lua
	// number with "%.17g" (redis-server 7.0.15 stores this very string).
	if got, want := valueString(k, now), "289137600.22345603"; got != want {
		t.Fatalf("GET = %q; want %q", got, want)
	}
	// SET … EX math.ceil(reset_after) = 1 s
	if got := k.PTTL(now); got != 1000 {
		t.Fatalf("PTTL = %d; want 1000", got)
	}
}

func TestRedisRateV90DeniesAtMostOnlyAtZero(t *testing.T) {
	// v9.0's allowAtMost rounds remaining and tests remaining == 0; its SET
	// is unconditional, so n = 0 on a new key fails on EX 0.
	s := Known.Lookup([]byte(AllowAtMostSHA1v90))
	k := &Key{}
	want := "(error) ERR invalid expire time in 'set' command script: " + AllowAtMostSHA1v90 + ", on @user_script:60."
	if got := play(s, t0, []*Key{k}, "2", "10", "1", "0"); got != want {
		t.Fatalf("allowAtMost n=0 on v9.0 = %s; want %s", got, want)
	}
	if got := play(s, t0, []*Key{k}, "2", "10", "1", "5"); got != `[2 0 "-1" "0.19999998807907"]` {
		t.Fatalf("allowAtMost n=5, burst 2 = %s", got)
	}
}

// redisRateGen makes redis_rate's calls: burst, rate, period as Go's
// strconv formats Duration.Seconds(), and n, with odd values now and then.
func redisRateGen(s *Script) func(rng *rand.Rand, w *world, names []string) step {
	periods := []string{"1", "60", "3600", "0.5", "0.001", "2.5"}
	return func(rng *rand.Rand, w *world, names []string) step {
		rate := 1 + rng.Int64N(20)
		argv := []string{
			pick(rng, 0.02, itoa(rate+rng.Int64N(5)-2)),
			pick(rng, 0.02, itoa(rate)),
			pick(rng, 0.02, periods[rng.IntN(len(periods))]),
			pick(rng, 0.02, itoa(rng.Int64N(6)-1)),
		}
		keys := []string{names[rng.IntN(len(names))]}
		if rng.IntN(100) == 0 {
			keys = nil
		}
		if rng.IntN(100) == 0 {
			argv = argv[:rng.IntN(4)]
		}
		return step{s: s, keys: keys, argv: argv, ro: rng.IntN(100) == 0}
	}
}

func TestRedisRateMatchesRedis(t *testing.T) {
	names := []string{"rate:a", "rate:b", "rate:c"}
	for _, s := range redisRateScripts {
		t.Run(s.Name+" "+s.Versions, func(t *testing.T) {
			runDifferential(t, 2000, names, redisRateGen(s))
		})
	}
}

// The comparison runs a TIME variant of the text on Redis; this runs the
// unmodified text, reading Redis's own clock, and checks that it answers
// as the native does at an instant within the call.
func TestRedisRateUnmodifiedTextReadsTIME(t *testing.T) {
	srv := startRedis(t)
	ctx := context.Background()
	s := Known.Lookup([]byte(AllowNSHA1v911))
	if sha := srv.load(t, s.Text); sha != s.SHA1 {
		t.Fatalf("SCRIPT LOAD = %s; want %s", sha, s.SHA1)
	}
	before := time.Now().UnixNano()
	got, err := srv.rdb.EvalSha(ctx, s.SHA1, []string{"rate:u"}, "1", "1", "1", "1").Result()
	after := time.Now().UnixNano()
	// A new key at any instant: new_tat = now + 1, remaining exactly 0,
	// reset_after exactly 1.
	if d := fromRedis(got, err); d != `[1 0 "-1" "1"]` {
		t.Fatalf("Redis = %s", d)
	}
	k := &Key{}
	if d := play(s, (before+after)/2, []*Key{k}, "1", "1", "1", "1"); d != `[1 0 "-1" "1"]` {
		t.Fatalf("native = %s", d)
	}
	// The stored TAT is Redis's TIME (seconds since 2017) + 1, within the
	// call's instants.
	tat, err := srv.rdb.Get(ctx, "rate:u").Result()
	if err != nil {
		t.Fatal(err)
	}
	f, err := strconv.ParseFloat(tat, 64)
	lo, hi := float64(before/1e3)/1e6-redisRateEpoch2017+1, float64(after/1e3)/1e6-redisRateEpoch2017+1
	if err != nil || f < lo-1e-6 || f > hi+1e-6 || !strings.Contains(tat, ".") {
		t.Fatalf("GET = %q; want a TAT in [%f, %f]", tat, lo, hi)
	}
}

func BenchmarkRedisRateAllowN(b *testing.B) {
	s := Known.Lookup([]byte(AllowNSHA1v911))
	c := &Call{Keys: make([]Key, 1), Argv: [][]byte{[]byte("100"), []byte("100"), []byte("1"), []byte("1")}}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		c.Now = t0 + int64(i)*int64(time.Millisecond)
		s.Run(c)
		c.Keys[0].Written = false
	}
}

func BenchmarkRedisRateAllowAtMost(b *testing.B) {
	s := Known.Lookup([]byte(AllowAtMostSHA1v911))
	c := &Call{Keys: make([]Key, 1), Argv: [][]byte{[]byte("100"), []byte("100"), []byte("1"), []byte("3")}}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		c.Now = t0 + int64(i)*int64(time.Millisecond)
		s.Run(c)
		c.Keys[0].Written = false
	}
}
