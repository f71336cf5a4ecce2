package server

import (
	"math"
	"testing"
)

// TestReadCountLineIntegers pins what the count lines of "*<n>" and "$<n>"
// read as: Redis's string2ll, and 1<<62 (out of every range) for what it
// refuses, as Redis's failed string2ll leaves the length out of range.
func TestReadCountLineIntegers(t *testing.T) {
	const refused = int64(1 << 62)
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"0", 0}, {"3", 3}, {"16", 16}, {"-1", -1}, {"-10", -10},
		{"123456789012345678", 123456789012345678},
		{"1234567890123456789", 1234567890123456789},
		{"9223372036854775807", math.MaxInt64},
		{"-9223372036854775808", math.MinInt64},
		{"9223372036854775808", refused},
		{"-9223372036854775809", refused},
		{"18446744073709551616", refused},
		{"99999999999999999999", refused},
		{"-0", refused}, {"00", refused}, {"01", refused}, {"-01", refused},
		{"+1", refused}, {" 1", refused}, {"1 ", refused}, {"1_0", refused},
		{"", refused}, {"-", refused}, {"0x10", refused}, {"1e3", refused},
	} {
		buf := []byte(tc.in + "\r\n")
		v, pos, err := readCountLine(buf, 0, errProtoBigMbulkCount)
		if err != nil || pos != len(buf) || v != tc.want {
			t.Errorf("readCountLine(%q) = %d, %d, %v; want %d, %d, nil", buf, v, pos, err, tc.want, len(buf))
		}
	}
}
