package commands

import (
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/internal/parse"
)

// The fuzz targets compare the parsers with oracles built from other parts:
// strconv, regular expressions for the grammar and math/big for arithmetic.

var (
	durationNoUnitForm = regexp.MustCompile(`^(0|-?[1-9][0-9]*)$`)
	durationForm       = regexp.MustCompile(`^(0|-?[1-9][0-9]*)(ms|s|m|h|d)$`)
	rateCountForm      = regexp.MustCompile(`^(0|[1-9][0-9]*)(\.[0-9]{1,9})?$`)
	unitOracle         = map[string]int64{"ms": 1e6, "s": 1e9, "m": 60e9, "h": 3600e9, "d": 86400e9}
	maxInt64           = big.NewInt(math.MaxInt64)
)

// durationOracle classifies a duration with regular expressions and math/big,
// returning its length in nanoseconds when the fault is parse.OK.
func durationOracle(b []byte) (*big.Int, parse.Fault) {
	switch {
	case durationNoUnitForm.Match(b):
		return nil, parse.NoUnit
	case !durationForm.Match(b):
		return nil, parse.Malformed
	}
	m := durationForm.FindSubmatch(b)
	n, _ := new(big.Int).SetString(string(m[1]), 10)
	if n.Sign() <= 0 {
		return nil, parse.NotPositive
	}
	ns := n.Mul(n, big.NewInt(unitOracle[string(m[2])]))
	if ns.Cmp(maxInt64) > 0 {
		return nil, parse.OutOfRange
	}
	return ns, parse.OK
}

// quotedOracle is how an argument should appear inside an error text.
func quotedOracle(b []byte) string {
	s := string(b)
	if len(s) > 128 {
		s = s[:128]
	}
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
}

// FuzzParseDuration checks that parseDuration never panics, returns at least
// 1 ns on success, and agrees with durationOracle on value and error.
func FuzzParseDuration(f *testing.F) {
	for _, seed := range []string{
		"1500ms", "60s", "1m", "1h", "1d", "60", "0", "-5", "0s", "-1s", "-0s", "01s",
		"1S", "1us", "1 s", "+1s", "1.5s", "1e3ms", "0x10s", "1_000ms", "1m30s",
		"106751d", "106752d", "9223372036854ms", "9223372036855ms",
		"99999999999999999999999ms", "-99999999999999999999999ms", "", "s", "-",
		"NaN", "1s\x00", "1\r\ns",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := parseDuration(b, "window")

		want, fault := durationOracle(b)
		var wantErr error
		switch fault {
		case parse.NoUnit:
			wantErr = replyError("window needs a unit, like 60s or 1500ms")
		case parse.NotPositive:
			wantErr = replyError("window must be positive")
		case parse.OutOfRange:
			wantErr = replyError("window is out of range")
		case parse.Malformed:
			wantErr = replyError("invalid window '" + quotedOracle(b) +
				"': use a positive integer and a unit (ms, s, m, h, d), like 60s or 1500ms")
		}
		if err != wantErr {
			t.Fatalf("parseDuration(%q) = %d, %v; want error %v", b, got, err, wantErr)
		}
		if err == nil && (got < 1 || want.Int64() != got) {
			t.Fatalf("parseDuration(%q) = %d; want %s", b, got, want)
		}
	})
}

// FuzzParseRate checks that parseRate never panics, returns at least 1 ns on
// success, and agrees with an oracle that reads the rate with regular
// expressions and computes ⌈period / N⌉ with big.Rat.
func FuzzParseRate(f *testing.F) {
	for _, seed := range []string{
		"10/s", "100/m", "5000/h", "100/90s", "5/1500ms", "10", "0.5", "2.25", "1.5/s",
		"3/s", "1/d", "1000000000/s", "2000000000/s", "999999999.9/s", "0", "0/s", "0.0",
		"0.000000001/d", "0.000000001/s", "1/106751d", "1/106752d", "10/5", "10/0s",
		"10/-5s", "20000000000.123456789/d", "99999999999999999999999999.5/d",
		"", "/", "10/", "/s", "10s", "10/s/s", ".5", "5.", "01", "00.5", "1.0000000000",
		"-10/s", "+10/s", "1e3", "0x1p4", "1_000/s", "NaN", "inf/s", "10/1.5s",
		"10/s\x00", "10/s\r\nPING",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := parseRate(b)

		want, wantErr := rateOracle(b)
		if err != wantErr {
			t.Fatalf("parseRate(%q) = %d, %v; want error %v", b, got, err, wantErr)
		}
		if err == nil && (got < 1 || want != got) {
			t.Fatalf("parseRate(%q) = %d; want %d", b, got, want)
		}
	})
}

// rateOracle is parseRate rebuilt from regular expressions and big.Rat.
func rateOracle(b []byte) (int64, error) {
	invalid := replyError("invalid rate '" + quotedOracle(b) +
		"': use N/unit like 10/s, 100/m, 5000/h, N/duration like 100/90s, or a plain number per second")

	count, period, hasPeriod := strings.Cut(string(b), "/")
	if !rateCountForm.MatchString(count) {
		return 0, invalid
	}
	periodNs := big.NewInt(1e9)
	if hasPeriod {
		if ns, ok := unitOracle[period]; ok {
			periodNs = big.NewInt(ns)
		} else {
			ns, fault := durationOracle([]byte(period))
			switch fault {
			case parse.OK:
				periodNs = ns
			case parse.NoUnit:
				return 0, replyError("rate period needs a unit, like 60s or 1500ms")
			case parse.NotPositive:
				return 0, replyError("rate period must be positive")
			case parse.OutOfRange:
				return 0, replyError("rate period is out of range")
			default:
				return 0, invalid
			}
		}
	}

	n, ok := new(big.Rat).SetString(count)
	if !ok {
		panic("rateCountForm let through " + strconv.Quote(count))
	}
	if n.Sign() == 0 {
		return 0, replyError("rate must be positive")
	}
	interval := new(big.Rat).SetInt(periodNs)
	interval.Quo(interval, n)
	if interval.Cmp(big.NewRat(1, 1)) < 0 {
		return 0, replyError("rate is too high: at most 1 per nanosecond (1000000000/s)")
	}
	q, r := new(big.Int).QuoRem(interval.Num(), interval.Denom(), new(big.Int))
	if r.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	if q.Cmp(maxInt64) > 0 {
		return 0, replyError("rate is too low: the interval between units must be under 292 years")
	}
	return q.Int64(), nil
}
