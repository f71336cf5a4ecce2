package server

import (
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/internal/replyerr"
	"github.com/sluice-rl/sluice/internal/testutil"
)

// The request reader's contract, one frame at a time: what a frame parses
// to, that no prefix of a valid frame is an error, Redis's error texts, the
// limits, and no allocation for multibulk commands.

// readerTestLimits are the server's defaults.
func readerTestLimits() ReaderLimits { return DefaultConfig().Limits }

// readFrames runs readCommand over in as the connection loop does, until
// the input is used up, incomplete or broken. It returns the commands (empty
// frames yield none), the bytes consumed and the error that ended it.
func readFrames(in []byte, lim *ReaderLimits, unauth bool) (cmds [][]string, used int, err error) {
	var args [][]byte
	var scratch []byte
	for used < len(in) {
		var n int
		args, n, err = readCommand(in[used:], args, &scratch, lim, unauth)
		if err != nil {
			if n != 0 {
				return cmds, used, replyError("readCommand returned a length with an error")
			}
			return cmds, used, err
		}
		if n == 0 {
			return cmds, used, nil
		}
		if len(args) > 0 {
			cmd := make([]string, len(args))
			for i, a := range args {
				cmd[i] = string(a)
			}
			cmds = append(cmds, cmd)
		}
		used += n
	}
	return cmds, used, nil
}

type readCase struct {
	name string
	in   string
	want [][]string // the commands, in order
	rest int        // bytes of an incomplete tail left unconsumed
	err  error      // the error that ends the input
}

func cmdsOf(cmds ...string) [][]string {
	out := make([][]string, len(cmds))
	for i, c := range cmds {
		out[i] = strings.Split(c, "|")
	}
	return out
}

func runReadCases(t *testing.T, cases []readCase, lim ReaderLimits, unauth bool) {
	t.Helper()
	for _, tc := range cases {
		got, used, err := readFrames([]byte(tc.in), &lim, unauth)
		if err != tc.err {
			t.Errorf("%s: readCommand(%q) error = %v; want %v", tc.name, testutil.Clip(tc.in), err, tc.err)
			continue
		}
		if tc.err == nil && used != len(tc.in)-tc.rest {
			t.Errorf("%s: readCommand(%q) used %d bytes; want %d", tc.name, testutil.Clip(tc.in), used, len(tc.in)-tc.rest)
		}
		if !sameCommands(got, tc.want) {
			t.Errorf("%s: readCommand(%q) = %q; want %q", tc.name, testutil.Clip(tc.in), got, tc.want)
		}
	}
}

func sameCommands(a, b [][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				return false
			}
		}
	}
	return true
}

func TestReadCommandFrames(t *testing.T) {
	runReadCases(t, []readCase{
		{name: "multibulk", in: "*3\r\n$8\r\nRL.TOKEN\r\n$1\r\nk\r\n$4\r\n10/s\r\n", want: cmdsOf("RL.TOKEN|k|10/s")},
		{name: "binary bulk", in: "*2\r\n$4\r\nECHO\r\n$4\r\na\r\n\x00\r\n", want: [][]string{{"ECHO", "a\r\n\x00"}}},
		{name: "empty bulk", in: "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", want: [][]string{{"ECHO", ""}}},
		{name: "pipeline", in: "*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\nPING\r\n*1\r\n$4\r\nQUIT\r\n",
			want: cmdsOf("PING", "ECHO|hi", "PING", "QUIT")},
		{name: "pipeline with incomplete tail", in: "PING\r\n*2\r\n$4\r\nECHO\r\n$5\r\nhel", want: cmdsOf("PING"), rest: 21},
		{name: "incomplete inline", in: "PING", rest: 4},
		{name: "incomplete count", in: "*1\r", rest: 3},
		{name: "empty lines ignored", in: "\r\n\n  \r\nPING\r\n", want: cmdsOf("PING")},
		{name: "*0 ignored", in: "*0\r\nPING\r\n", want: cmdsOf("PING")},
		{name: "*-1 ignored", in: "*-1\r\nPING\r\n", want: cmdsOf("PING")},
		{name: "*-10 ignored", in: "*-10\r\n*1\r\n$4\r\nPING\r\n", want: cmdsOf("PING")},
		{name: "LF-only inline", in: "PING\nECHO x\n", want: cmdsOf("PING", "ECHO|x")},
		{name: "zero count then rest", in: "*0\r\n", want: nil},
	}, readerTestLimits(), false)
}

