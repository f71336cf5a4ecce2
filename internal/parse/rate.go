package parse

import (
	"bytes"
	"math"
	"math/bits"
	"time"
)

// Fault says what is wrong with a duration or a rate, so that each caller
// words the error for its own argument.
type Fault uint8

const (
	OK Fault = iota
	// Malformed: a duration that is not an integer and a known unit; a rate
	// in none of the forms, or with an empty period ("10/").
	Malformed
	NoUnit      // a duration, or a rate's period, written as a bare integer
	NotPositive // a duration, or a rate's period, of zero or less
	OutOfRange  // a duration, or a rate's period, of more than math.MaxInt64 ns
	// MalformedPeriod: a rate whose period is neither a unit nor a
	// duration ("10/x").
	MalformedPeriod
	ZeroRate // a rate whose N is zero
	TooHigh  // a rate of more than one unit per nanosecond
	TooLow   // a rate whose interval is more than math.MaxInt64 ns
)

// Duration reads a duration and returns it in nanoseconds when the fault is
// OK: a positive integer in Int's syntax, immediately followed by one of
// the units ms, s, m, h, d (lower case), like 1500ms, 60s, 1m, 1h, 1d. A
// bare integer is NoUnit (it is too easy to mean seconds and get
// milliseconds), zero or a negative integer with a unit NotPositive, more
// than math.MaxInt64 nanoseconds (about 292 years) OutOfRange, anything
// else Malformed.
func Duration(b []byte) (int64, Fault) {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	number, unit := b[:i], b[i:]

	v, ok := Int(number)
	negative := len(number) > 0 && number[0] == '-'
	tooLong := false // written like an integer, but beyond int64
	if !ok {
		digits := number
		if negative {
			digits = number[1:]
		}
		if len(digits) == 0 || digits[0] == '0' {
			return 0, Malformed
		}
		tooLong = true
	}
	if len(unit) == 0 {
		return 0, NoUnit
	}
	perUnit, ok := Unit(unit)
	if !ok {
		return 0, Malformed
	}
	if negative || v == 0 && !tooLong {
		return 0, NotPositive
	}
	if tooLong || v > math.MaxInt64/perUnit {
		return 0, OutOfRange
	}
	return v * perUnit, OK
}

// Unit returns the length of one unit (ms, s, m, h or d) in nanoseconds.
func Unit(unit []byte) (int64, bool) {
	switch string(unit) { // the compiler does not allocate for this conversion
	case "ms":
		return int64(time.Millisecond), true
	case "s":
		return int64(time.Second), true
	case "m":
		return int64(time.Minute), true
	case "h":
		return int64(time.Hour), true
	case "d":
		return int64(24 * time.Hour), true
	}
	return 0, false
}

// Rate reads a rate and returns its emission interval when the fault is OK:
// the time between two units, in whole nanoseconds, rounded up so that the
// limit never admits faster than asked. The forms are
//
//   - N/unit, with unit ms, s, m, h or d: 10/s, 100/m, 5000/h;
//   - N/duration, the duration in Duration's syntax: 100/90s, 5/1500ms;
//   - N alone, meaning per second: 10, 0.5.
//
// N is a positive decimal: digits with no leading zero (as in Int),
// optionally a '.' and 1 to 9 more digits (2.25, 1.5/s). There is no sign,
// exponent, hex, '_', space, NaN or Inf, and ".5" and "5." are refused. N is
// read exactly, as an integer mantissa and a power of ten, never as a float.
//
// The faults, in the order they are checked: Malformed (N, or an empty
// period); the period's MalformedPeriod, NoUnit, NotPositive or OutOfRange;
// ZeroRate; TooHigh (more than one unit per nanosecond); TooLow (an interval
// beyond math.MaxInt64 nanoseconds, about 292 years).
//
// It does not allocate and is safe for concurrent use.
func Rate(b []byte) (int64, Fault) {
	count, period := b, []byte(nil)
	hasPeriod := false
	if i := bytes.IndexByte(b, '/'); i >= 0 {
		count, period, hasPeriod = b[:i], b[i+1:], true
	}
	n, ok := parseDecimal(count)
	if !ok || hasPeriod && len(period) == 0 {
		return 0, Malformed
	}
	periodNs := int64(time.Second)
	if hasPeriod {
		if ns, ok := Unit(period); ok {
			periodNs = ns
		} else {
			ns, fault := Duration(period)
			switch fault {
			case OK:
				periodNs = ns
			case Malformed:
				return 0, MalformedPeriod
			default:
				return 0, fault
			}
		}
	}
	if n.isZero() {
		return 0, ZeroRate
	}
	return emissionInterval(periodNs, n)
}

