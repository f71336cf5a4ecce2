package compat

import (
	"context"
	"math"
	"testing"
	"unsafe"

	"github.com/sluice-rl/sluice/internal/parse"
)

func TestValueIsSmallAndPointerFree(t *testing.T) {
	if n := unsafe.Sizeof(Value{}); n != 80 {
		t.Fatalf("Value is %d bytes; want 80", n)
	}
	// A Key is its Value, its expiry, and a list's elements by reference.
	if n := unsafe.Sizeof(Key{}); n > 120 {
		t.Fatalf("Key is %d bytes; want at most 120", n)
	}
}

func TestStringValueKeepsTheExactString(t *testing.T) {
	cases := []struct {
		in   string
		kind Kind
	}{
		{"0", Int}, {"-7", Int}, {"9223372036854775807", Int}, {"-9223372036854775808", Int},
		{"0.5", Float}, {"0.10000000000000001", Float}, {"1e+17", Float}, {"-0", Float},
		{"inf", Float}, {"-nan", Float}, {"289137600.22345603", Float},
		{"", Bytes}, {"007", Bytes}, {"+5", Bytes}, {"5.0", Bytes}, {"0.1", Bytes}, {" 7", Bytes},
		{"1e17", Bytes}, {"hello", Bytes}, {"9223372036854775808", Bytes}, {"abcdefghijklmnopqrstuv", Bytes},
	}
	for _, c := range cases {
		v, ok := StringValue([]byte(c.in))
		if !ok || v.Kind() != c.kind || string(v.AppendString(nil)) != c.in {
			t.Errorf("StringValue(%q) = kind %d %q, %v; want kind %d, the same string", c.in, v.Kind(), v.AppendString(nil), ok, c.kind)
		}
		if w, ok := UnpackExt(v.Pack(), v.PackExt(nil)); !ok || w != v {
			t.Errorf("UnpackExt(Pack(%q), PackExt) = %q, %v", c.in, w.AppendString(nil), ok)
		}
	}
	// A lock's token (redis-py: uuid1().hex), 23 bytes, and 64 bytes are kept;
	// 65 are not.
	long := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, n := range []int{23, 29, 30, 32, 36, 64} {
		v, ok := StringValue([]byte(long[:n]))
		if !ok || string(v.AppendString(nil)) != long[:n] {
			t.Fatalf("StringValue of %d bytes = %q, %v", n, v.AppendString(nil), ok)
		}
		ext := v.PackExt(nil)
		if len(ext) != (n-22+7)/8 {
			t.Fatalf("%d bytes: PackExt takes %d words; want %d", n, len(ext), (n-22+7)/8)
		}
		if w, ok := UnpackExt(v.Pack(), ext); !ok || w != v {
			t.Fatalf("%d bytes: UnpackExt = %q, %v", n, w.AppendString(nil), ok)
		}
		if _, ok := UnpackExt(v.Pack(), ext[:len(ext)-1]); ok {
			t.Fatalf("%d bytes: UnpackExt with a word missing is ok; want refused", n)
		}
	}
	if _, ok := StringValue([]byte(long + "x")); ok {
		t.Error("StringValue of 65 non-numeric bytes is ok; want refused (MaxBytes is 64)")
	}
}

func TestNumberValueIsTheStringRedisStores(t *testing.T) {
	cases := []struct {
		f    float64
		want string
		kind Kind
	}{
		{5, "5", Int}, {0, "0", Int}, {math.Copysign(0, -1), "-0", Float}, {0.1, "0.10000000000000001", Float},
		{1e16, "10000000000000000", Int}, {1e17, "1e+17", Float}, {1 << 62, "4.6116860184273879e+18", Float},
		{math.Inf(1), "inf", Float}, {defaultNaN, "-nan", Float},
	}
	for _, c := range cases {
		v := NumberValue(c.f)
		if got := string(v.AppendString(nil)); got != c.want || v.Kind() != c.kind {
			t.Errorf("NumberValue(%v) = %q kind %d; want %q kind %d", c.f, got, v.Kind(), c.want, c.kind)
		}
	}
}

func FuzzStringValue(f *testing.F) {
	for _, s := range trickyNumbers {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, ok := StringValue(b)
		if !ok {
			if len(b) <= MaxBytes {
				t.Fatalf("StringValue(%q) refused a short string", b)
			}
			return
		}
		if got := v.AppendString(nil); string(got) != string(b) {
			t.Fatalf("StringValue(%q) reads back as %q", b, got)
		}
		if w, ok := UnpackExt(v.Pack(), v.PackExt(nil)); !ok || w != v {
			t.Fatalf("Unpack(Pack(StringValue(%q))) = %q, %v", b, w.AppendString(nil), ok)
		}
		if _, isInt := parse.Int(b); isInt != (v.Kind() == Int) {
			t.Fatalf("StringValue(%q) is kind %d; INCRBY reads it: %v", b, v.Kind(), isInt)
		}
	})
}

func TestUnpackRefusesUnknownWords(t *testing.T) {
	for _, w := range [][3]int64{{0xff}, {int64(Bytes) | 23<<8}} {
		if _, ok := Unpack(w); ok {
			t.Errorf("Unpack(%x) is ok; want refused", w)
		}
	}
}

