package policy

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/algorithms"
)

func TestPolicyNames(t *testing.T) {
	good := []string{"a", "free", "api:free", "tier.pro-2_x", strings.Repeat("x", 128), "A:B.c-d_9"}
	bad := []string{"", strings.Repeat("x", 129), "a b", "a/b", "é", "a*", "a\n", "{x}"}
	for _, n := range good {
		if !ValidName([]byte(n)) || CheckName(n) != nil {
			t.Errorf("%q refused", n)
		}
	}
	for _, n := range bad {
		if ValidName([]byte(n)) || !errors.Is(CheckName(n), ErrInvalidName) {
			t.Errorf("%q accepted", n)
		}
	}
	if err := CheckName("a b"); err.Error() != "invalid policy name 'a b': use 1 to 128 of the characters A-Z a-z 0-9 _ . : -" {
		t.Errorf("text: %v", err)
	}
	if err := NoSuchPolicy("x"); err.Error() != "no such policy 'x'" || !errors.Is(err, ErrNoSuchPolicy) {
		t.Errorf("NoSuchPolicy: %v", err)
	}
	if allocs := testing.AllocsPerRun(100, func() { ValidName([]byte("api:free")) }); allocs != 0 {
		t.Errorf("ValidName allocates %v times", allocs)
	}
}

func TestPolicyValidate(t *testing.T) {
	ok := Policy{Name: "p", Limit: algorithms.Limit{Algo: algorithms.Concurrency, Count: 1, Period: 1}}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []Policy{
		{Name: "p", Limit: algorithms.Limit{Algo: algorithms.Throttle, Count: 1, Period: 1}},
		{Name: "p", Limit: algorithms.Limit{Algo: algorithms.Token, Count: 0, Period: 1}},
		{Name: "p", Limit: algorithms.Limit{Algo: algorithms.Token, Count: 1, Period: 0}},
		{Name: "p", Limit: ok.Limit, Description: strings.Repeat("d", MaxDescriptionLen+1)},
		{Name: "p q", Limit: ok.Limit},
	} {
		if p.Validate() == nil {
			t.Errorf("%+v accepted", p)
		}
	}
}

func TestResolveAndReplyForEachMode(t *testing.T) {
	base := algorithms.Limit{Algo: algorithms.Token, Count: 10, Period: int64(100 * time.Millisecond)}
	own := algorithms.Limit{Algo: algorithms.Fixed, Count: 3, Period: int64(time.Minute)}
	p := &Policy{Name: "free", Limit: base}
	shadow := &Policy{Name: "soft", Limit: base, Shadow: true}
	cases := []struct {
		p     *Policy
		o     *Override
		limit algorithms.Limit
		mode  Mode
	}{
		{p, nil, base, ModeEnforce},
		{shadow, nil, base, ModeShadow},
		{p, &Override{Kind: OverrideLimit, Limit: own}, own, ModeEnforce},
		{shadow, &Override{Kind: OverrideLimit, Limit: own}, own, ModeShadow},
		{shadow, &Override{Kind: OverrideUnlimited}, base, ModeUnlimited},
		{p, &Override{Kind: OverrideDeny}, base, ModeDeny},
	}
	for i, c := range cases {
		if l, m := c.p.Resolve(c.o); l != c.limit || m != c.mode {
			t.Errorf("case %d: Resolve = %+v %v; want %+v %v", i, l, m, c.limit, c.mode)
		}
	}
	denied := algorithms.Result{Allowed: false, Limit: 10, Remaining: 0, RetryAfter: 50, ResetAfter: 900}
	if r, would := Reply(ModeEnforce, base, denied); r != denied || would {
		t.Errorf("enforce: %+v %v", r, would)
	}
	if r, would := Reply(ModeShadow, base, denied); !r.Allowed || r.RetryAfter != 0 || r.ResetAfter != 900 || !would {
		t.Errorf("shadow: %+v %v", r, would)
	}
	if r, would := Reply(ModeUnlimited, base, denied); r != (algorithms.Result{Allowed: true, Limit: 10, Remaining: 10}) || would {
		t.Errorf("unlimited: %+v %v", r, would)
	}
	if r, _ := Reply(ModeDeny, base, algorithms.Result{Allowed: true}); r != (algorithms.Result{Limit: 10, RetryAfter: algorithms.NeverNS}) {
		t.Errorf("deny: %+v", r)
	}
	for m, s := range map[Mode]string{ModeEnforce: "enforce", ModeShadow: "shadow", ModeUnlimited: "unlimited", ModeDeny: "deny"} {
		if m.String() != s {
			t.Errorf("%d: %s", m, m)
		}
	}
}

