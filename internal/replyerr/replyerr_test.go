package replyerr

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestLine(t *testing.T) {
	noAuth := New(NOAUTH, "Authentication required.")
	syntax := Generic("syntax error")
	for _, tc := range []struct {
		err  error
		want string
	}{
		{syntax, "ERR syntax error"},
		// A generic text that starts with an upper-case word keeps its ERR.
		{Generic("DB index is out of range"), "ERR DB index is out of range"},
		{noAuth, "NOAUTH Authentication required."},
		{New(CLUSTERDOWN, "no leader"), "CLUSTERDOWN no leader"},
		// Wrapped with %w, each keeps its code.
		{fmt.Errorf("%w: the detail", syntax), "ERR syntax error: the detail"},
		{fmt.Errorf("%w: the detail", noAuth), "NOAUTH Authentication required.: the detail"},
		{fmt.Errorf("asking n2: %w", noAuth), "NOAUTH asking n2: NOAUTH Authentication required."},
		{fmt.Errorf("outer: %w", fmt.Errorf("%w: inner", noAuth)), "NOAUTH outer: NOAUTH Authentication required.: inner"},
		// The first of the chain decides.
		{fmt.Errorf("%w: %w", syntax, noAuth), "ERR syntax error: NOAUTH Authentication required."},
		// Plain errors: a code word is kept, else ERR.
		{errors.New("WRONGTYPE Operation against a key holding the wrong kind of value"), "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{errors.New("OOM"), "OOM"},
		{errors.New("key too long"), "ERR key too long"},
		{errors.New("RAFT.JOIN needs an id"), "ERR RAFT.JOIN needs an id"},
		{errors.New(""), "ERR "},
	} {
		if got := Line(tc.err); got != tc.want {
			t.Errorf("Line(%q) = %q; want %q", tc.err, got, tc.want)
		}
	}
}

// A line relayed as a plain error (a peer's reply, a forwarded result)
// passes through the rule again unchanged: "ERR " is added once.
func TestLineAddsERROnce(t *testing.T) {
	for _, err := range []error{
		Generic("syntax error"),
		Generic("HITS must be a non-negative integer"),
		New(WRONGTYPE, "Operation against a key holding the wrong kind of value"),
		fmt.Errorf("%w: detail", Generic("invalid limit")),
		fmt.Errorf("asking: %w", New(NOPERM, "no")),
		errors.New("plain"),
	} {
		line := Line(err)
		if strings.HasPrefix(line, "ERR ERR") {
			t.Errorf("Line(%q) = %q", err, line)
		}
		if again := Line(errors.New(line)); again != line {
			t.Errorf("Line of the relayed line %q = %q", line, again)
		}
	}
}

func TestErrorCode(t *testing.T) {
	for _, tc := range []struct {
		err  Error
		want Code
	}{
		{New(MOVED, "3999 127.0.0.1:6381"), MOVED},
		{New(UNKNOWN, "outcome unknown"), UNKNOWN},
		{Error("READONLY"), READONLY},
	} {
		if got := tc.err.Code(); got != tc.want {
			t.Errorf("%q.Code() = %q; want %q", tc.err, got, tc.want)
		}
		if !HasCode(string(tc.err)) {
			t.Errorf("HasCode(%q) = false", tc.err)
		}
	}
	if Line(New(ERR, "x")) != Line(Generic("x")) {
		t.Errorf("New(ERR, x) and Generic(x) differ on the wire")
	}
}

// Sentinels compare with == and errors.Is, wrapped or not.
func TestSentinelsCompare(t *testing.T) {
	e, g := New(OOM, "no room"), Generic("invalid cursor")
	if !errors.Is(fmt.Errorf("x: %w", e), New(OOM, "no room")) || !errors.Is(fmt.Errorf("%w: x", g), Generic("invalid cursor")) {
		t.Fatal("a wrapped sentinel is not found by errors.Is")
	}
}

func TestAppend(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{Generic("a\r\nb"), "-ERR a  b\r\n"},
		{New(NOSCRIPT, "No matching script. Please use EVAL."), "-NOSCRIPT No matching script. Please use EVAL.\r\n"},
		{errors.New("x\ny"), "-ERR x y\r\n"},
	} {
		if got := string(Append([]byte("+OK\r\n"), tc.err)); got != "+OK\r\n"+tc.want {
			t.Errorf("Append(%q) = %q; want %q", tc.err, got, tc.want)
		}
	}
}
