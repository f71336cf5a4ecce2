package policy

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestRulesFileNumbers feeds a policies entry's rate, window and lease, and
// an envoyproxy/ratelimit rule's requests_per_unit, edge-case values and
// compares what each becomes (a limit, or the error) with
// testdata/numbers.golden. SLUICE_UPDATE_GOLDEN=1 rewrites it.
func TestRulesFileNumbers(t *testing.T) {
	durations := []string{
		"1500ms", "60s", "1m", "1h", "1d", "0s", "-5s", "-0s", "05s", "5", "0", "-5", "s",
		"5S", "5sec", "+5s", "1.5s", "9223372036854775807ms", "9223372037s",
		"99999999999999999999s", "106751d", "106752d",
	}
	rates := []string{
		"10/s", "100/m", "5000/h", "1/d", "7/ms", "100/90s", "5/1500ms", "10", "0.5", "2.25",
		"1.5/s", "0", "0.0", "0/s", "0/xyz", "0/0s", "00/s", "010", "-1/s", "+1/s", ".5", "5.", "1.0000000001",
		"1.000000001", "10/", "/s", "10/x", "10/0s", "10/-5s", "10/5", "1e3", "NaN",
		"1000000000/s", "1000000001/s", "1000000000.5/s", "99999999999999999999/s",
		"0.000000001/d", "1/106751d",
	}
	rpus := []string{"0", "1", "60", "4294967295", "4294967296", "-1", "1.5", "0x10", "1e3", "'10'", "010", "+5"}
	var out strings.Builder
	try := func(label, yaml string) {
		rs, err := Parse([]File{{Name: "p.yaml", Data: []byte(yaml)}}, Options{})
		got := ""
		switch {
		case err != nil:
			got = err.Error()
		case len(rs.Policies()) == 1:
			got = fmt.Sprintf("%+v", rs.Policies()[0].Limit)
		default:
			got = fmt.Sprintf("%d rules", rs.Rules())
		}
		out.WriteString(label + " → " + got + "\n")
	}
	for _, r := range rates {
		try("rate "+strconv.Quote(r), "policies:\n  - {name: x, algorithm: token, capacity: 5, rate: '"+r+"'}\n")
	}
	for _, d := range durations {
		try("window "+strconv.Quote(d), "policies:\n  - {name: x, algorithm: fixed, limit: 5, window: '"+d+"'}\n")
		try("lease "+strconv.Quote(d), "policies:\n  - {name: x, algorithm: concurrency, limit: 5, lease: '"+d+"'}\n")
	}
	for _, n := range rpus {
		try("requests_per_unit "+n, "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: "+n+"}\n")
	}
	const golden = "testdata/numbers.golden"
	if os.Getenv("SLUICE_UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(golden, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(out.String(), "\n")
	for i, w := range strings.Split(string(want), "\n") {
		if i >= len(got) || got[i] != w {
			g := "(nothing)"
			if i < len(got) {
				g = got[i]
			}
			t.Errorf("line %d: %s; want %s", i+1, g, w)
		}
	}
}
