package commands

import (
	"bytes"
	"math"
	"math/bits"
	"time"

	"github.com/sluice-rl/sluice/internal/parse"
)

// Parsers for the numeric arguments of the RL.* commands: integers, costs,
// durations and rates, as DESIGN.md ("Commands (the contract)" → "Arguments")
// defines them.
//
// Each parser reads the argument bytes as they came off the wire, does not
// allocate when the argument is valid, and on failure returns an replyError whose
// text is the reply. They are pure functions, safe for concurrent use.

// printable returns a client's argument for quoting in an error text: cut to
// 128 bytes (as Redis quotes unknown commands, with %.128s), with CR and LF
// replaced by spaces so that the reply stays a single RESP line.
func printable(arg []byte) string {
	if len(arg) > 128 {
		arg = arg[:128]
	}
	out := bytes.Clone(arg) // arg may be the connection's read buffer
	for i, c := range out {
		if c == '\r' || c == '\n' {
			out[i] = ' '
		}
	}
	return string(out)
}

// parseCost accepts the n argument of a decision: any integer parse.Int
// accepts, zero (a peek) and negative (a refund) included.
func parseCost(b []byte) (int64, error) {
	n, ok := parse.Int(b)
	if !ok {
		return 0, errNotInteger
	}
	return n, nil
}

// parsePositive accepts a capacity or a limit (named what in the error): an
// integer parse.Int accepts that is at least 1.
func parsePositive(b []byte, what string) (int64, error) {
	n, ok := parse.Int(b)
	if !ok {
		return 0, errNotInteger
	}
	if n <= 0 {
		return 0, errNotPositive(what)
	}
	return n, nil
}

// parseDuration accepts a window or a lease (named what in the errors) and
// returns it in nanoseconds: a positive integer in parse.Int's syntax,
// immediately followed by one of the units ms, s, m, h, d (lower case), like
// 1500ms, 60s, 1m, 1h, 1d. A bare integer is refused: it is too easy to mean
// seconds and get milliseconds. So are zero, negative durations and durations
// of more than math.MaxInt64 nanoseconds (about 292 years).
func parseDuration(b []byte, what string) (int64, error) {
	ns, fault := durationNanos(b)
	switch fault {
	case durationOK:
		return ns, nil
	case durationMalformed:
		return 0, errInvalidDuration(what, b)
	}
	return 0, fault.err(what)
}

// durationFault says what is wrong with a duration, so that parseDuration and
// parseRate can each word the error for their argument.
type durationFault uint8

const (
	durationOK          durationFault = iota
	durationMalformed                 // not an integer followed by a known unit
	durationNoUnit                    // a bare integer
	durationNotPositive               // zero or negative
	durationOutOfRange                // more than math.MaxInt64 ns
)

// err words a well-formed duration's fault for the argument named what;
// each caller words a malformed one itself.
func (f durationFault) err(what string) error {
	switch f {
	case durationNoUnit:
		return errNoUnit(what)
	case durationNotPositive:
		return errNotPositive(what)
	case durationOutOfRange:
		return errDurationRange(what)
	}
	return nil
}

// durationNanos reads a duration in parseDuration's syntax and returns it in
// nanoseconds when the fault is durationOK.
func durationNanos(b []byte) (int64, durationFault) {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	number, unit := b[:i], b[i:]

	v, ok := parse.Int(number)
	negative := len(number) > 0 && number[0] == '-'
	tooLong := false // written like an integer, but beyond int64
	if !ok {
		digits := number
		if negative {
			digits = number[1:]
		}
		if len(digits) == 0 || digits[0] == '0' {
			return 0, durationMalformed
		}
		tooLong = true
	}
	if len(unit) == 0 {
		return 0, durationNoUnit
	}
	perUnit, ok := unitNanos(unit)
	if !ok {
		return 0, durationMalformed
	}
	if negative || v == 0 && !tooLong {
		return 0, durationNotPositive
	}
	if tooLong || v > math.MaxInt64/perUnit {
		return 0, durationOutOfRange
	}
	return v * perUnit, durationOK
}

// unitNanos returns the length of one unit (ms, s, m, h or d) in nanoseconds.
func unitNanos(unit []byte) (int64, bool) {
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

// parseRate accepts a rate and returns its emission interval: the time
// between two units, in whole nanoseconds, rounded up so that the limit never
// admits faster than asked. The forms are
//
//   - N/unit, with unit ms, s, m, h or d: 10/s, 100/m, 5000/h;
//   - N/duration, the duration in parseDuration's syntax: 100/90s, 5/1500ms;
//   - N alone, meaning per second: 10, 0.5.
//
// N is a positive decimal: digits with no leading zero (as in parse.Int),
// optionally a '.' and 1 to 9 more digits (2.25, 1.5/s). There is no sign,
// exponent, hex, '_', space, NaN or Inf, and ".5" and "5." are refused. N is
// read exactly, as an integer mantissa and a power of ten, never as a float.
//
// A rate of more than one unit per nanosecond, or one whose interval exceeds
// math.MaxInt64 nanoseconds (about 292 years), is refused.
func parseRate(b []byte) (int64, error) {
	count, period := b, []byte(nil)
	hasPeriod := false
	if i := bytes.IndexByte(b, '/'); i >= 0 {
		count, period, hasPeriod = b[:i], b[i+1:], true
	}
	n, ok := parseDecimal(count)
	if !ok {
		return 0, errInvalidRate(b)
	}
	periodNs := int64(time.Second)
	if hasPeriod {
		if ns, ok := unitNanos(period); ok {
			periodNs = ns
		} else {
			ns, fault := durationNanos(period)
			switch fault {
			case durationOK:
				periodNs = ns
			case durationMalformed:
				return 0, errInvalidRate(b)
			default:
				return 0, fault.err("rate period")
			}
		}
	}
	if n.isZero() {
		return 0, errRateNotPositive
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
func emissionInterval(periodNs int64, n decimal) (int64, error) {
	if n.huge { // n > math.MaxInt64 ≥ periodNs
		return 0, errRateTooHigh
	}
	hi, lo := bits.Mul64(uint64(periodNs), pow10[n.scale])
	if hi < n.hi || hi == n.hi && lo < n.lo { // less than one nanosecond apart
		return 0, errRateTooHigh
	}
	q, ok := ceilDiv128(hi, lo, n.hi, n.lo)
	if !ok || q > math.MaxInt64 {
		return 0, errRateTooLow
	}
	return int64(q), nil
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
