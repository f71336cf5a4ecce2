package compat

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestFlexibleCountsInAWindowThatStartsAtTheFirstHit(t *testing.T) {
	s := Known.Lookup([]byte(FlexibleSHA1))
	k := &Key{}
	keys := []*Key{k}
	ms := time.Millisecond
	steps := []struct {
		at     time.Duration
		points string
		want   string
	}{
		{0, "1", "[1 2000]"},         // SET NX EX 2, INCRBY: consumed 1, PTTL 2000
		{300 * ms, "2", "[3 1700]"},  // the window keeps its end
		{900 * ms, "-1", "[2 1100]"}, // reward: a negative count
		{2000 * ms, "1", "[3 0]"},    // the window's last millisecond: still there, PTTL 0
		{2001 * ms, "1", "[1 2000]"}, // gone: a new window
	}
	for i, st := range steps {
		now := t0 + int64(st.at)
		if got := play(s, now, keys, st.points, "2", "5", "2"); got != st.want {
			t.Fatalf("step %d: consume(t0+%v, %s) = %s; want %s", i, st.at, st.points, got, st.want)
		}
	}
}

func TestFlexibleGivesAKeyWithoutTTLItsDuration(t *testing.T) {
	// A limiter with duration 0 counts with a plain INCRBY, leaving no TTL;
	// the script then sets one with EXPIRE and reports 1000 × duration.
	s := Known.Lookup([]byte(FlexibleSHA1))
	k := &Key{}
	if _, err := k.IncrBy(t0, 4); err != nil {
		t.Fatal(err)
	}
	if got := play(s, t0, []*Key{k}, "1", "3", "5", "3"); got != "[5 3000]" {
		t.Fatalf("consume on a key without TTL = %s; want [5 3000]", got)
	}
	if got := k.PTTL(t0); got != 3000 {
		t.Fatalf("PTTL = %d; want 3000", got)
	}
}

func TestFlexibleConsumeDuringABlockKeepsTheBlocksTTL(t *testing.T) {
	// block() writes SET key points+1 EX blockDuration (in MULTI with
	// PTTL); a consume then counts on, and its window is the block's.
	// redis-server 7.0.15 answers [12 9994] six milliseconds after the SET.
	s := Known.Lookup([]byte(FlexibleSHA1))
	k := &Key{}
	k.Set(t0, IntValue(11), 10_000)
	at := t0 + int64(6*time.Millisecond)
	if got := play(s, at, []*Key{k}, "1", "2", "10", "2"); got != "[12 9994]" {
		t.Fatalf("consume during a 10 s block = %s; want [12 9994]", got)
	}
}

func TestFlexibleRefusesAKeyOfAnotherKind(t *testing.T) {
	s := Known.Lookup([]byte(FlexibleSHA1))
	k := &Key{Value: ForeignValue(), Expire: NoExpire}
	want := "(error) WRONGTYPE Operation against a key holding the wrong kind of value script: " + FlexibleSHA1 + ", on @user_script:1."
	if got := play(s, t0, []*Key{k}, "1", "3", "5", "3"); got != want {
		t.Fatalf("consume on another kind = %s; want %s", got, want)
	}
}

// flexibleGen makes RateLimiterRedis's calls: points (negative for reward),
// secDuration, and the limiter's points and duration, which the script
// ignores.
func flexibleGen(rng *rand.Rand, w *world, names []string) step {
	secs := 1 + rng.Int64N(5)
	argv := []string{
		pick(rng, 0.03, itoa(rng.Int64N(5)-1)),
		pick(rng, 0.03, itoa(secs)),
		"10", itoa(secs),
	}
	keys := []string{names[rng.IntN(len(names))]}
	if rng.IntN(100) == 0 {
		keys = nil
	}
	if rng.IntN(100) == 0 {
		argv = argv[:rng.IntN(2)]
	}
	return step{s: Known.Lookup([]byte(FlexibleSHA1)), keys: keys, argv: argv, ro: rng.IntN(100) == 0}
}

func TestFlexibleMatchesRedis(t *testing.T) {
	runDifferential(t, 4000, []string{"rlflx:a", "rlflx:b", "rlflx:c"}, flexibleGen)
}

func BenchmarkFlexible(b *testing.B) {
	s := Known.Lookup([]byte(FlexibleSHA1))
	c := &Call{Keys: make([]Key, 1), Argv: [][]byte{[]byte("1"), []byte("60"), []byte("100"), []byte("60")}}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		c.Now = t0 + int64(i)*int64(time.Millisecond)
		s.Run(c)
		c.Keys[0].Written = false
	}
}
