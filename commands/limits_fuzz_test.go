package commands

import (
	"bytes"
	"math/big"
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/internal/parse"
	"github.com/sluice-rl/sluice/store"
)

// FuzzParseThrottle checks CL.THROTTLE's parameters against an oracle that
// does the arithmetic in math/big (the integer syntax is parse.Int's, fuzzed
// on its own).
func FuzzParseThrottle(f *testing.F) {
	for _, seed := range [][3]string{
		{"15", "30", "60"}, {"0", "1", "1"}, {"-1", "1", "1"}, {"1", "0", "1"}, {"1", "1", "0"},
		{"9223372036854775806", "1", "1"}, {"9223372036854775807", "1", "1"},
		{"1", "1", "9223372036"}, {"1", "1", "9223372037"}, {"1", "1000000001", "1"},
		{"1", "9223372036854775807", "9223372036"}, {"1.5", "1", "1"}, {"", "1", "1"},
		{"4611686018427387903", "1000000000", "1"}, {"4611686018427387904", "1000000000", "1"},
		{"0", "1", "4611686018"}, {"1", "1", "4611686018"},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, burstArg, countArg, periodArg string) {
		l, err := parseThrottle([]byte(burstArg), []byte(countArg), []byte(periodArg))
		burst, okB := parse.Int([]byte(burstArg))
		count, okC := parse.Int([]byte(countArg))
		period, okP := parse.Int([]byte(periodArg))
		wantOK := okB && okC && okP && burst >= 0 && count > 0 && period > 0
		var interval *big.Int
		if wantOK {
			limit := new(big.Int).Add(big.NewInt(burst), big.NewInt(1))
			ns := new(big.Int).Mul(big.NewInt(period), big.NewInt(1e9))
			interval = new(big.Int).Quo(ns, big.NewInt(count))
			wantOK = limit.Cmp(maxInt64) <= 0 && ns.Cmp(maxInt64) <= 0 && interval.Sign() > 0
			if refill := new(big.Int).Mul(limit, interval); wantOK && refill.Cmp(big.NewInt(algorithms.MaxRefill)) > 0 {
				if err != errBurstTooLong {
					t.Fatalf("parseThrottle(%q, %q, %q) = %v; want %q: (max_burst+1)·interval = %s ns", burstArg, countArg, periodArg, err, errBurstTooLong, refill)
				}
				wantOK = false
			}
		}
		if (err == nil) != wantOK {
			t.Fatalf("parseThrottle(%q, %q, %q) = %+v, %v; want ok %t", burstArg, countArg, periodArg, l, err, wantOK)
		}
		if err == nil && (l.Algo != algorithms.Throttle || l.Count != burst+1 || l.Period != interval.Int64()) {
			t.Fatalf("parseThrottle(%q, %q, %q) = %+v; want count %d, period %s", burstArg, countArg, periodArg, l, burst+1, interval)
		}
	})
}

// FuzzAll sends RL.ALL with fuzzed arguments (split on spaces) through a
// client and checks the reply's shape: an error that changed nothing, or
// [allowed, denied_index, [one decision per limit]].
func FuzzAll(f *testing.F) {
	for _, seed := range []string{
		"1 TOKEN a 10/s 5", "1 token a 10/s 5 FIXED b 2 1m", "0 LOG a 3 1s SLIDING b 2 1m",
		"-3 LEAKY a 1/s 3 LEAKY a 1/s 3", "1 TOKEN a 10/s", "x TOKEN a 1/s 1", "1 CONCURRENCY a 1 1s",
		"1 LOG a 10001 1s", "9223372036854775807 FIXED a 9223372036854775807 106751d",
		"-9223372036854775808 SLIDING a 1 1ms TOKEN a 1/s 1", "1 TOKEN a 1000000000/s 9223372036854775807",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args := append([]string{"RL.ALL"}, strings.Fields(line)...)
		st := store.New(2)
		_, c := loopbackOn(t, DefaultConfig(), st)
		out, _ := c.Feed([]byte(frame(args...)))
		switch {
		case len(args) < 6 || (len(args)-2)%4 != 0:
			if !bytes.HasPrefix(out, []byte("-ERR wrong number of arguments")) {
				t.Fatalf("%q: %q; want the arity error", line, out)
			}
		case out[0] == '-':
			if n, _ := st.DBSize(c.Now()); n != 0 {
				t.Fatalf("%q: %q, yet %d keys were written", line, out, n)
			}
		default:
			limits := (len(args) - 2) / 4
			if !bytes.HasPrefix(out, []byte("*3\r\n:")) || bytes.Count(out, []byte("*5\r\n")) != limits {
				t.Fatalf("%q: %q; want [allowed, denied_index, %d decisions]", line, out, limits)
			}
		}
	})
}
