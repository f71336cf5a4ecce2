package compat

import "testing"

// integerArgs are integer arguments at the edges of Redis's string2ll,
// with what it makes of them (ok false: "value is not an integer").
var integerArgs = []struct {
	in string
	v  int64
	ok bool
}{
	{"0", 0, true}, {"7", 7, true}, {"-7", -7, true},
	{"9223372036854775807", 9223372036854775807, true},
	{"-9223372036854775808", -9223372036854775808, true},
	{"9223372036854775808", 0, false}, {"-9223372036854775809", 0, false},
	{"18446744073709551616", 0, false}, {"123456789012345678901", 0, false},
	{"-0", 0, false}, {"00", 0, false}, {"07", 0, false}, {"-07", 0, false},
	{"+7", 0, false}, {" 7", 0, false}, {"7 ", 0, false}, {"7\n", 0, false},
	{"1_000", 0, false}, {"", 0, false}, {"-", 0, false}, {"1e3", 0, false},
	{"7.0", 0, false}, {"0x7", 0, false},
}

// TestIntegerArgumentsAsString2ll checks each place the plain commands and
// the value model read an integer: INCRBY's delta, SET … PX's and PSETEX's
// milliseconds, PEXPIRE's time and a string's integer value all take
// exactly string2ll's integers.
func TestIntegerArgumentsAsString2ll(t *testing.T) {
	const notInt = "(error) ERR value is not an integer or out of range"
	for _, a := range integerArgs {
		var k Key
		r := plain(CmdIncrBy, &k, p0, a.in)
		got := r.String()
		if a.ok && a.v != -9223372036854775808 && got != a.in {
			t.Errorf("INCRBY k %q = %s; want %s", a.in, got, a.in)
		}
		if !a.ok && got != notInt {
			t.Errorf("INCRBY k %q = %s; want %s", a.in, got, notInt)
		}

		k = Key{}
		r = plain(CmdSet, &k, p0, "v", "PX", a.in)
		got = r.String()
		if a.ok != (got != notInt) {
			t.Errorf("SET k v PX %q = %s; integer: %v", a.in, got, a.ok)
		}
		k = Key{}
		r = plain(CmdPsetex, &k, p0, a.in, "v")
		got = r.String()
		if a.ok != (got != notInt) {
			t.Errorf("PSETEX k %q v = %s; integer: %v", a.in, got, a.ok)
		}
		k = Key{}
		plain(CmdSet, &k, p0, "v")
		r = plain(CmdPexpire, &k, p0, a.in)
		got = r.String()
		if a.ok != (got != notInt) {
			t.Errorf("PEXPIRE k %q = %s; integer: %v", a.in, got, a.ok)
		}

		v, ok := StringValue([]byte(a.in))
		if isInt := ok && v.Kind() == Int; isInt != a.ok {
			t.Errorf("StringValue(%q) = %v, kind %v; integer: %v", a.in, ok, v.Kind(), a.ok)
		} else if isInt {
			if n, _ := v.Int(); n != a.v {
				t.Errorf("StringValue(%q).Int() = %d; want %d", a.in, n, a.v)
			}
		}
	}
}
