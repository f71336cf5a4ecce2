package commands

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/parse"
)

func TestParseCost(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{{"1", 1}, {"0", 0}, {"-3", -3}, {"100", 100}} {
		got, err := parseCost([]byte(tc.in))
		if err != nil || got != tc.want {
			t.Errorf("parseCost(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "1.5", "+1", "01", "-0", "one", "9223372036854775808"} {
		if got, err := parseCost([]byte(in)); err != errNotInteger {
			t.Errorf("parseCost(%q) = %d, %v; want error %q", in, got, err, errNotInteger)
		}
	}
}

func TestParsePositive(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{{"1", 1}, {"100", 100}, {"9223372036854775807", math.MaxInt64}} {
		got, err := parsePositive([]byte(tc.in), "capacity")
		if err != nil || got != tc.want {
			t.Errorf("parsePositive(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		in   string
		want replyError
	}{
		{"0", "capacity must be positive"},
		{"-1", "capacity must be positive"},
		{"-9223372036854775808", "capacity must be positive"},
		{"", errNotInteger},
		{"01", errNotInteger},
		{"1.5", errNotInteger},
		{"10s", errNotInteger},
		{"9223372036854775808", errNotInteger},
	} {
		if got, err := parsePositive([]byte(tc.in), "capacity"); err != tc.want {
			t.Errorf("parsePositive(%q) = %d, %v; want error %q", tc.in, got, err, tc.want)
		}
	}
}

func TestParseDuration(t *testing.T) {
	valid := []struct {
		in   string
		want time.Duration
	}{
		{"1ms", time.Millisecond},
		{"1500ms", 1500 * time.Millisecond},
		{"1s", time.Second},
		{"60s", time.Minute},
		{"1m", time.Minute},
		{"90m", 90 * time.Minute},
		{"1h", time.Hour},
		{"1d", 24 * time.Hour},
		{"7d", 7 * 24 * time.Hour},
		{"9223372036854ms", 9223372036854 * time.Millisecond},
		{"9223372036s", 9223372036 * time.Second},
		{"106751d", 106751 * 24 * time.Hour}, // the largest whole number of days
	}
	for _, tc := range valid {
		got, err := parseDuration([]byte(tc.in), "window")
		if err != nil || got != int64(tc.want) {
			t.Errorf("parseDuration(%q) = %d, %v; want %d", tc.in, got, err, int64(tc.want))
		}
	}

	const (
		noUnit      = "window needs a unit, like 60s or 1500ms"
		notPositive = "window must be positive"
		outOfRange  = "window is out of range"
	)
	invalid := func(in string) replyError {
		return replyError("invalid window '" + in + "': use a positive integer and a unit (ms, s, m, h, d), like 60s or 1500ms")
	}
	for _, tc := range []struct {
		in   string
		want replyError
	}{
		{"60", noUnit},
		{"0", noUnit},
		{"-5", noUnit},
		{"1500", noUnit},
		{"99999999999999999999999", noUnit},
		{"0s", notPositive},
		{"0ms", notPositive},
		{"-1s", notPositive},
		{"-9223372036854775808ms", notPositive},
		{"-99999999999999999999999d", notPositive},
		{"9223372036855ms", outOfRange},
		{"9223372037s", outOfRange},
		{"106752d", outOfRange},
		{"9223372036854775807d", outOfRange},
		{"9223372036854775808s", outOfRange},
		{"99999999999999999999999ms", outOfRange},
		{"", invalid("")},
		{"s", invalid("s")},
		{"ms", invalid("ms")},
		{"-s", invalid("-s")},
		{"-", invalid("-")},
		{"1S", invalid("1S")},
		{"1MS", invalid("1MS")},
		{"1sec", invalid("1sec")},
		{"1us", invalid("1us")},
		{"1ns", invalid("1ns")},
		{"1w", invalid("1w")},
		{"1y", invalid("1y")},
		{"1 s", invalid("1 s")},
		{" 1s", invalid(" 1s")},
		{"1s ", invalid("1s ")},
		{"+1s", invalid("+1s")},
		{"01s", invalid("01s")},
		{"-0s", invalid("-0s")},
		{"00s", invalid("00s")},
		{"1.5s", invalid("1.5s")},
		{".5s", invalid(".5s")},
		{"1e3ms", invalid("1e3ms")},
		{"0x10s", invalid("0x10s")},
		{"1_000ms", invalid("1_000ms")},
		{"1m30s", invalid("1m30s")},
		{"1ss", invalid("1ss")},
		{"NaN", invalid("NaN")},
		{"infs", invalid("infs")},
		{"1s\x00", invalid("1s\x00")},
		{"\x001s", invalid("\x001s")},
		{"1\r\ns", invalid("1  s")}, // CR and LF never reach the reply line
	} {
		if got, err := parseDuration([]byte(tc.in), "window"); err != tc.want {
			t.Errorf("parseDuration(%q) = %d, %v; want error %q", tc.in, got, err, tc.want)
		}
	}
}

func TestParseRate(t *testing.T) {
	valid := []struct {
		in   string
		want time.Duration
	}{
		{"10/s", 100 * time.Millisecond},
		{"100/m", 600 * time.Millisecond},
		{"5000/h", 720 * time.Millisecond},
		{"100/90s", 900 * time.Millisecond},
		{"5/1500ms", 300 * time.Millisecond},
		{"1/ms", time.Millisecond},
		{"1/d", 24 * time.Hour},
		{"1/2d", 48 * time.Hour},
		{"2/1s", 500 * time.Millisecond},
		{"10", 100 * time.Millisecond},
		{"1", time.Second},
		{"0.5", 2 * time.Second},
		{"2.25", 444444445}, // 444444444.44… rounded up
		{"1.5/s", 666666667},
		{"0.5/m", 2 * time.Minute},
		{"0.001/s", 1000 * time.Second},
		{"0.000000001/s", 1e18},
		{"3/s", 333333334}, // 333333333.33… rounded up
		{"3", 333333334},
		{"7/h", 514285714286}, // 514285714285.71… rounded up
		{"1000000000/s", 1},
		{"1000000000", 1},
		{"999999999/s", 2}, // 1.000000001 ns rounded up
		{"999999999.9/s", 2},
		{"1000000/ms", 1},
		{"86400000000000/d", 1},
		{"1/106751d", 106751 * 24 * time.Hour},
		{"1/9223372036854ms", 9223372036854 * time.Millisecond},
		{"0.001/9223372036ms", 9223372036 * time.Second},
		{"9223372036854/9223372036854ms", time.Millisecond},
		{"20000000000.123456789/d", 4320}, // 4319.99999997…, a mantissa beyond 64 bits
		{"10000000000.123456789/d", 8640}, // 8639.99999989… rounded up
	}
	for _, tc := range valid {
		got, err := parseRate([]byte(tc.in))
		if err != nil || got != int64(tc.want) {
			t.Errorf("parseRate(%q) = %d, %v; want %d", tc.in, got, err, int64(tc.want))
		}
	}

	const (
		notPositive = "rate must be positive"
		tooHigh     = "rate is too high: at most 1 per nanosecond (1000000000/s)"
		tooLow      = "rate is too low: the interval between units must be under 292 years"
	)
	invalid := func(in string) replyError {
		return replyError("invalid rate '" + in + "': use N/unit like 10/s, 100/m, 5000/h, N/duration like 100/90s, or a plain number per second")
	}
	for _, tc := range []struct {
		in   string
		want replyError
	}{
		{"0", notPositive},
		{"0/s", notPositive},
		{"0.0", notPositive},
		{"0.000000000/d", notPositive},
		{"0/90s", notPositive},
		{"2000000000/s", tooHigh},
		{"1000000001/s", tooHigh},
		{"1000000000.1/s", tooHigh},
		{"1000000000.000000001", tooHigh},
		{"1000001/ms", tooHigh},
		{"86400000000001/d", tooHigh},
		{"9223372036854775807/s", tooHigh},
		{"9223372036854775808/s", tooHigh},
		{"9223372036854775807/106751d", tooHigh},
		{"20000000000000000000.5/d", tooHigh},
		{"99999999999999999999999999999999", tooHigh},
		{"99999999999999999999999999999999.5/d", tooHigh},
		{"0.000000001/d", tooLow},
		{"0.000000001/10s", tooLow},
		{"0.1/106751d", tooLow},
		{"0.999999999/9223372036854775807ms", "rate period is out of range"},
		{"10/5", "rate period needs a unit, like 60s or 1500ms"},
		{"10/0", "rate period needs a unit, like 60s or 1500ms"},
		{"10/0s", "rate period must be positive"},
		{"10/-5s", "rate period must be positive"},
		{"1/106752d", "rate period is out of range"},
		{"", invalid("")},
		{"/", invalid("/")},
		{"/s", invalid("/s")},
		{"10/", invalid("10/")},
		{"10/S", invalid("10/S")},
		{"10/sec", invalid("10/sec")},
		{"10/second", invalid("10/second")},
		{"10/us", invalid("10/us")},
		{"10/w", invalid("10/w")},
		{"10s", invalid("10s")},
		{"10/s/s", invalid("10/s/s")},
		{"10//s", invalid("10//s")},
		{"10 /s", invalid("10 /s")},
		{"10/ s", invalid("10/ s")},
		{" 10", invalid(" 10")},
		{"10 ", invalid("10 ")},
		{"-10/s", invalid("-10/s")},
		{"+10/s", invalid("+10/s")},
		{"-1", invalid("-1")},
		{"+1", invalid("+1")},
		{".5", invalid(".5")},
		{"5.", invalid("5.")},
		{"5./s", invalid("5./s")},
		{"1..5", invalid("1..5")},
		{"1.2.3", invalid("1.2.3")},
		{"1.0000000000", invalid("1.0000000000")}, // ten fraction digits
		{"0.0000000001/s", invalid("0.0000000001/s")},
		{"01", invalid("01")},
		{"00.5", invalid("00.5")},
		{"010/s", invalid("010/s")},
		{"1e3", invalid("1e3")},
		{"1e3/s", invalid("1e3/s")},
		{"1E-3", invalid("1E-3")},
		{"0x10", invalid("0x10")},
		{"0x1p4", invalid("0x1p4")},
		{"1_000/s", invalid("1_000/s")},
		{"NaN", invalid("NaN")},
		{"nan/s", invalid("nan/s")},
		{"Inf", invalid("Inf")},
		{"inf/s", invalid("inf/s")},
		{"-inf", invalid("-inf")},
		{"10/1.5s", invalid("10/1.5s")},
		{"10/01s", invalid("10/01s")},
		{"10/-0s", invalid("10/-0s")},
		{"10/+5s", invalid("10/+5s")},
		{"10/5 s", invalid("10/5 s")},
		{"10/1m30s", invalid("10/1m30s")},
		{"\x00", invalid("\x00")},
		{"10\x00/s", invalid("10\x00/s")},
		{"10/s\x00", invalid("10/s\x00")},
		{"10/s\r\nPING", invalid("10/s  PING")},
	} {
		if got, err := parseRate([]byte(tc.in)); err != tc.want {
			t.Errorf("parseRate(%q) = %d, %v; want error %q", tc.in, got, err, tc.want)
		}
	}
}

func TestPrintable(t *testing.T) {
	if got := printable([]byte("a\r\nb")); got != "a  b" {
		t.Errorf("printable(%q) = %q; want %q", "a\r\nb", got, "a  b")
	}
	long := strings.Repeat("x", 1000)
	if got := printable([]byte(long)); got != long[:128] {
		t.Errorf("printable(1000 bytes) has %d bytes; want 128", len(got))
	}
	arg := []byte("10/x")
	got := printable(arg)
	arg[0] = '9' // the connection reuses its buffer
	if got != "10/x" {
		t.Errorf("printable(%q) changed to %q with its argument", "10/x", got)
	}
}

// TestParseNoAllocations holds the hot-path promise: a valid argument is
// parsed without touching the heap.
func TestParseNoAllocations(t *testing.T) {
	for name, fn := range map[string]func(){
		"parse.Int":     func() { parse.Int([]byte("-9223372036854775808")) },
		"parseCost":     func() { parseCost([]byte("12")) },
		"parsePositive": func() { parsePositive([]byte("100"), "capacity") },
		"parseDuration": func() { parseDuration([]byte("1500ms"), "window") },
		"parseRate":     func() { parseRate([]byte("5000/h")) },
		"parseRate/dur": func() { parseRate([]byte("100/90s")) },
		"parseRate/dec": func() { parseRate([]byte("2.25")) },
		"parseRate/big": func() { parseRate([]byte("20000000000.123456789/d")) },
	} {
		if n := testing.AllocsPerRun(100, fn); n != 0 {
			t.Errorf("%s allocates %.0f times per call; want 0", name, n)
		}
	}
}

var (
	sinkInt int64
	sinkErr error
)

func BenchmarkParseInt(b *testing.B) {
	arg := []byte("-9223372036854775808")
	b.ReportAllocs()
	for b.Loop() {
		sinkInt, _ = parse.Int(arg)
	}
}

func BenchmarkParseCost(b *testing.B) {
	arg := []byte("3")
	b.ReportAllocs()
	for b.Loop() {
		sinkInt, sinkErr = parseCost(arg)
	}
}

func BenchmarkParsePositive(b *testing.B) {
	arg := []byte("1000")
	b.ReportAllocs()
	for b.Loop() {
		sinkInt, sinkErr = parsePositive(arg, "capacity")
	}
}

func BenchmarkParseDuration(b *testing.B) {
	arg := []byte("1500ms")
	b.ReportAllocs()
	for b.Loop() {
		sinkInt, sinkErr = parseDuration(arg, "window")
	}
}

func BenchmarkParseRate(b *testing.B) {
	for _, rate := range []string{"10/s", "5000/h", "100/90s", "2.25", "20000000000.123456789/d"} {
		b.Run(rate, func(b *testing.B) {
			arg := []byte(rate)
			b.ReportAllocs()
			for b.Loop() {
				sinkInt, sinkErr = parseRate(arg)
			}
		})
	}
}

// TestSessionRateMemo: the session's memo of its last rate never answers for
// a different rate, nor remembers one that failed.
func TestSessionRateMemo(t *testing.T) {
	c := &session{lastRate: make([]byte, 0, 32)}
	for _, in := range []string{"10/s", "10/s", "10", "100/90s", "bad", "10/s", "0.5", "1/d", "1/d", "", "3/s", strings.Repeat("9", 40)} {
		want, wantErr := parseRate([]byte(in))
		got, err := c.rate([]byte(in))
		if got != want || (err == nil) != (wantErr == nil) {
			t.Fatalf("rate(%q) = %d, %v; parseRate says %d, %v", in, got, err, want, wantErr)
		}
	}
}