// TestReadCommandEveryPrefixIncomplete feeds valid frames byte by byte: no
// prefix is an error or a command, the whole frame is exactly one.
func TestReadCommandEveryPrefixIncomplete(t *testing.T) {
	lim := readerTestLimits()
	frames := []string{
		"*1\r\n$4\r\nPING\r\n",
		"*5\r\n$8\r\nRL.TOKEN\r\n$7\r\nuser:42\r\n$4\r\n10/s\r\n$2\r\n20\r\n$1\r\n1\r\n",
		"*2\r\n$4\r\nECHO\r\n$0\r\n\r\n",
		"*2\r\n$4\r\nECHO\r\n$6\r\n\r\n\r\n\r\n\r\n",
		"*0\r\n",
		"*-1\r\n",
		"PING\r\n",
		"RL.TOKEN k 10/s 20\r\n",
		"ECHO \"a b\\x41\" 'c\\'d'\r\n",
		"\r\n",
	}
	var args [][]byte
	var scratch []byte
	for _, f := range frames {
		for i := 0; i < len(f); i++ {
			_, used, err := readCommand([]byte(f[:i]), args, &scratch, &lim, false)
			if used != 0 || err != nil {
				t.Errorf("readCommand(%q) = used %d, %v; want incomplete (0, nil)", f[:i], used, err)
			}
		}
		_, used, err := readCommand([]byte(f), args, &scratch, &lim, false)
		if used != len(f) || err != nil {
			t.Errorf("readCommand(%q) = used %d, %v; want %d, nil", f, used, err, len(f))
		}
	}
}

func TestReadCommandInline(t *testing.T) {
	runReadCases(t, []readCase{
		{name: "telnet", in: "PING\r\n", want: cmdsOf("PING")},
		{name: "rl.token", in: "RL.TOKEN k 10/s 20\r\n", want: cmdsOf("RL.TOKEN|k|10/s|20")},
		{name: "blanks", in: "  ECHO \t  x   \r\n", want: cmdsOf("ECHO|x")},
		{name: "double quotes", in: `ECHO "a b"` + "\r\n", want: cmdsOf("ECHO|a b")},
		{name: "empty quotes", in: `ECHO "" ''` + "\r\n", want: [][]string{{"ECHO", "", ""}}},
		{name: "escapes", in: `ECHO "\n\r\t\b\a\\\"\z"` + "\r\n", want: [][]string{{"ECHO", "\n\r\t\b\a\\\"z"}}},
		{name: "hex", in: `ECHO "\x41\x4a\x00\xff"` + "\r\n", want: [][]string{{"ECHO", "AJ\x00\xff"}}},
		{name: "bad hex is literal", in: `ECHO "\x4g\x4"` + "\r\n", want: [][]string{{"ECHO", "x4gx4"}}},
		{name: "single quotes", in: `ECHO 'a\'b\n'` + "\r\n", want: [][]string{{"ECHO", `a'b\n`}}},
		{name: "quote mid-word", in: `ECHO a"b c"d` + "\r\n", err: errProtoUnbalanced},
		{name: "quote joins", in: `ECHO a"b c"` + "\r\n", want: [][]string{{"ECHO", "ab c"}}},
		{name: "backslash outside quotes", in: `ECHO a\nb` + "\r\n", want: [][]string{{"ECHO", `a\nb`}}},
		{name: "vertical tab stays", in: "ECHO a\vb c\f\r\n", want: [][]string{{"ECHO", "a\vb", "c\f"}}},
		{name: "leading vtab skipped", in: "ECHO \va\r\n", want: cmdsOf("ECHO|a")},
		{name: "NUL is a byte", in: "ECHO a\x00b\r\n", want: [][]string{{"ECHO", "a\x00b"}}},
		{name: "closing quote then vtab", in: "ECHO \"a\"\vb\r\n", want: cmdsOf("ECHO|a|b")},
		{name: "unbalanced double", in: `ECHO "abc` + "\r\n", err: errProtoUnbalanced},
		{name: "unbalanced single", in: `ECHO 'abc` + "\r\n", err: errProtoUnbalanced},
		{name: "escaped closing quote", in: `ECHO "abc\"` + "\r\n", err: errProtoUnbalanced},
		{name: "text after closing quote", in: `ECHO "a"b` + "\r\n", err: errProtoUnbalanced},
		{name: "text after closing single", in: `ECHO 'a'b` + "\r\n", err: errProtoUnbalanced},
		{name: "redis unbalanced test", in: "set \"\"\"test-key\"\"\" test-value\r\nping\r\n", err: errProtoUnbalanced},
		{name: "commands before the bad one", in: "PING\r\nECHO \"x\r\n", want: cmdsOf("PING"), err: errProtoUnbalanced},
	}, readerTestLimits(), false)
}