// decimal is a non-negative decimal number read exactly: its value is
// mantissa / 10^scale, the mantissa being the 128-bit integer hi·2^64 + lo.
// huge marks a number whose integer part exceeds math.MaxInt64; its mantissa
// is then not computed.
type decimal struct {
	hi, lo uint64
	scale  int // digits after the point, 0 to 9
	huge   bool
}

func (d decimal) isZero() bool { return !d.huge && d.hi == 0 && d.lo == 0 }

// pow10 holds 10^0 to 10^9, the scales a decimal may have.
var pow10 = [10]uint64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9}

// parseDecimal reads N of a rate: an integer part ("0" or digits starting
// with 1-9), then optionally '.' and 1 to 9 digits.
func parseDecimal(b []byte) (decimal, bool) {
	whole, fraction := b, []byte(nil)
	if i := bytes.IndexByte(b, '.'); i >= 0 {
		whole, fraction = b[:i], b[i+1:]
		if len(fraction) == 0 || len(fraction) >= len(pow10) || !allDigits(fraction) {
			return decimal{}, false
		}
	}
	if len(whole) == 0 || !allDigits(whole) || len(whole) > 1 && whole[0] == '0' {
		return decimal{}, false
	}

	var d decimal
	var w uint64
	for _, c := range whole {
		digit := uint64(c - '0')
		if w > (math.MaxInt64-digit)/10 {
			d.huge = true
			return d, true
		}
		w = w*10 + digit
	}
	var f uint64
	for _, c := range fraction {
		f = f*10 + uint64(c-'0') // at most 9 digits: no overflow
	}
	d.scale = len(fraction)
	var carry uint64
	d.hi, d.lo = bits.Mul64(w, pow10[d.scale])
	d.lo, carry = bits.Add64(d.lo, f, 0)
	d.hi += carry
	return d, true
}

// allDigits reports whether every byte of b is a decimal digit.
func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// emissionInterval returns ceil(periodNs / n): the nanoseconds between two of
// n units spread evenly over periodNs, computed exactly as
// ceil(periodNs · 10^scale / mantissa) in 128 bits. periodNs is positive and
// n is not zero.
func emissionInterval(periodNs int64, n decimal) (int64, Fault) {
	if n.huge { // n > math.MaxInt64 ≥ periodNs
		return 0, TooHigh
	}
	hi, lo := bits.Mul64(uint64(periodNs), pow10[n.scale])
	if hi < n.hi || hi == n.hi && lo < n.lo { // less than one nanosecond apart
		return 0, TooHigh
	}
	q, ok := ceilDiv128(hi, lo, n.hi, n.lo)
	if !ok || q > math.MaxInt64 {
		return 0, TooLow
	}
	return int64(q), OK
}

// ceilDiv128 returns ⌈(nHi·2^64 + nLo) / (dHi·2^64 + dLo)⌉ and true, or false
// when the result does not fit in 64 bits. The divisor must not be zero.
func ceilDiv128(nHi, nLo, dHi, dLo uint64) (uint64, bool) {
	var q uint64
	var rHi, rLo uint64
	if dHi == 0 {
		if nHi >= dLo { // quotient ≥ 2^64
			return 0, false
		}
		q, rLo = bits.Div64(nHi, nLo, dLo)
	} else {
		// The divisor is at least 2^64, so the quotient fits in 64 bits.
		// Estimate it from the divisor's top 64 bits (Hacker's Delight,
		// 9-5 "divlu"): the estimate is the quotient or one less.
		s := uint(bits.LeadingZeros64(dHi))
		top := dHi<<s | dLo>>(64-s) // dLo>>64 is 0 in Go, for s = 0
		q, _ = bits.Div64(nHi>>1, nLo>>1|nHi<<63, top)
		q >>= 63 - s
		if q != 0 {
			q--
		}
		// remainder = n − q·d, then correct the estimate.
		pHi, pLo := bits.Mul64(dLo, q)
		pHi += dHi * q
		var borrow uint64
		rLo, borrow = bits.Sub64(nLo, pLo, 0)
		rHi, _ = bits.Sub64(nHi, pHi, borrow)
		if rHi > dHi || rHi == dHi && rLo >= dLo {
			q++
			rLo, borrow = bits.Sub64(rLo, dLo, 0)
			rHi, _ = bits.Sub64(rHi, dHi, borrow)
		}
	}
	if rHi != 0 || rLo != 0 {
		if q == math.MaxUint64 {
			return 0, false
		}
		q++
	}
	return q, true
}