func TestOverridePackRoundTrips(t *testing.T) {
	cases := []Override{
		{Kind: OverrideUnlimited},
		{Kind: OverrideDeny, Expire: 1},
		{Kind: OverrideLimit, Limit: algorithms.Limit{Algo: algorithms.Token, Count: 1, Period: 1}},
		{Kind: OverrideLimit, Limit: algorithms.Limit{Algo: algorithms.Sliding, Count: MaxOverrideCount, Period: math.MaxInt64}, Expire: math.MaxInt64 - 1},
		{Kind: OverrideLimit, Limit: algorithms.Limit{Algo: algorithms.Log, Count: 60, Period: int64(time.Minute)}, Expire: 1_700_000_000e9},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 10000; i++ {
		o := Override{Kind: OverrideKind(1 + rng.IntN(3)), Expire: rng.Int64N(math.MaxInt64)}
		if o.Kind == OverrideLimit {
			o.Limit = algorithms.Limit{Algo: algorithms.Algo(1 + rng.IntN(5)), Count: 1 + rng.Int64N(MaxOverrideCount), Period: 1 + rng.Int64N(math.MaxInt64-1)}
			if a := o.Limit.Algo; a == algorithms.Token || a == algorithms.Leaky { // a bucket fills within MaxRefill
				o.Limit.Period = 1 + rng.Int64N(algorithms.MaxRefill/o.Limit.Count)
			}
		}
		cases = append(cases, o)
	}
	for _, o := range cases {
		w, err := o.Pack()
		if err != nil {
			t.Fatalf("Pack(%+v): %v", o, err)
		}
		if w[1] <= 0 || w[0] <= 0 {
			t.Fatalf("Pack(%+v) = %v: want positive words", o, w)
		}
		if o.Expire == 0 && w[0] != math.MaxInt64 || o.Expire != 0 && w[0] != o.Expire {
			t.Fatalf("Pack(%+v): w[0] = %d; want the expiry", o, w[0])
		}
		back, err := UnpackOverride(w)
		if err != nil || back != o {
			t.Fatalf("UnpackOverride(Pack(%+v)) = %+v, %v", o, back, err)
		}
		if o.Kind != OverrideLimit && w[2] != 0 {
			t.Fatalf("%s packs a third word", o.Kind)
		}
	}
}

func TestOverrideRefusals(t *testing.T) {
	for _, o := range []Override{
		{},
		{Kind: 4},
		{Kind: OverrideDeny, Limit: algorithms.Limit{Algo: algorithms.Token, Count: 1, Period: 1}},
		{Kind: OverrideLimit, Limit: algorithms.Limit{Algo: algorithms.Token, Count: MaxOverrideCount + 1, Period: 1}},
		{Kind: OverrideLimit, Limit: algorithms.Limit{Algo: algorithms.Throttle, Count: 1, Period: 1}},
		{Kind: OverrideUnlimited, Expire: -1},
	} {
		if _, err := o.Pack(); err == nil {
			t.Errorf("Pack(%+v) accepted", o)
		}
	}
	for _, w := range [][3]int64{
		{0, 2, 0},                            // expiry 0 is never written
		{-5, 2, 0},                           // negative expiry
		{math.MaxInt64, 2, 7},                // UNLIMITED with a period
		{math.MaxInt64, 2 | 1<<8, 0},         // UNLIMITED with an algorithm
		{math.MaxInt64, 1 | 1<<8, 1},         // a limit with count 0
		{math.MaxInt64, 9, 0},                // unknown kind
		{math.MaxInt64, 1 | 7<<8 | 1<<16, 1}, // throttle
	} {
		if o, err := UnpackOverride(w); !errors.Is(err, ErrCorrupt) {
			t.Errorf("UnpackOverride(%v) = %+v, %v; want ErrCorrupt", w, o, err)
		}
	}
	o := Override{Kind: OverrideDeny, Expire: 100}
	if !o.Live(99) || o.Live(100) || !(&Override{Kind: OverrideDeny}).Live(math.MaxInt64) {
		t.Errorf("Live")
	}
}

func TestEnvoyLimitToExactLimit(t *testing.T) {
	cases := []struct {
		l     EnvoyLimit
		algo  algorithms.Algo
		burst int64
		want  algorithms.Limit
	}{
		{EnvoyLimit{10, UnitSecond}, algorithms.Fixed, 0, algorithms.Limit{Algo: algorithms.Fixed, Count: 10, Period: 1e9}},
		{EnvoyLimit{5, UnitYear}, algorithms.Sliding, 0, algorithms.Limit{Algo: algorithms.Sliding, Count: 5, Period: 365 * 86400e9}},
		{EnvoyLimit{3, UnitMinute}, algorithms.Token, 0, algorithms.Limit{Algo: algorithms.Token, Count: 3, Period: 20e9}},
		{EnvoyLimit{7, UnitSecond}, algorithms.Leaky, 2, algorithms.Limit{Algo: algorithms.Leaky, Count: 2, Period: 142857143}}, // rounded up
		{EnvoyLimit{1_000_000_000, UnitSecond}, algorithms.Token, 0, algorithms.Limit{Algo: algorithms.Token, Count: 1e9, Period: 1}},
	}
	for _, c := range cases {
		if got, err := c.l.Limit(c.algo, c.burst); err != nil || got != c.want {
			t.Errorf("%+v.Limit(%s, %d) = %+v, %v; want %+v", c.l, AlgoName(c.algo), c.burst, got, err, c.want)
		}
	}
	for _, c := range []struct {
		l     EnvoyLimit
		algo  algorithms.Algo
		burst int64
	}{
		{EnvoyLimit{0, UnitSecond}, algorithms.Fixed, 0},
		{EnvoyLimit{1, UnitUnknown}, algorithms.Fixed, 0},
		{EnvoyLimit{1, Unit(8)}, algorithms.Fixed, 0},
		{EnvoyLimit{1_000_000_001, UnitSecond}, algorithms.Token, 0},
		{EnvoyLimit{1, UnitSecond}, algorithms.Fixed, 2},
		{EnvoyLimit{1, UnitSecond}, algorithms.Concurrency, 0},
	} {
		if _, err := c.l.Limit(c.algo, c.burst); !errors.Is(err, ErrBadLimit) {
			t.Errorf("%+v.Limit(%s, %d) accepted", c.l, AlgoName(c.algo), c.burst)
		}
	}
	for u := UnitSecond; u <= UnitWeek; u++ {
		if back, ok := ParseUnit([]byte(strings.ToUpper(u.String()))); !ok || back != u {
			t.Errorf("ParseUnit(%s) = %v %v", u, back, ok)
		}
	}
	if _, ok := ParseUnit([]byte("unknown")); ok {
		t.Errorf("unknown is a unit")
	}
	if q, w := Quota(algorithms.Limit{Algo: algorithms.Token, Count: 20, Period: 1e8}); q != 20 || w != 2e9 {
		t.Errorf("Quota(token) = %d %d", q, w)
	}
	if q, w := Quota(algorithms.Limit{Algo: algorithms.Fixed, Count: 100, Period: 60e9}); q != 100 || w != 60e9 {
		t.Errorf("Quota(fixed) = %d %d", q, w)
	}
	if _, w := Quota(algorithms.Limit{Algo: algorithms.Leaky, Count: math.MaxInt64, Period: 2}); w != math.MaxInt64 {
		t.Errorf("Quota saturates: %d", w)
	}
}