// TestReadCommandProtocolErrors checks every protocol error text against the
// frames of Redis's tests/unit/protocol.tcl and a few more.
func TestReadCommandProtocolErrors(t *testing.T) {
	long := strings.Repeat("9", maxCountLine+1)
	runReadCases(t, []readCase{
		{name: "*3000000000", in: "*3000000000\r\n", err: errProtoMultibulkLen},
		{name: "*2147483648", in: "*2147483648\r\n", err: errProtoMultibulkLen},
		{name: "*abc", in: "*abc\r\n", err: errProtoMultibulkLen},
		{name: "*01", in: "*01\r\n", err: errProtoMultibulkLen},
		{name: "*+1", in: "*+1\r\n", err: errProtoMultibulkLen},
		{name: "*1 space", in: "*1 \r\n", err: errProtoMultibulkLen},
		{name: "* empty", in: "*\r\n", err: errProtoMultibulkLen},
		{name: "$-10", in: "*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$-10\r\n", err: errProtoBulkLen},
		{name: "$-1", in: "*1\r\n$-1\r\n", err: errProtoBulkLen},
		{name: "$2000000000", in: "*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$2000000000\r\n", err: errProtoBulkLen},
		{name: "$blabla", in: "*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$blabla\r\n", err: errProtoBulkLen},
		{name: "redcon overflow", in: "*1\r\n$9223372036854775807\r\nx\r\n", err: errProtoBulkLen},
		{name: "$ past int64", in: "*1\r\n$99999999999999999999999\r\nx\r\n", err: errProtoBulkLen},
		{name: "bulk without CRLF", in: "*1\r\n$4\r\nPINGXY\r\n", err: errProtoBulkLen},
		{name: "expected $", in: "*1\r\nfoo\r\n", err: errProtoExpectedDollar('f')},
		{name: "fooz", in: "*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n", err: errProtoExpectedDollar('f')},
		{name: "expected $ before line ends", in: "*1\r\nf", err: errProtoExpectedDollar('f')},
		{name: "expected $ got NUL", in: "*1\r\n\x00", err: errProtoExpectedDollar(0)},
		{name: "expected $ got CR", in: "*1\r\n\r\n", err: errProtoExpectedDollar('\r')},
		{name: "too big mbulk count", in: "*" + long, err: errProtoBigMbulkCount},
		{name: "mbulk count at limit waits", in: "*" + long[1:], rest: 1 + maxCountLine},
		{name: "too big bulk count", in: "*1\r\n$" + long, err: errProtoBigBulkCount},
		{name: "NUL count", in: "*\x00" + strings.Repeat("payload", 9400), err: errProtoBigMbulkCount},
		{name: "NUL inline", in: "\x00" + strings.Repeat("payload", 9400), err: errProtoBigInline},
		{name: "$NUL inline", in: "$\x00" + strings.Repeat("payload", 9400), err: errProtoBigInline},
		{name: "valid before broken", in: "PING\r\n*1\r\n$-5\r\n", want: cmdsOf("PING"), err: errProtoBulkLen},
	}, readerTestLimits(), false)

	if got := replyerr.Line(errProtoExpectedDollar(0xff)); got != "ERR Protocol error: expected '$', got '\xff'" {
		t.Errorf("errProtoExpectedDollar(0xff) = %q; want the raw byte as Redis's %%c writes it", got)
	}
}

