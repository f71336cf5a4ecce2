package parse

import "math"

// Int is Redis's string2ll (util.c): it accepts an optional '-' and
// decimal digits, at most 20 bytes in all, within int64. The first digit is
// 1-9 unless the whole number is "0": "01", "-0" and "-01" are refused, as
// are '+', spaces, '_', a lone '-', the empty string and anything that
// overflows int64. The result is valid only when ok is true.
//
// It does not allocate and is safe for concurrent use; b may be a
// connection's read buffer.
func Int(b []byte) (v int64, ok bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	digits := b
	negative := b[0] == '-'
	if negative {
		digits = b[1:]
	}
	if len(digits) == 0 || digits[0] < '1' || digits[0] > '9' {
		return 0, false
	}
	var u uint64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if u > (math.MaxUint64-d)/10 {
			return 0, false
		}
		u = u*10 + d
	}
	if negative {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true // for u = 1<<63 this is math.MinInt64, as in C
	}
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}
