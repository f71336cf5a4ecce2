package parse

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

func TestInt(t *testing.T) {
	valid := []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"1", 1},
		{"-1", -1},
		{"42", 42},
		{"-42", -42},
		{"1000", 1000},
		{"9223372036854775807", math.MaxInt64},
		{"-9223372036854775808", math.MinInt64},
		{"-9223372036854775807", -math.MaxInt64},
	}
	for _, tc := range valid {
		got, ok := Int([]byte(tc.in))
		if !ok || got != tc.want {
			t.Errorf("Int(%q) = %d, %t; want %d, true", tc.in, got, ok, tc.want)
		}
	}

	invalid := []string{
		"", "-", "+", "--1", "+1", " 1", "1 ", " ", "1 2", "\t1", "1\r\n",
		"01", "00", "-0", "-01", "007",
		"1e3", "1E3", "1.0", "1.", ".1", "0x10", "0X10", "0b1", "0o7", "1_000",
		"9223372036854775808", "-9223372036854775809",
		"18446744073709551615", "18446744073709551616", "99999999999999999999",
		"-99999999999999999999", "123456789012345678901",
		"NaN", "nan", "inf", "Inf", "-inf", "+inf", "infinity",
		"\x00", "1\x00", "\x001", "1\x002",
		"１", // a full-width digit
		"a", "1a", "a1", "1-", "-1-",
	}
	for _, in := range invalid {
		if got, ok := Int([]byte(in)); ok {
			t.Errorf("Int(%q) = %d, true; want false", in, got)
		}
	}
}

// FuzzInt checks Int against strconv.ParseInt, narrowed to Redis's
// rules: no '+', no leading zero, no "-0".
func FuzzInt(f *testing.F) {
	for _, seed := range []string{
		"", "0", "1", "-1", "+1", " 1", "1 ", "01", "-0", "-01", "1e3", "0x10", "1_000",
		"9223372036854775807", "9223372036854775808", "-9223372036854775808",
		"-9223372036854775809", "18446744073709551616", "99999999999999999999",
		"NaN", "inf", "\x00", "1\x00", "-", "--1", "007", "+0", "1.5", "\t\v\f\r\n3\n", "٣",
		"12345678901234567890123", "123456789012345678",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := Int(b)

		s := string(b)
		want, err := strconv.ParseInt(s, 10, 64)
		digits := strings.TrimPrefix(s, "-")
		redisForm := !strings.HasPrefix(s, "+") && s != "-0" &&
			!(len(digits) > 1 && digits[0] == '0')
		wantOK := err == nil && redisForm

		if ok != wantOK || ok && got != want {
			t.Fatalf("Int(%q) = %d, %t; want %d, %t", b, got, ok, want, wantOK)
		}
	})
}