func TestKeyTTLsFollowRedisMilliseconds(t *testing.T) {
	ms := int64(1_000_000)
	now := t0 + 400_000 // 0.4 ms into a millisecond
	k := &Key{}
	k.Set(now, IntValue(1), 1500)
	steps := []struct {
		at        int64
		pttl, ttl int64
		live      bool
		what      string
	}{
		{now, 1500, 2, true, "TTL rounds 1.5 s up"},
		{now + 1000*ms, 500, 1, true, "TTL rounds 0.5 s up"},
		{t0 + 1500*ms, 0, 0, true, "the last millisecond: live, PTTL 0"},
		{t0 + 1501*ms - 1, 0, 0, true, "still the last millisecond"},
		{t0 + 1501*ms, -2, -2, false, "gone"},
	}
	for _, s := range steps {
		if got := k.PTTL(s.at); got != s.pttl || k.TTL(s.at) != s.ttl || k.Live(s.at) != s.live {
			t.Errorf("%s: PTTL %d TTL %d live %v; want %d %d %v", s.what, got, k.TTL(s.at), k.Live(s.at), s.pttl, s.ttl, s.live)
		}
	}
	k.Set(now, IntValue(1), 0)
	if k.PTTL(now) != -1 || k.TTL(now) != -1 || k.Expire != NoExpire {
		t.Errorf("SET without TTL: PTTL %d, Expire %d; want -1, NoExpire", k.PTTL(now), k.Expire)
	}
	k.Set(now, IntValue(1), math.MaxInt64/2)
	if k.Expire != NoExpire-1 || !k.Live(math.MaxInt64-2) {
		t.Errorf("a TTL beyond 2262: Expire %d; want NoExpire-1", k.Expire)
	}
}

// TestKeyIsLiveDuringItsLastMillisecond checks on Redis the rule Key
// follows: a key expiring at the current millisecond is still there with
// PTTL 0; one that expired a millisecond ago is gone. (A script sees the
// time frozen at its start, so both are exact.)
func TestKeyIsLiveDuringItsLastMillisecond(t *testing.T) {
	srv := startRedis(t)
	const script = `local t = redis.call('TIME')
local ms = t[1] * 1000 + math.floor(t[2] / 1000) + tonumber(ARGV[1])
redis.call('SET', KEYS[1], 5, 'PXAT', ms)
return {redis.call('PTTL', KEYS[1]), redis.call('EXISTS', KEYS[1])}`
	ctx := context.Background()
	for _, c := range []struct{ offset, pttl, exists string }{{"0", "0", "1"}, {"-1", "-2", "0"}} {
		got, err := srv.rdb.Eval(ctx, script, []string{"compat-test:edge"}, c.offset).Result()
		if d := fromRedis(got, err); d != "["+c.pttl+" "+c.exists+"]" {
			t.Fatalf("expire at now%+s ms: Redis says %s; want [%s %s]", c.offset, d, c.pttl, c.exists)
		}
	}
	k := &Key{Value: IntValue(5), Expire: expireAtMs(unixMs(t0))}
	if k.PTTL(t0) != 0 || !k.Live(t0) {
		t.Fatalf("native: expire at now: PTTL %d, live %v; want 0, true", k.PTTL(t0), k.Live(t0))
	}
	k.Expire = expireAtMs(unixMs(t0) - 1)
	if k.PTTL(t0) != -2 || k.Live(t0) {
		t.Fatalf("native: expire 1 ms ago: PTTL %d, live %v; want -2, false", k.PTTL(t0), k.Live(t0))
	}
}

func TestIncrByKeepsTheTTLAndRefusesWhatRedisRefuses(t *testing.T) {
	k := &Key{}
	k.Set(t0, IntValue(math.MaxInt64-1), 5000)
	if n, err := k.IncrBy(t0, 1); n != math.MaxInt64 || err != nil || k.PTTL(t0) != 5000 {
		t.Fatalf("INCRBY 1 = %d, %v, PTTL %d; want MaxInt64, nil, 5000", n, err, k.PTTL(t0))
	}
	if _, err := k.IncrBy(t0, 1); err != ErrOverflow {
		t.Fatalf("INCRBY past MaxInt64: %v; want %v", err, ErrOverflow)
	}
	k.Set(t0, NumberValue(0.5), 0)
	if _, err := k.IncrBy(t0, 1); err != ErrNotInteger {
		t.Fatalf("INCRBY on 0.5: %v; want %v", err, ErrNotInteger)
	}
	*k = Key{Value: ForeignValue(), Expire: NoExpire}
	if _, err := k.IncrBy(t0, 1); err != ErrWrongType {
		t.Fatalf("INCRBY on another kind: %v; want %v", err, ErrWrongType)
	}
	if _, err := ExpireMs(t0, []byte("9223372036854775"), true, ErrExpireSet); err != ErrExpireSet {
		t.Fatalf("EX 9223372036854775 (overflows with now): %v; want %v", err, ErrExpireSet)
	}
	if ms, err := ExpireMs(t0, []byte("60"), true, ErrExpireSet); ms != 60000 || err != nil {
		t.Fatalf("EX 60 = %d, %v", ms, err)
	}
}