func TestReadCommandLimits(t *testing.T) {
	lim := ReaderLimits{MaxBulk: 100, MaxArgs: 4, MaxInline: 50}
	bulk := func(n int) string {
		return "*2\r\n$4\r\nECHO\r\n$" + strconv.Itoa(n) + "\r\n" + strings.Repeat("b", n) + "\r\n"
	}
	runReadCases(t, []readCase{
		{name: "bulk at MaxBulk", in: bulk(100), want: [][]string{{"ECHO", strings.Repeat("b", 100)}}},
		{name: "bulk over MaxBulk", in: bulk(101), err: errProtoBulkLen},
		// the length is refused before any of the body is awaited
		{name: "bulk header over MaxBulk", in: "*2\r\n$4\r\nECHO\r\n$101\r\n", err: errProtoBulkLen},
		{name: "bulk header at MaxBulk waits", in: "*2\r\n$4\r\nECHO\r\n$100\r\n", rest: 20},
		{name: "args at MaxArgs", in: "*4\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n", want: cmdsOf("a|b|c|d")},
		{name: "args over MaxArgs", in: "*5\r\n", err: errProtoMultibulkLen},
		{name: "inline args at MaxArgs", in: "a b c d\r\n", want: cmdsOf("a|b|c|d")},
		{name: "inline args over MaxArgs", in: "a b c d e\r\n", err: errProtoMultibulkLen},
		{name: "inline at MaxInline", in: strings.Repeat("x", 50) + "\n", want: [][]string{{strings.Repeat("x", 50)}}},
		{name: "inline over MaxInline", in: strings.Repeat("x", 51) + "\n", err: errProtoBigInline},
		{name: "unterminated inline at MaxInline waits", in: strings.Repeat("x", 50), rest: 50},
		{name: "unterminated inline over MaxInline", in: strings.Repeat("x", 51), err: errProtoBigInline},
	}, lim, false)

	// Before AUTH, Redis's stricter limits apply; after it, the normal ones.
	def := readerTestLimits()
	many := func(n int) string {
		s := "*" + strconv.Itoa(n) + "\r\n"
		for range n {
			s += "$1\r\na\r\n"
		}
		return s
	}
	unauthCases := []readCase{
		{name: "10 args", in: many(10), want: [][]string{strings.Split(strings.Repeat("a", 10), "")}},
		{name: "11 args", in: many(11), err: errProtoUnauthMbulk},
		{name: "11 args header only", in: "*11\r\n", err: errProtoUnauthMbulk},
		{name: "*3000000000 is invalid first", in: "*3000000000\r\n", err: errProtoMultibulkLen},
		{name: "bulk 16384", in: bulk(16384), want: [][]string{{"ECHO", strings.Repeat("b", 16384)}}},
		{name: "bulk 16385", in: "*2\r\n$4\r\nECHO\r\n$16385\r\n", err: errProtoUnauthBulk},
		{name: "$-1 is invalid first", in: "*1\r\n$-1\r\n", err: errProtoBulkLen},
	}
	runReadCases(t, unauthCases, def, true)
	runReadCases(t, []readCase{
		{name: "11 args authed", in: many(11), want: [][]string{strings.Split(strings.Repeat("a", 11), "")}},
		{name: "bulk 16385 authed", in: bulk(16385), want: [][]string{{"ECHO", strings.Repeat("b", 16385)}}},
	}, def, false)
}

// TestReadCommandMultibulkDoesNotAllocate: with args reused, a multibulk
// command costs no allocation; its arguments point into the input.
func TestReadCommandMultibulkDoesNotAllocate(t *testing.T) {
	lim := readerTestLimits()
	in := []byte("*5\r\n$8\r\nRL.TOKEN\r\n$7\r\nuser:42\r\n$4\r\n10/s\r\n$2\r\n20\r\n$1\r\n1\r\n" +
		"*1\r\n$4\r\nPING\r\n")
	args := make([][]byte, 0, 8)
	var scratch []byte
	allocs := testing.AllocsPerRun(1000, func() {
		var used, n int
		var err error
		for used < len(in) {
			args, n, err = readCommand(in[used:], args, &scratch, &lim, false)
			if err != nil || n == 0 {
				panic("readCommand failed on a valid pipeline")
			}
			used += n
		}
	})
	if allocs != 0 {
		t.Errorf("readCommand allocated %.1f times per pipeline; want 0", allocs)
	}
	// The same holds for inline commands once scratch has grown.
	line := []byte("RL.TOKEN user:42 10/s 20 1\r\n")
	allocs = testing.AllocsPerRun(1000, func() {
		args, _, _ = readCommand(line, args, &scratch, &lim, false)
	})
	if allocs != 0 {
		t.Errorf("readCommand allocated %.1f times per inline command with scratch grown; want 0", allocs)
	}
}

