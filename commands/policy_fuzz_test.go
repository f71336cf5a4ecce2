package commands

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/store"
)

// FuzzPolicySetAndCheck sends RL.POLICY SET with fuzzed arguments (split
// on spaces), then RL.CHECK of the named policy and GET, and checks the
// replies' shapes: SET answers OK or an error; after OK, GET returns the
// policy and RL.CHECK a decision (or the CONCURRENCY refusal); after an
// error, nothing was defined and RL.CHECK answers no such policy.
func FuzzPolicySetAndCheck(f *testing.F) {
	for _, seed := range []string{
		"p TOKEN 10/s 20", "p token 10/s 20 SHADOW", "p FIXED 2 1m DESCRIPTION free tier",
		"p LEAKY 1/s 3", "p SLIDING 5 1s", "p LOG 10001 1s", "p CONCURRENCY 5 30s", "p GCRA 1 1",
		"a:b.c-d_e FIXED 1 1ms", "bad! TOKEN 1/s 1", "p TOKEN 0/s 1", "p FIXED 1 1", "p FIXED 1 1s LOUD",
		"p FIXED 1 1s DESCRIPTION", "p TOKEN 1000000000/s 9223372036854775807", "p FIXED 9223372036854775807 106751d",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		fields := strings.Fields(line)
		if len(fields) < 4 {
			return // the arity error, tested in the e2e tests
		}
		_, c := loopbackOn(t, DefaultConfig(), store.New(2))
		// Feed's output is the connection's buffer: each is copied before
		// the next batch reuses it.
		feedCopy := func(args ...string) []byte {
			out, closed := c.Feed([]byte(frame(args...)))
			if closed {
				t.Fatalf("%q: %v closed the connection", line, args)
			}
			return bytes.Clone(out)
		}
		out := feedCopy(append([]string{"RL.POLICY", "SET"}, fields...)...)
		name := fields[0]
		check := feedCopy("RL.CHECK", name, "subject")
		get := feedCopy("RL.POLICY", "GET", name)
		switch {
		case bytes.Equal(out, []byte("+OK\r\n")):
			if !bytes.HasPrefix(check, []byte("*5\r\n")) && !bytes.Contains(check, []byte("CONCURRENCY")) {
				t.Fatalf("%q: RL.CHECK after OK = %q", line, check)
			}
			if !bytes.HasPrefix(get, []byte("*14\r\n")) {
				t.Fatalf("%q: GET after OK = %q", line, get)
			}
		case bytes.HasPrefix(out, []byte("-ERR ")) && bytes.Count(out, []byte("\r\n")) == 1:
			if !bytes.HasPrefix(check, []byte("-ERR no such policy")) && !bytes.HasPrefix(check, []byte("-ERR wrong number")) {
				t.Fatalf("%q: SET failed (%q) but RL.CHECK = %q", line, out, check)
			}
		default:
			t.Fatalf("%q: SET = %q; want OK or one error line", line, out)
		}
	})
}
