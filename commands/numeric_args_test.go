package commands

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/store"
)

// TestNumericArgumentsAtEachCallSite feeds every command that reads an
// integer, a duration or a rate the same edge-case arguments and compares
// each reply with testdata/numeric_args.golden, which records what each
// call site accepted and refused, and with which error, when the parsers
// were written out at each call site. SLUICE_UPDATE_GOLDEN=1 rewrites it.
func TestNumericArgumentsAtEachCallSite(t *testing.T) {
	ints := []string{
		"0", "7", "-7", "20", "9223372036854775807", "-9223372036854775808",
		"9223372036854775808", "-9223372036854775809", "18446744073709551616",
		"-0", "00", "07", "-07", "+7", " 7", "7 ", "1_000", "", "-", "1e3", "7.0", "0x7",
	}
	durations := []string{
		"1500ms", "60s", "1m", "1h", "1d", "0s", "-5s", "-0s", "05s", "5", "0", "-5", "", "s",
		"5S", "5sec", "5 s", "+5s", "1.5s", "9223372036854775807ms", "9223372037s",
		"99999999999999999999s", "9223372036854775808ms", "106751d", "106752d",
	}
	rates := []string{
		"10/s", "100/m", "5000/h", "1/d", "7/ms", "100/90s", "5/1500ms", "10", "0.5", "2.25",
		"1.5/s", "0", "0.0", "0/s", "0/xyz", "00/s", "010", "-1/s", "+1/s", ".5", "5.", "1.0000000001",
		"1.000000001", "10/", "/s", "10/x", "10/0s", "10/-5s", "10/5", "10/ 1s", "1e3", "NaN", "Inf",
		"1000000000/s", "1000000001/s", "1000000000.5/s", "99999999999999999999/s",
		"0.000000001/d", "1/106751d", "20000000000.123456789/d",
	}
	templates := []struct {
		cmd  string // {} is the argument
		args []string
	}{
		{"RL.TOKEN k 10/s 20 {}", ints},
		{"RL.TOKEN k 10/s {}", ints},
		{"RL.TOKEN k {} 20", rates},
		{"RL.LEAKY k {} 20", rates},
		{"RL.FIXED k {} 1m", ints},
		{"RL.FIXED k 5 {}", durations},
		{"RL.SLIDING k 5 {}", durations},
		{"RL.ACQUIRE k 2 {} id", durations},
		{"CL.THROTTLE k {} 10 60", ints},
		{"CL.THROTTLE k 5 {} 60", ints},
		{"CL.THROTTLE k 5 10 {}", ints},
		{"CL.THROTTLE k 5 10 60 {}", ints},
		{"RL.POLICY SET p TOKEN {} 20", rates},
		{"RL.POLICY SET p FIXED 5 {}", durations},
		{"EVAL {return 1} {}", ints},
		{"CLIENT PAUSE {}", ints},
		{"RL.MATCH d HITS {} DESCRIPTOR k v", ints},
		{"ACL LOG {}", ints},
		{"MEMORY USAGE k SAMPLES {}", ints},
		{"CLIENT KILL ID {}", ints},
		{"CLIENT KILL MAXAGE {}", ints},
		{"CLIENT LIST ID {}", ints},
		{"SCAN 0 COUNT {}", ints},
		{"HELLO {}", ints},
		{"SELECT {}", ints},
		{"DEBUG CLOCK SET {}", ints},
		{"DEBUG CLOCK ADVANCE {}", ints},
		{"RL.TOP COUNT {}", ints},
	}
	var out strings.Builder
	for _, tm := range templates {
		for _, a := range tm.args {
			cfg := DefaultConfig()
			cfg.Debug = DebugYes
			h, c := loopbackOn(t, cfg, store.New(1))
			h.Clock().Set(epochMs * 1e6)
			var argv []string
			for _, w := range strings.Fields(tm.cmd) {
				switch w {
				case "{}":
					w = a
				case "{return":
					w = "return"
				case "1}":
					argv[len(argv)-1] += " 1"
					continue
				}
				argv = append(argv, w)
			}
			req := "*" + strconv.Itoa(len(argv)) + "\r\n"
			for _, w := range argv {
				req += "$" + strconv.Itoa(len(w)) + "\r\n" + w + "\r\n"
			}
			reply, _ := c.Feed([]byte(req))
			line, _, _ := strings.Cut(string(reply), "\r\n")
			if line[0] != '-' {
				line = "ok"
			}
			out.WriteString(strings.Replace(tm.cmd, "{}", strconv.Quote(a), 1) + " → " + line + "\n")
			c.Hangup()
		}
	}
	const golden = "testdata/numeric_args.golden"
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