func BenchmarkReadCommandMultibulk(b *testing.B) {
	lim := readerTestLimits()
	in := []byte("*5\r\n$8\r\nRL.TOKEN\r\n$7\r\nuser:42\r\n$4\r\n10/s\r\n$2\r\n20\r\n$1\r\n1\r\n")
	args := make([][]byte, 0, 8)
	var scratch []byte
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		args, _, _ = readCommand(in, args, &scratch, &lim, false)
	}
}

// feedInChunks delivers frame to readCommandFrom the way a client's
// connection does: a chunk at a time, carrying the unfinished command in a
// readState, and copying the bytes to a new buffer now and then (as the
// client compacts or grows its buffer).
func feedInChunks(t testing.TB, frame []byte, chunk int) [][]byte {
	lim := ReaderLimits{MaxBulk: 1 << 20, MaxArgs: 1 << 20, MaxInline: 64 << 10}
	var st readState
	var args [][]byte
	var scratch []byte
	buf := make([]byte, 0, 64)
	for sent := 0; ; {
		if sent < len(frame) {
			n := min(chunk, len(frame)-sent)
			if len(buf)+n > cap(buf) { // grow: the bytes move
				grown := make([]byte, len(buf), 2*cap(buf)+n)
				copy(grown, buf)
				buf = grown
				st.moved = true
			}
			buf = append(buf, frame[sent:sent+n]...)
			sent += n
		}
		var used int
		var err error
		args, used, err = readCommandFrom(buf, args, &scratch, &lim, false, &st)
		if err != nil {
			t.Fatalf("chunk %d: %v", chunk, err)
		}
		if used > 0 {
			if used != len(frame) {
				t.Fatalf("used %d of %d", used, len(frame))
			}
			return args
		}
		if sent == len(frame) {
			t.Fatalf("chunk %d: the whole frame is there but the command is incomplete", chunk)
		}
	}
}

func TestReadResumesUnfinishedCommand(t *testing.T) {
	var frame []byte
	frame = append(frame, "*1000\r\n"...)
	for i := 0; i < 1000; i++ {
		arg := strconv.Itoa(i * 7919)
		if i%10 == 0 {
			arg = ""
		}
		frame = append(frame, "$"+strconv.Itoa(len(arg))+"\r\n"+arg+"\r\n"...)
	}
	lim := ReaderLimits{MaxBulk: 1 << 20, MaxArgs: 1 << 20, MaxInline: 64 << 10}
	var scratch []byte
	want, _, err := readCommand(frame, nil, &scratch, &lim, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, chunk := range []int{1, 2, 3, 7, 64, 1000, len(frame)} {
		got := feedInChunks(t, frame, chunk)
		if len(got) != len(want) {
			t.Fatalf("chunk %d: %d args; want %d", chunk, len(got), len(want))
		}
		for i := range want {
			if string(got[i]) != string(want[i]) {
				t.Fatalf("chunk %d: arg %d = %q; want %q", chunk, i, got[i], want[i])
			}
		}
	}
}

// BenchmarkTrickledCommand: a 100,000-argument command arriving 512 bytes
// at a time costs about one parse in total, not one per read.
func BenchmarkTrickledCommand(b *testing.B) {
	var frame []byte
	frame = append(frame, "*100000\r\n"...)
	for i := 0; i < 100000; i++ {
		frame = append(frame, "$3\r\nabc\r\n"...)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for i := 0; i < b.N; i++ {
		feedInChunks(b, frame, 512)
	}
}
