package compat

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"
)

// t0 is the instant the scripts of instants start from.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).UnixNano()

// play runs s once at now on keys and returns the reply as text.
func play(s *Script, now int64, keys []*Key, argv ...string) string {
	c := Call{Now: now}
	for _, k := range keys {
		c.Keys = append(c.Keys, *k)
	}
	for _, a := range argv {
		c.Argv = append(c.Argv, []byte(a))
	}
	s.Run(&c)
	for i, k := range keys {
		if c.Keys[i].Written {
			*k = c.Keys[i]
			k.Written = false
		}
	}
	return c.Reply.String()
}

func valueString(k *Key, now int64) string {
	if !k.Live(now) {
		return "(absent)"
	}
	return string(k.Value.AppendString(nil))
}

func TestSpringTokenBucketRefillsWholeSecondsFromTIME(t *testing.T) {
	s := Known.Lookup([]byte(SpringSHA1v430))
	tokens, stamp := &Key{}, &Key{}
	keys := []*Key{tokens, stamp}
	sec := time.Second
	steps := []struct {
		at   time.Duration
		n    string
		want string
	}{
		{0, "1", "[1 2]"},                      // a new bucket starts full: 3 - 1
		{100 * time.Millisecond, "2", "[1 0]"}, // the same second: no refill
		{900 * time.Millisecond, "1", "[0 0]"}, // still the same second
		{1 * sec, "1", "[1 0]"},                // TIME's seconds moved by 1: one token
		{5 * sec, "3", "[1 0]"},                // 4 s refill 4, capped at 3
		{5 * sec, "1", "[0 0]"},
	}
	for i, st := range steps {
		now := t0 + int64(st.at)
		if got := play(s, now, keys, "1", "3", "", st.n); got != st.want {
			t.Fatalf("step %d: request_rate_limiter(t0+%v, requested=%s) = %s; want %s", i, st.at, st.n, got, st.want)
		}
	}
	// Both keys live for floor(3/1*2) = 6 s from the last write, and the
	// timestamp is TIME's seconds, as a string.
	now := t0 + int64(5*sec)
	if got := tokens.PTTL(now); got != 6000 {
		t.Fatalf("PTTL tokens = %d; want 6000", got)
	}
	if got, want := valueString(stamp, now), itoa(now/1e9); got != want {
		t.Fatalf("GET timestamp = %q; want TIME's seconds %q", got, want)
	}
	if got := valueString(tokens, now); got != "0" {
		t.Fatalf("GET tokens = %q; want \"0\"", got)
	}
}

func TestSpringClientNowAndFractionalRate(t *testing.T) {
	s := Known.Lookup([]byte(SpringSHA1v300))
	tokens, stamp := &Key{}, &Key{}
	keys := []*Key{tokens, stamp}
	// 3.0.0 takes now from ARGV; a rate of 0.5 makes fractional tokens,
	// stored with Redis 7.0's "%.17g" and truncated in the reply.
	if got := play(s, t0, keys, "0.5", "2", "1000", "2"); got != "[1 0]" {
		t.Fatalf("first call = %s", got)
	}
	if got := play(s, t0, keys, "0.5", "2", "1003", "1"); got != "[1 0]" {
		t.Fatalf("after 3 s at 0.5/s = %s; want admitted, 0.5 left shown as 0", got)
	}
	if got := valueString(tokens, t0); got != "0.5" {
		t.Fatalf("GET tokens = %q; want 0.5", got)
	}
	if got := valueString(stamp, t0); got != "1003" {
		t.Fatalf("GET timestamp = %q; want 1003", got)
	}
	// An empty now is nil in 3.0.0: Redis's Lua error, with its line.
	want := "(error) ERR user_script:32: attempt to perform arithmetic on local 'now' (a nil value) script: " +
		SpringSHA1v300 + ", on @user_script:32."
	if got := play(s, t0, keys, "1", "2", "", "1"); got != want {
		t.Fatalf("empty now on 3.0.0 = %s; want %s", got, want)
	}
}

// springGen makes Spring's calls: the keys Spring names, its arguments
// (now empty, or the client's seconds for the texts that read it), and now
// and then a key name twice, too few keys or arguments, an odd argument, or
// EVALSHA_RO.
func springGen(s *Script) func(rng *rand.Rand, w *world, names []string) step {
	return func(rng *rand.Rand, w *world, names []string) step {
		keys := []string{names[rng.IntN(len(names))], names[rng.IntN(len(names))]}
		now := ""
		if s.spring.now == nowArg || rng.IntN(3) == 0 {
			now = itoa(w.now/1e9 + rng.Int64N(5) - 2) // a client's clock is off by a little
		}
		argv := []string{
			pick(rng, 0.02, itoa(1+rng.Int64N(10))),
			pick(rng, 0.02, itoa(1+rng.Int64N(20))),
			pick(rng, 0.02, now),
			pick(rng, 0.02, itoa(1+rng.Int64N(5))),
		}
		if rng.IntN(100) == 0 {
			keys = keys[:rng.IntN(2)]
		}
		if rng.IntN(100) == 0 {
			argv = argv[:rng.IntN(4)]
		}
		return step{s: s, keys: keys, argv: argv, ro: rng.IntN(100) == 0}
	}
}

