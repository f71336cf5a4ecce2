package resp

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// The reply reader and the command writer.

func parse(t *testing.T, s string) *Value {
	t.Helper()
	v := new(Value)
	if err := Read(bufio.NewReader(strings.NewReader(s)), v); err != nil {
		t.Fatalf("Read(%q): %v", s, err)
	}
	return v
}

func TestRead(t *testing.T) {
	cases := map[string]string{
		"+PONG\r\n":                            "+PONG",
		"-ERR x y\r\n":                         "-ERR x y",
		":-12\r\n":                             ":-12",
		"$3\r\nabc\r\n":                        `"abc"`,
		"$-1\r\n":                              "null bulk",
		"*-1\r\n":                              "null array",
		"*2\r\n:1\r\n*1\r\n$0\r\n\r\n":         `*2[:1 *1[""]]`,
		"%1\r\n+a\r\n:1\r\n":                   "%1[+a :1]",
		"_\r\n":                                "null",
		"|1\r\n+ttl\r\n:3\r\n:7\r\n":           ":7",
		"!5\r\nERR x\r\n":                      `-ERR x`,
		"*5\r\n:1\r\n:2\r\n:3\r\n:4\r\n:5\r\n": "*5[:1 :2 :3 :4 :5]",
	}
	for in, want := range cases {
		if got := parse(t, in).String(); got != want {
			t.Errorf("Read(%q).String() = %s; want %s", in, got, want)
		}
	}
	for _, bad := range []string{"?x\r\n", ":1x\r\n", "$5\r\nab\r\n", "*2\r\n:1\r\n", "$2\r\nabcd", "+no crlf\n",
		"$99999999999\r\n", strings.Repeat("*1\r\n", 20) + ":1\r\n"} {
		if err := Read(bufio.NewReader(strings.NewReader(bad)), new(Value)); err == nil {
			t.Errorf("Read(%q) = nil error; want a failure", bad)
		}
	}
}

// TestReadReuses: reading replies of a shape a Value has held does not
// allocate.
func TestReadReuses(t *testing.T) {
	reply := "*5\r\n:1\r\n:100\r\n:99\r\n:0\r\n:100\r\n%1\r\n$7\r\nallowed\r\n#t\r\n"
	src := strings.NewReader("")
	r := bufio.NewReader(src)
	v := new(Value)
	allocs := testing.AllocsPerRun(100, func() {
		src.Reset(reply)
		r.Reset(src)
		for range 2 {
			if err := Read(r, v); err != nil {
				t.Fatal(err)
			}
		}
	})
	if allocs != 0 {
		t.Fatalf("%.0f allocations per two replies; want 0", allocs)
	}
}

func TestAppendCommand(t *testing.T) {
	want := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n"
	if got := string(AppendCommand(nil, "SET", "k", "")); got != want {
		t.Errorf("AppendCommand = %q; want %q", got, want)
	}
	if got := string(AppendArgs(nil, [][]byte{[]byte("SET"), []byte("k"), nil})); got != want {
		t.Errorf("AppendArgs = %q; want %q", got, want)
	}
	v := new(Value)
	if err := Read(bufio.NewReader(strings.NewReader(want)), v); err != nil || v.String() != `*3["SET" "k" ""]` {
		t.Errorf("a command read as a reply: %v, %v", v, err)
	}
}

func FuzzRead(f *testing.F) {
	for _, s := range []string{"+OK\r\n", "*2\r\n:1\r\n$1\r\nx\r\n", "%1\r\n+a\r\n_\r\n", "$-1\r\n", "|1\r\n+a\r\n+b\r\n+c\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v := new(Value)
		r := bufio.NewReader(bytes.NewReader(b))
		for i := 0; i < 4; i++ { // several replies in a row, reusing v
			if Read(r, v) != nil {
				return
			}
			_ = v.String()
		}
	})
}

// atoi accepts exactly what strconv.ParseInt accepts in base 10 without a
// '+', and returns the same value.
func TestAtoi(t *testing.T) {
	for _, s := range []string{"0", "-0", "7", "-7", "1234567890", "9223372036854775807", "-9223372036854775808",
		"9223372036854775808", "-9223372036854775809", "99999999999999999999", "", "-", "+1", "1x", " 1", "00012",
		"18446744073709551615", "-18446744073709551616"} {
		checkAtoi(t, s)
	}
}

