package commands

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/internal/replyerr"
	"github.com/sluice-rl/sluice/store"
)

// The Handler on bytes, without a socket: a loopback connection
// (server.Conn.Feed) is handed requests and the replies are compared byte
// for byte, at a frozen clock.

// onBytes returns a function that feeds its argument to a fresh Handler's
// loopback connection at epochMs and returns the replies.
func onBytes(t *testing.T, cfg Config) func(in string) string {
	t.Helper()
	h, c := loopbackOn(t, cfg, store.New(4))
	h.Clock().Set(epochMs * 1e6)
	return func(in string) string {
		out, _ := c.Feed([]byte(in))
		return string(out)
	}
}

func TestHandlerRepliesOnBytes(t *testing.T) {
	feed := onBytes(t, DefaultConfig())
	for _, tc := range []struct{ in, want string }{
		{"RL.TOKEN k 10/s 20\r\n", "*5\r\n:1\r\n:20\r\n:19\r\n:0\r\n:100\r\n"},
		{"*4\r\n$8\r\nRL.TOKEN\r\n$1\r\nk\r\n$4\r\n10/s\r\n$2\r\n20\r\n", "*5\r\n:1\r\n:20\r\n:18\r\n:0\r\n:200\r\n"},
		{"HELLO 3\r\n", ""}, // checked below: a map
		{"RL.TOKEN k 10/s 20\r\n", "*5\r\n:1\r\n:20\r\n:17\r\n:0\r\n:300\r\n"}, // RESP3: the same array
		{"CLIENT NAMED-REPLY ON\r\n", "+OK\r\n"},
		{"RL.TOKEN k 10/s 20\r\n", "%5\r\n$7\r\nallowed\r\n#t\r\n$5\r\nlimit\r\n:20\r\n$9\r\nremaining\r\n:16\r\n" +
			"$14\r\nretry_after_ms\r\n:0\r\n$14\r\nreset_after_ms\r\n:400\r\n"},
		{"HELLO 2\r\n", ""}, // a map of 7 in RESP2's form: checked below
		{"RL.TOKEN k 10/s 20\r\n", "*10\r\n$7\r\nallowed\r\n:1\r\n$5\r\nlimit\r\n:20\r\n$9\r\nremaining\r\n:15\r\n" +
			"$14\r\nretry_after_ms\r\n:0\r\n$14\r\nreset_after_ms\r\n:500\r\n"},
		{"CLIENT NAMED-REPLY OFF\r\n", "+OK\r\n"},
		{"CLIENT NAMED-REPLY MAYBE\r\n", "-ERR syntax error\r\n"},
		{"RL.TOKEN k 10/s\r\n", "-ERR wrong number of arguments for 'rl.token' command\r\n"},
		{"RL.TOKEN k 10/s 0\r\n", "-ERR capacity must be positive\r\n"},
		{"SELECT 1\r\n", "-ERR DB index is out of range\r\n"},
		{"HELLO 4\r\n", "-NOPROTO unsupported protocol version\r\n"},
		{"RL.FIXED k 5 1m\r\n", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{"TIME\r\n", "*2\r\n$10\r\n1800000000\r\n$1\r\n0\r\n"},
	} {
		got := feed(tc.in)
		if tc.want == "" {
			if !strings.HasPrefix(got, "%7\r\n") && !strings.HasPrefix(got, "*14\r\n") {
				t.Fatalf("%q = %q; want a map of 7", tc.in, got)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("%q = %q; want %q", tc.in, got, tc.want)
		}
	}
}

// TestDeferredRepliesKeepCommandOrder: decisions are deferred to the end of
// the batch, yet every reply comes in command order, whatever comes
// between them: a command with a reply of its own, an error, an RL.ALL
// whose last limit is wrong (its queued limits are taken back out), an
// inline line.
func TestDeferredRepliesKeepCommandOrder(t *testing.T) {
	feed := onBytes(t, DefaultConfig())
	token := func(k string) string { return "*4\r\n$8\r\nRL.TOKEN\r\n$1\r\n" + k + "\r\n$4\r\n10/s\r\n$1\r\n5\r\n" }
	in := token("a") + "PING\r\n" + token("b") + token("a") +
		"RL.ALL 1 TOKEN c 10/s 5 FIXED d 0 1m\r\n" + token("c") + "NOPE\r\n" + "RL.TOKEN a 10/s 5\r\n" + "ECHO end\r\n"
	want := "*5\r\n:1\r\n:5\r\n:4\r\n:0\r\n:100\r\n" +
		"+PONG\r\n" +
		"*5\r\n:1\r\n:5\r\n:4\r\n:0\r\n:100\r\n" +
		"*5\r\n:1\r\n:5\r\n:3\r\n:0\r\n:200\r\n" +
		"-ERR limit must be positive\r\n" +
		"*5\r\n:1\r\n:5\r\n:4\r\n:0\r\n:100\r\n" + // c: the RL.ALL took nothing
		"-ERR unknown command 'NOPE', with args beginning with: \r\n" +
		"*5\r\n:1\r\n:5\r\n:2\r\n:0\r\n:300\r\n" +
		"$3\r\nend\r\n"
	if got := feed(in); got != want {
		t.Fatalf("replies:\n%q\nwant\n%q", got, want)
	}
}

// TestDebugClockMovesTheRestOfTheBatch: the batch's instant is read once,
// and DEBUG CLOCK moves it for the commands after it in the same batch.
func TestDebugClockMovesTheRestOfTheBatch(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Debug = DebugYes
	feed := onBytes(t, cfg)
	got := feed("TIME\r\nDEBUG CLOCK ADVANCE 1500\r\nTIME\r\n")
	want := "*2\r\n$10\r\n1800000000\r\n$1\r\n0\r\n+OK\r\n*2\r\n$10\r\n1800000001\r\n$6\r\n500000\r\n"
	if got != want {
		t.Fatalf("replies %q; want %q", got, want)
	}
}

// TestReplyErrorCodes: the one rule that gives a reply error its code.
func TestReplyErrorCodes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{errSyntax, "ERR syntax error"},
		{errInvalidDBIdx, "ERR DB index is out of range"}, // an upper-case first word of the text is no code
		{errNoPassSet, "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"},
		{errNoAuth, "NOAUTH Authentication required."},
		{errWrongArgs("get"), "ERR wrong number of arguments for 'get' command"},
		{fmt.Errorf("%w: at argument 3", errSyntax), "ERR syntax error: at argument 3"},
		{store.ErrWrongType, "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{errors.New("CLUSTERDOWN no leader"), "CLUSTERDOWN no leader"},
		{errors.New("no member \"n4\""), "ERR no member \"n4\""},
		{errors.New("RAFT.FORWARD: corrupt submission"), "ERR RAFT.FORWARD: corrupt submission"},
	} {
		if got := replyerr.Line(tc.err); got != tc.want {
			t.Errorf("replyerr.Line(%q) = %q; want %q", tc.err, got, tc.want)
		}
		if got := string(replyerr.Append(nil, tc.err)); got != "-"+tc.want+"\r\n" {
			t.Errorf("replyerr.Append(%q) = %q", tc.err, got)
		}
	}
}
