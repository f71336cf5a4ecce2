package compat

import (
	"math"
	"strconv"
)

// The number rules of the two interpreters a script's numbers pass through:
// Lua 5.1 inside Redis (tonumber, arithmetic on strings, the conversion of a
// returned number to an integer reply) and Redis itself (string2ll, which
// every integer argument of a command goes through). All of them are pure
// and allocate only for hexadecimal floats and decimal strings too long for
// the exact fast path.

// str2d is Lua 5.1's conversion of a string to a number (luaO_str2d, used by
// tonumber and by arithmetic on strings) on glibc: strtod's longest valid
// prefix, then nothing but white space. Lua sees the string as a C string,
// so a NUL byte ends it. ok is false where tonumber gives nil.
//
// luaO_str2d retries a string that strtod stopped at an 'x' with strtoul
// base 16; with glibc's strtod, which reads hexadecimal itself, that retry
// never turns a failure into a success, so it is left out.
func str2d(s []byte) (f float64, ok bool) {
	if f, ok := str2dShort(s); ok {
		return f, true
	}
	return str2dExact(s)
}

// maxShortDigits is how many digits str2dShort reads: their integer is below
// 2⁵³, so a float64 holds it exactly.
const maxShortDigits = 15

// str2dShort is str2d for the strings the libraries send nearly always: an
// optional '-', then at most maxShortDigits digits with at most one '.'
// among them, and nothing else. ok is false for any other string, which
// str2dExact then reads. Its result is bit for bit str2dExact's: the digits
// make an integer m < 2⁵³, held exactly, and m/10^k with k ≤ 15 is one
// correctly rounded IEEE division of two exact numbers, which is the
// correctly rounded value of the decimal, as strtod's.
func str2dShort(s []byte) (float64, bool) {
	i, neg := 0, false
	if len(s) > 0 && s[0] == '-' {
		i, neg = 1, true
	}
	if n := len(s) - i; n == 0 || n > maxShortDigits+1 {
		return 0, false
	}
	var m uint64
	digits, frac, dot := 0, 0, false
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case isDigit(c):
			m = m*10 + uint64(c-'0')
			digits++
			if dot {
				frac++
			}
		case c == '.' && !dot:
			dot = true
		default:
			return 0, false
		}
	}
	if digits == 0 || digits > maxShortDigits {
		return 0, false
	}
	f := float64(m)
	if frac > 0 {
		f /= pow10[frac]
	}
	if neg {
		f = -f // "-0" is -0, as strtod's sign
	}
	return f, true
}

// str2dExact is str2d for every string: glibc's strtod, then the checks
// that tonumber makes.
func str2dExact(s []byte) (f float64, ok bool) {
	for i, c := range s {
		if c == 0 {
			s = s[:i]
			break
		}
	}
	f, n := strtod(s)
	if n == 0 {
		return 0, false
	}
	for _, c := range s[n:] {
		if !isCSpace(c) {
			return 0, false
		}
	}
	return f, true
}

// isCSpace is C's isspace in the C locale.
func isCSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isHex(c byte) bool { return isDigit(c) || ('a' <= c|0x20 && c|0x20 <= 'f') }

// hasPrefixFold reports whether s starts with the lower-case ASCII word w,
// ignoring case.
func hasPrefixFold(s []byte, w string) bool {
	if len(s) < len(w) {
		return false
	}
	for i := 0; i < len(w); i++ {
		if s[i]|0x20 != w[i] {
			return false
		}
	}
	return true
}

// strtod is glibc's strtod in the C locale: it returns the value of the
// longest prefix of s that is a number and that prefix's length, 0 if none
// is (leading white space, a sign, then a decimal or hexadecimal float,
// "inf", "infinity" or "nan" with an optional "(chars)", any case).
func strtod(s []byte) (float64, int) {
	i := 0
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	sign := func(f float64) float64 {
		if neg {
			return -f // flips the sign bit, of a NaN too
		}
		return f
	}
	rest := s[i:]
	switch {
	case hasPrefixFold(rest, "infinity"):
		return sign(math.Inf(1)), i + 8
	case hasPrefixFold(rest, "inf"):
		return sign(math.Inf(1)), i + 3
	case hasPrefixFold(rest, "nan"):
		n := 3
		if len(rest) > 3 && rest[3] == '(' {
			j := 4
			for j < len(rest) && (isDigit(rest[j]) || rest[j] == '_' || ('a' <= rest[j]|0x20 && rest[j]|0x20 <= 'z')) {
				j++
			}
			if j < len(rest) && rest[j] == ')' {
				n = j + 1
			}
		}
		return sign(math.Float64frombits(0x7ff8000000000000)), i + n
	case len(rest) >= 2 && rest[0] == '0' && rest[1]|0x20 == 'x':
		j, digits := 2, 0
		for j < len(rest) && isHex(rest[j]) {
			j, digits = j+1, digits+1
		}
		if j < len(rest) && rest[j] == '.' {
			j++
			for j < len(rest) && isHex(rest[j]) {
				j, digits = j+1, digits+1
			}
		}
		if digits == 0 { // "0x" with no hex digit: the number is the "0"
			return sign(0), i + 1
		}
		mant := j
		j = exponent(rest, j, 'p')
		return sign(parseHex(rest[2:mant], rest[mant:j])), i + j
	}
	j, digits := 0, 0
	for j < len(rest) && isDigit(rest[j]) {
		j, digits = j+1, digits+1
	}
	if j < len(rest) && rest[j] == '.' {
		j++
		for j < len(rest) && isDigit(rest[j]) {
			j, digits = j+1, digits+1
		}
	}
	if digits == 0 {
		return 0, 0
	}
	j = exponent(rest, j, 'e')
	return sign(parseDecimal(rest[:j])), i + j
}