func TestSpringMatchesRedis(t *testing.T) {
	names := []string{"request_rate_limiter.{a}.tokens", "request_rate_limiter.{a}.timestamp",
		"request_rate_limiter.{b}.tokens", "request_rate_limiter.{b}.timestamp"}
	for _, s := range springScripts {
		t.Run(s.Versions, func(t *testing.T) {
			runDifferential(t, 2000, names, springGen(s))
		})
	}
}

// The comparison runs a TIME variant of the texts that read TIME; this runs
// the unmodified texts with Spring's empty now, reading Redis's own clock.
func TestSpringUnmodifiedTextReadsTIME(t *testing.T) {
	srv := startRedis(t)
	ctx := context.Background()
	for _, s := range springScripts[1:] { // 3.0.0 takes now from ARGV
		keys := []string{"compat-test:" + s.SHA1 + ".tokens", "compat-test:" + s.SHA1 + ".timestamp"}
		before := time.Now()
		got, err := srv.rdb.Eval(ctx, s.Text, keys, "10", "20", "", "3").Result() // Spring on NOSCRIPT
		after := time.Now()
		if d := fromRedis(got, err); d != "[1 17]" {
			t.Fatalf("%s: Redis = %s; want [1 17]", s.Versions, d)
		}
		k1, k2 := &Key{}, &Key{}
		if d := play(s, after.UnixNano(), []*Key{k1, k2}, "10", "20", "", "3"); d != "[1 17]" {
			t.Fatalf("%s: native = %s; want [1 17]", s.Versions, d)
		}
		stamp, err := srv.rdb.Get(ctx, keys[1]).Result()
		if err != nil || (stamp != itoa(before.Unix()) && stamp != itoa(after.Unix())) {
			t.Fatalf("%s: GET timestamp = %q, %v; want TIME's seconds, %d or %d", s.Versions, stamp, err, before.Unix(), after.Unix())
		}
		if got := valueString(k2, after.UnixNano()); got != itoa(after.Unix()) {
			t.Fatalf("%s: native timestamp = %q; want %d", s.Versions, got, after.Unix())
		}
	}
}

// TestSpringTimeWithOneCallAcrossSeconds: one Call reused for every run,
// as a batch of script calls reuses it, reads TIME's seconds afresh when
// the instant enters another second: the replies and the keys are those
// of a new Call for each run, at instants across many seconds and back.
func TestSpringTimeWithOneCallAcrossSeconds(t *testing.T) {
	for _, sha := range []string{SpringSHA1v306, SpringSHA1v430} {
		s := Known.Lookup([]byte(sha))
		reused := &Call{Keys: make([]Key, 2), Argv: [][]byte{[]byte("2"), []byte("4"), {}, []byte("1")}}
		keys := []*Key{{}, {}}
		rng := rand.New(rand.NewPCG(7, 8))
		now := t0
		for i := 0; i < 2000; i++ {
			now += rng.Int64N(int64(1500*time.Millisecond)) - int64(300*time.Millisecond)
			want := play(s, now, keys, "2", "4", "", "1")
			reused.Now = now
			s.Run(reused)
			if got := reused.Reply.String(); got != want {
				t.Fatalf("%s step %d at %d: the reused Call answers %s; a new one %s", sha, i, now, got, want)
			}
			for j := range reused.Keys {
				if reused.Keys[j].Written {
					reused.Keys[j].Written = false
				}
				if got, want := valueString(&reused.Keys[j], now), valueString(keys[j], now); got != want {
					t.Fatalf("%s step %d: key %d is %s with the reused Call, %s with new ones", sha, i, j+1, got, want)
				}
			}
		}
	}
}

// TestTimeSecondsIsTheDecimalOfTheInstant: TIME's seconds as a script
// sees them, from one Call reused at instants across many seconds (and
// before 1970), are the decimal string of the instant's unix seconds and
// convert to that number.
func TestTimeSecondsIsTheDecimalOfTheInstant(t *testing.T) {
	c := &Call{}
	r := run{c: c}
	rng := rand.New(rand.NewPCG(9, 10))
	now := t0
	for i := 0; i < 5000; i++ {
		switch i {
		case 2500:
			now = -int64(3 * time.Second / 2)
		case 4000:
			now = 0
		}
		now += rng.Int64N(int64(1500*time.Millisecond)) - int64(300*time.Millisecond)
		c.Now = now
		v := r.timeSeconds()
		sec := time.Unix(0, now).Unix()
		f, ok := v.number()
		if v.t != tStr || string(v.s) != itoa(sec) || !ok || f != float64(sec) {
			t.Fatalf("TIME's seconds at %d = %s %q (number %v, %v); want the string %d", now, v.t, v.s, f, ok, sec)
		}
	}
}

func BenchmarkSpring(b *testing.B) {
	s := Known.Lookup([]byte(SpringSHA1v430))
	c := &Call{Keys: make([]Key, 2), Argv: [][]byte{[]byte("10"), []byte("20"), {}, []byte("1")}}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		c.Now = t0 + int64(i)*int64(10*time.Millisecond)
		s.Run(c)
		c.Keys[0].Written, c.Keys[1].Written = false, false
	}
}