func checkAtoi(t *testing.T, s string) {
	t.Helper()
	got, ok := atoi([]byte(s))
	want, err := strconv.ParseInt(s, 10, 64)
	wantOK := err == nil && !strings.HasPrefix(s, "+")
	if ok != wantOK || (ok && got != want) {
		t.Errorf("atoi(%q) = %d, %v; strconv says %d, %v", s, got, ok, want, err)
	}
}

func FuzzAtoi(f *testing.F) {
	for _, s := range []string{"0", "-12", "9223372036854775807", "-9223372036854775808", "1e3"} {
		f.Add(s)
	}
	f.Fuzz(checkAtoi)
}

func TestReadRawRelaysEachReplyWhole(t *testing.T) {
	replies := []string{
		"+PONG\r\n", "-MOVED 3999 127.0.0.1:7002\r\n", ":-12\r\n", "$3\r\nabc\r\n", "$-1\r\n", "*-1\r\n", "_\r\n",
		"*5\r\n:1\r\n:20\r\n:19\r\n:-1\r\n:0\r\n",
		"%2\r\n+allowed\r\n#t\r\n+remaining\r\n,1.5\r\n",
		"|1\r\n+ttl\r\n:3600\r\n*1\r\n$4\r\n\r\n\r\n\r\n", // attributes, then a bulk holding CRLFs
		"=15\r\ntxt:Some string\r\n", "!21\r\nSYNTAX invalid syntax\r\n", ">2\r\n+a\r\n~1\r\n(12345678901234567890\r\n",
	}
	stream := strings.Join(replies, "")
	br := bufio.NewReader(strings.NewReader(stream))
	var buf []byte
	for i, want := range replies {
		got, err := ReadRaw(br, buf[:0])
		if err != nil || string(got) != want {
			t.Fatalf("reply %d: ReadRaw = %q, %v; want %q", i, got, err, want)
		}
		buf = got
	}
	if _, err := ReadRaw(br, nil); err == nil {
		t.Fatal("ReadRaw past the stream's end: no error")
	}
	for _, bad := range []string{"$5\r\nabc\r\n", "$3\r\nabcde", "?1\r\n", "*2\r\n:1\r\n"} {
		if _, err := ReadRaw(bufio.NewReader(strings.NewReader(bad)), nil); err == nil {
			t.Errorf("ReadRaw(%q): no error", bad)
		}
	}
}

// FuzzReadRaw: ReadRaw, which a --cluster-proxy relays replies with, never
// panics, returns only bytes of its input, and frames every reply Read
// reads exactly as Read does: the same bytes, in a row.
func FuzzReadRaw(f *testing.F) {
	for _, s := range []string{"+OK\r\n", "*2\r\n:1\r\n$1\r\nx\r\n", "%1\r\n+a\r\n_\r\n", "$-1\r\n", "|1\r\n+a\r\n+b\r\n+c\r\n",
		"-MOVED 1 127.0.0.1:7001\r\n", ">2\r\n+a\r\n=5\r\ntxt:x\r\n", "~1\r\n,1.5\r\n", "$3\r\nabcX\r\n", "*-1\r\n#t\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		raw := bufio.NewReader(bytes.NewReader(b))
		src := bytes.NewReader(b)
		cooked := bufio.NewReader(src)
		var got []byte
		v := new(Value)
		for i := 0; i < 4; i++ {
			before := len(got)
			var err error
			got, err = ReadRaw(raw, got)
			if !bytes.HasPrefix(b, got) {
				t.Fatalf("ReadRaw returned %q, not a prefix of its input %q", got, b)
			}
			if rerr := Read(cooked, v); rerr != nil {
				return // Read checks the contents too: ReadRaw may accept more
			}
			if err != nil {
				t.Fatalf("ReadRaw refused reply %d (%q) that Read reads: %v", i, b[before:], err)
			}
			if read := len(b) - src.Len() - cooked.Buffered(); read != len(got) {
				t.Fatalf("reply %d: ReadRaw framed %d bytes, Read %d", i, len(got), read)
			}
		}
	})
}