// exponent returns the end of an exponent (letter e, optional sign, at
// least one digit) starting at s[j], or j if there is none.
func exponent(s []byte, j int, letter byte) int {
	if j >= len(s) || s[j]|0x20 != letter {
		return j
	}
	k := j + 1
	if k < len(s) && (s[k] == '+' || s[k] == '-') {
		k++
	}
	if k >= len(s) || !isDigit(s[k]) {
		return j
	}
	for k < len(s) && isDigit(s[k]) {
		k++
	}
	return k
}

// pow10 holds the powers of ten that a float64 represents exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseDecimal returns the correctly rounded value of an unsigned decimal
// float with at least one digit ("12", "0.5", "5.", ".5", "1e-3"), as
// strtod does. Mantissas below 2⁵³ with small exponents are exact with one
// IEEE operation (Clinger's fast path); the rest go through strconv.
func parseDecimal(s []byte) float64 {
	var m uint64
	frac, exp, sigDigits := 0, 0, 0
	dot, fast := false, true
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '.':
			dot = true
			continue
		case isDigit(c):
		default: // the exponent
			e, ok := smallInt(s[i+1:])
			if !ok {
				fast = false
			}
			exp = e
			i = len(s)
			continue
		}
		if m == 0 && c == '0' {
			if dot {
				frac++
			}
			continue
		}
		sigDigits++
		if sigDigits > 15 {
			fast = false
			break
		}
		m = m*10 + uint64(c-'0')
		if dot {
			frac++
		}
	}
	e10 := exp - frac
	if fast && m < 1<<53 {
		switch {
		case m == 0:
			return 0
		case e10 >= 0 && e10 < len(pow10):
			return float64(m) * pow10[e10]
		case e10 < 0 && -e10 < len(pow10):
			return float64(m) / pow10[-e10]
		}
	}
	f, _ := strconv.ParseFloat(string(s), 64) // ±Inf on overflow, as strtod
	return f
}

// smallInt parses an optionally signed exponent of at most 4 digits.
func smallInt(s []byte) (int, bool) {
	neg := false
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	if len(s) == 0 || len(s) > 4 {
		return 0, false
	}
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// parseHex returns the value of a hexadecimal mantissa ("1.8", ".8", "ff")
// with an optional binary exponent ("p-2"), correctly rounded.
func parseHex(mant, exp []byte) float64 {
	buf := make([]byte, 0, 2+len(mant)+3+len(exp))
	buf = append(buf, "0x"...)
	buf = append(buf, mant...)
	if len(exp) == 0 {
		buf = append(buf, "p0"...)
	} else {
		buf = append(buf, exp...)
	}
	f, _ := strconv.ParseFloat(string(buf), 64)
	return f
}

// luaInt is the integer reply Redis makes of a Lua number: a C cast to long
// long, which truncates toward zero and, on x86-64, gives MinInt64 for a NaN
// and for anything outside the int64 range.
func luaInt(f float64) int64 {
	if f != f || f >= 1<<63 || f < -(1<<63) {
		return math.MinInt64
	}
	return int64(f)
}

// luaMax is Lua 5.1's math.max of two numbers: the first unless the second
// is greater (so a NaN first stays, and max(-0, 0) is -0).
func luaMax(a, b float64) float64 {
	if b > a {
		return b
	}
	return a
}

// luaMin is Lua 5.1's math.min of two numbers: the first unless the second
// is less.
func luaMin(a, b float64) float64 {
	if b < a {
		return b
	}
	return a
}

// appendNumberArg appends the string Redis 7.0 makes of a Lua number passed
// to redis.call: "%.17g". (Redis 7.2 and later write the shortest string
// that reads back to the same number instead.)
func appendNumberArg(dst []byte, f float64) []byte { return appendG(dst, f, 17) }

// appendToString appends Lua 5.1's tostring of a number: "%.14g".
func appendToString(dst []byte, f float64) []byte { return appendG(dst, f, 14) }

// Lua's arithmetic on numbers, with x86-64 SSE's NaN rules, which Redis's
// Lua follows and Go does not promise: an operation on one NaN returns it
// (its sign kept, even for x * -1, which Go may compile as -x); on two, the
// first operand's; an operation that makes a NaN of numbers (0/0, inf-inf)
// returns the default NaN, whose sign bit is set ("-nan"). Each result is
// rounded on its own (float64(…) keeps Go from fusing a multiply and an
// add), as Lua's VM computes one operation at a time.
func add(a, b float64) float64 { return nanRule(float64(a+b), a, b) }
func sub(a, b float64) float64 { return nanRule(float64(a-b), a, b) }
func mul(a, b float64) float64 { return nanRule(float64(a*b), a, b) }
func div(a, b float64) float64 { return nanRule(float64(a/b), a, b) }

// defaultNaN is x86-64's default NaN: quiet, sign bit set.
var defaultNaN = math.Float64frombits(0xfff8000000000000)

func nanRule(r, a, b float64) float64 {
	switch {
	case r == r:
		return r
	case a != a:
		return a
	case b != b:
		return b
	}
	return defaultNaN
}
