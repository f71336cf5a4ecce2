package compat

import (
	"context"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// trickyNumbers are strings at the edges of strtod's and string2ll's
// grammars, compared with Redis's Lua.
var trickyNumbers = []string{
	"", " ", "0", "-0", "+0", "1", "-1", "+5", "++5", "--5", "007", "1.5", ".5", "5.", ".", "-.5",
	"1e3", "1E3", "1e", "1e+", "1e-2", "1e+17", "4e-400", "1e400", "-1e400", "1e-320",
	"0x", "0x10", "0X1A", "0xg", "0x.8", "0x1p4", "0x1P-2", "0x1.8", "0x8p", "0x1p", "0xfffffffffffffffff",
	"inf", "-inf", "INF", "infinity", "inFiNity", "infinit", "nan", "-nan", "NaN", "nan(123)", "nan(", "nan(1",
	" 12", "12 ", " 12 x", "\t\v\f\r\n3\n", "3\x00x", "7\x01", "1_000", "1,5", "٣",
	"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
	"99999999999999999999", "12345678901234567890123", "0.1", "0.10000000000000001",
	"123456789012345678", "9007199254740993", "2.2250738585072014e-308", "4.9406564584124654e-324",
	"1.7976931348623157e308", "1.7976931348623159e308", "0.000001", "100000000000000000000000",
	"1" + strings.Repeat("0", 400), "0." + strings.Repeat("0", 400) + "1",
}

// randomNumberString builds strings from the characters number parsers care
// about.
func randomNumberString(rng *rand.Rand) string {
	const alphabet = "0123456789.eE+-xXpPaAfFinINtyY \t"
	n := 1 + rng.IntN(12)
	b := make([]byte, n)
	for i := range b {
		if rng.IntN(3) == 0 {
			b[i] = "0123456789"[rng.IntN(10)]
		} else {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
	}
	return string(b)
}

// TestTonumberMatchesRedis compares str2d with Lua's tonumber inside Redis,
// exactly ("%.17g" of the result, which reads back to the same number).
func TestTonumberMatchesRedis(t *testing.T) {
	srv := startRedis(t)
	rng := rand.New(rand.NewPCG(1, 2))
	inputs := append([]string(nil), trickyNumbers...)
	for i := 0; i < 3000; i++ {
		inputs = append(inputs, randomNumberString(rng))
	}
	const script = `local r = {}
for i = 1, #ARGV do
  local n = tonumber(ARGV[i])
  if n == nil then r[i] = 'nil' else r[i] = string.format('%.17g', n) end
end
return r`
	args := make([]any, len(inputs))
	for i, s := range inputs {
		args[i] = s
	}
	res, err := srv.rdb.Eval(context.Background(), script, nil, args...).StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range inputs {
		got := "nil"
		if f, ok := str2d([]byte(s)); ok {
			got = string(appendG(nil, f, 17))
		}
		if got != res[i] {
			t.Errorf("tonumber(%q) = %s natively, %s in Redis", s, got, res[i])
		}
	}
}

// interestingFloats are numbers at the edges of the formats.
var interestingFloats = []float64{
	0, math.Copysign(0, -1), 1, -1, 0.1, 1.0 / 3, 2.0 / 3, 0.5, 123456.5, 1e14, 1e15, 1e16, 1e17,
	99999999999999.5, 999999999999999.9, 1e16 + 2, 1<<53 - 1, 1 << 53, 1<<53 + 2, 1 << 62, 1 << 63,
	-(1 << 63), 9.2233720368547748e18, 1e-4, 1e-5, 0.000123456789012345, 1.00000000000005,
	5e-324, 2.2250738585072014e-308, math.MaxFloat64, math.Inf(1), math.Inf(-1), 289137600.22345603,
	0.10000002384185791, -5.9604644775390625e-08, 3.9, -3.9, -0.5, 1e300, 12345678901234567890,
}

// TestNumberFormatsMatchRedis compares the three things Redis does with a
// Lua number: tostring ("%.14g"), the string a command receives ("%.17g" in
// 7.0) and the integer a returned number becomes.
func TestNumberFormatsMatchRedis(t *testing.T) {
	srv := startRedis(t)
	rng := rand.New(rand.NewPCG(3, 4))
	nums := append([]float64(nil), interestingFloats...)
	for i := 0; i < 2000; i++ {
		switch i % 5 {
		case 4: // an integer of 1 to 18 digits, either sign
			n := float64(rng.Int64N(int64(math.Pow(10, float64(1+rng.IntN(18))))))
			nums = append(nums, n*float64(1-2*rng.IntN(2)))
		case 0:
			nums = append(nums, math.Float64frombits(rng.Uint64()))
		case 1:
			nums = append(nums, rng.NormFloat64()*math.Pow(10, float64(rng.IntN(40)-20)))
		case 2:
			nums = append(nums, float64(rng.Int64N(1<<60))/float64(int64(1)<<rng.IntN(60)))
		default:
			nums = append(nums, math.Round(rng.Float64()*1e6)/1e3)
		}
	}
	args := []any{}
	for _, f := range nums {
		switch {
		case f != f && math.Signbit(f):
			args = append(args, "-nan")
		case f != f:
			args = append(args, "nan")
		default:
			args = append(args, strconv.FormatFloat(f, 'g', -1, 64))
		}
	}
	// tostring, the %.17g argument (via SET and GET), and the reply integer
	const script = `local r = {}
for i = 1, #ARGV do
  local n = tonumber(ARGV[i])
  redis.call('SET', KEYS[1], n)
  r[3*i-2] = tostring(n)
  r[3*i-1] = redis.call('GET', KEYS[1])
  r[3*i] = n
end
return r`
	res, err := srv.rdb.Eval(context.Background(), script, []string{"compat-test:fmt"}, args...).Slice()
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range nums {
		if got, want := string(appendToString(nil, f)), res[3*i]; got != want {
			t.Errorf("tostring(%s) = %s natively, %v in Redis", args[i], got, want)
		}
		want := res[3*i+1].(string)
		if got := string(appendNumberArg(nil, f)); got != want && !srv.v72 {
			t.Errorf("SET k %s stores %s natively, %s in Redis", args[i], got, want)
		}
		if got := string(NumberValue(f).AppendString(nil)); got != want && !srv.v72 {
			t.Errorf("NumberValue(%s) = %s, Redis stores %s", args[i], got, want)
		}
		if got, want := luaInt(f), res[3*i+2].(int64); got != want {
			t.Errorf("return %s = %d natively, %d in Redis", args[i], got, want)
		}
	}
}

// TestAppendGOfIntegersIsTheGeneralFormat: the integers that appendG
// prints as integers (at most prec digits) print as strconv's %g, the
// format TestNumberFormatsMatchRedis holds to Redis, and the others (more
// digits, -0, fractions) are left to it.
func TestAppendGOfIntegersIsTheGeneralFormat(t *testing.T) {
	nums := []float64{0, math.Copysign(0, -1), 1, -1, 0.5, -2.5, 1e13, 1e14 - 1, 1e14, 1e14 + 1, -(1e14 - 1), -1e14,
		1e16, 1e17 - 1, 1e17, -(1e17 - 1), 1<<53 + 2, 99999999999999.5, 1e300, math.MaxInt64}
	rng := rand.New(rand.NewPCG(11, 12))
	for i := 0; i < 100_000; i++ {
		n := float64(rng.Int64N(int64(math.Pow(10, float64(1+rng.IntN(18))))))
		nums = append(nums, n, -n)
	}
	for _, prec := range []int{14, 17} {
		for _, f := range nums {
			got := string(appendG(nil, f, prec))
			if want := strconv.FormatFloat(f, 'g', prec, 64); got != want {
				t.Fatalf("appendG(%v, %d) = %s; %%.%dg is %s", f, prec, got, prec, want)
			}
		}
	}
}

// FuzzStr2d checks str2d against strconv on the plain decimal strings both
// accept, and that every number it reads is read back from its "%.17g".
func FuzzStr2d(f *testing.F) {
	for _, s := range trickyNumbers {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, ok := str2d(b)
		trimmed := strings.Trim(string(b), " \t\n\v\f\r")
		plain := trimmed != "" && strings.Trim(trimmed, "0123456789.eE+-") == "" &&
			!strings.Contains(string(b), "\x00")
		if p, err := strconv.ParseFloat(trimmed, 64); plain && (err == nil || errorsIsRange(err)) {
			if !ok || (v != p && !(v == 0 && p == 0)) {
				t.Fatalf("str2d(%q) = %v, %v; strconv reads %v", b, v, ok, p)
			}
		}
		if ok {
			back, ok2 := str2d(appendG(nil, v, 17))
			if !ok2 || math.Float64bits(back) != math.Float64bits(v) && !(v != v && back != back && math.Signbit(v) == math.Signbit(back)) {
				t.Fatalf("str2d(%q) = %v, which reads back as %v", b, v, back)
			}
		}
	})
}

// shortNumbers are strings at the edges of str2dShort's grammar.
var shortNumbers = []string{
	"0", "-0", "0.0", "-0.0", "1", "-1", "5.", ".5", "-.5", ".", "-", "-.", "", "1.2.3", "--1", "+1",
	"999999999999999", "9999999999999999", "-999999999999999", "99999999999999.9", ".999999999999999",
	"0.000000000000001", "0.0000000000000001", "1772366400", "1772366400123", "0.1", "0.3", "2.675",
	"123456789012345", "1234567890123456", "900719925474099", "1e3", " 1", "1 ", "1\x00",
}

// TestStr2dShortIsExact holds str2dShort, bit for bit, to the exact parser
// on every string it reads: short numbers at its edges and random strings
// of digits, dots and minus signs.
func TestStr2dShortIsExact(t *testing.T) {
	check := func(s string) {
		f, ok := str2dShort([]byte(s))
		if !ok {
			return
		}
		g, okExact := str2dExact([]byte(s))
		if !okExact || math.Float64bits(f) != math.Float64bits(g) {
			t.Fatalf("str2dShort(%q) = %v (%#x); the exact parser reads %v (%#x), %v",
				s, f, math.Float64bits(f), g, math.Float64bits(g), okExact)
		}
	}
	read := 0
	for _, s := range shortNumbers {
		check(s)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	b := make([]byte, 0, 18)
	for i := 0; i < 300_000; i++ {
		b = b[:0]
		if rng.IntN(4) == 0 {
			b = append(b, '-')
		}
		n := 1 + rng.IntN(17)
		dot := rng.IntN(n + 1)
		for j := 0; j < n; j++ {
			if j == dot && rng.IntN(8) != 0 {
				b = append(b, '.')
			}
			b = append(b, "0123456789"[rng.IntN(10)])
		}
		if _, ok := str2dShort(b); ok {
			read++
		}
		check(string(b))
	}
	if read < 100_000 {
		t.Fatalf("str2dShort read only %d of the random strings; the test covers too little", read)
	}
	for _, s := range []string{"1e3", " 1", "1 ", "+1", "0x10", "1\x00", "9999999999999999", "inf"} {
		if _, ok := str2dShort([]byte(s)); ok {
			t.Errorf("str2dShort(%q) reads it; it must leave it to the exact parser", s)
		}
	}
}

// FuzzStr2dShort checks that whatever str2dShort reads, the exact parser
// reads to the same bits.
func FuzzStr2dShort(f *testing.F) {
	for _, s := range shortNumbers {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, ok := str2dShort(b)
		if !ok {
			return
		}
		w, okExact := str2dExact(b)
		if !okExact || math.Float64bits(v) != math.Float64bits(w) {
			t.Fatalf("str2dShort(%q) = %v; the exact parser reads %v, %v", b, v, w, okExact)
		}
	})
}

func errorsIsRange(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func BenchmarkStr2d(b *testing.B) {
	in := [][]byte{[]byte("10"), []byte("0.001"), []byte("1772366400"), []byte("289137600.22345603")}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		str2d(in[i%len(in)])
	}
}

// BenchmarkStr2dSpringArgs reads the arguments Spring's script converts
// on every call (replenishRate, burstCapacity, requestedTokens, TIME's
// seconds).
func BenchmarkStr2dSpringArgs(b *testing.B) {
	in := [][]byte{[]byte("1000"), []byte("100000"), []byte("1"), []byte("1772366400")}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		str2d(in[i%len(in)])
	}
}

// BenchmarkAppendToString formats what redis_rate's scripts return with
// tostring: its constant -1, a whole number of seconds and a fraction.
func BenchmarkAppendToString(b *testing.B) {
	in := []float64{-1, 60, 0.099999904632568}
	var buf [32]byte
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		appendToString(buf[:0], in[i%len(in)])
	}
}
