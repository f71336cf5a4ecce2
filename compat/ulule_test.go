package compat

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestUluleIncrSetsThePeriodOnTheFirstHit(t *testing.T) {
	incr := Known.Lookup([]byte(UluleIncrSHA1))
	peek := Known.Lookup([]byte(UlulePeekSHA1))
	k := &Key{}
	keys := []*Key{k}
	if got := play(peek, t0, keys); got != "[0 0]" {
		t.Fatalf("peek before any hit = %s; want [0 0]", got)
	}
	ms := time.Millisecond
	steps := []struct {
		at    time.Duration
		count string
		want  string
	}{
		{0, "1", "[1 1000]"},         // the first hit: PEXPIRE 1000, the reply is ARGV's ttl
		{250 * ms, "2", "[3 750]"},   // later hits: PTTL
		{1001 * ms, "2", "[2 1000]"}, // expired: INCRBY from 0 equals count, a new period
	}
	for i, st := range steps {
		if got := play(incr, t0+int64(st.at), keys, st.count, "1000"); got != st.want {
			t.Fatalf("step %d: incr(t0+%v, %s) = %s; want %s", i, st.at, st.count, got, st.want)
		}
	}
	if got := play(peek, t0+int64(1500*ms), keys); got != "[2 501]" {
		t.Fatalf("peek = %s; want [2 501]", got)
	}
}

func TestUlulePeekOfANonNumberIsAnEmptyArray(t *testing.T) {
	// tonumber("abc") is nil, and a Lua table ends at its first nil.
	peek := Known.Lookup([]byte(UlulePeekSHA1))
	v, _ := StringValue([]byte("abc"))
	k := &Key{Value: v, Expire: NoExpire}
	if got := play(peek, t0, []*Key{k}); got != "[]" {
		t.Fatalf("peek of \"abc\" = %s; want []", got)
	}
}

func TestUluleIncrWritesBeforeItFails(t *testing.T) {
	// INCRBY runs before the script compares ARGV[2]: a nil ttl fails on
	// line 7 with the count already added, as in Redis.
	incr := Known.Lookup([]byte(UluleIncrSHA1))
	k := &Key{}
	want := "(error) ERR user_script:7: attempt to compare number with nil script: " + UluleIncrSHA1 + ", on @user_script:7."
	if got := play(incr, t0, []*Key{k}, "1", "x"); got != want {
		t.Fatalf("incr with ttl x = %s; want %s", got, want)
	}
	if got := valueString(k, t0); got != "1" {
		t.Fatalf("GET after the failed script = %q; want \"1\"", got)
	}
}

func ululeGen(rng *rand.Rand, w *world, names []string) step {
	s := Known.Lookup([]byte(UluleIncrSHA1))
	argv := []string{pick(rng, 0.03, itoa(1+rng.Int64N(3))), pick(rng, 0.03, itoa(500+rng.Int64N(4500)))}
	if rng.IntN(4) == 0 {
		s, argv = Known.Lookup([]byte(UlulePeekSHA1)), nil
	}
	keys := []string{names[rng.IntN(len(names))]}
	if rng.IntN(100) == 0 {
		keys = nil
	}
	if rng.IntN(100) == 0 {
		argv = argv[:len(argv)/2]
	}
	return step{s: s, keys: keys, argv: argv, ro: rng.IntN(50) == 0}
}

func TestUluleMatchesRedis(t *testing.T) {
	runDifferential(t, 4000, []string{"limiter:a", "limiter:b", "limiter:c"}, ululeGen)
}

func BenchmarkUluleIncr(b *testing.B) {
	s := Known.Lookup([]byte(UluleIncrSHA1))
	c := &Call{Keys: make([]Key, 1), Argv: [][]byte{[]byte("1"), []byte("60000")}}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		c.Now = t0 + int64(i)*int64(time.Millisecond)
		s.Run(c)
		c.Keys[0].Written = false
	}
}

func BenchmarkUlulePeek(b *testing.B) {
	s := Known.Lookup([]byte(UlulePeekSHA1))
	c := &Call{Keys: []Key{{Value: IntValue(7), Expire: NoExpire - 1}}}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		c.Now = t0 + int64(i)*int64(time.Millisecond)
		s.Run(c)
	}
}
