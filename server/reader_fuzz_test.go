package server

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// FuzzReadCommand checks readCommand's contract on any input: it never
// panics, never claims more bytes than it was given, returns arguments that
// point into the input (multibulk) or the scratch buffer (inline) and cannot
// grow into each other, parses its own output re-encoded as RESP to the same
// arguments, and parses an input fed in two pieces, split anywhere, to the
// same commands as the input fed whole. Inputs without quotes are also
// split by an independent reference of sdssplitargs and compared.
//
// mode's bit 0 reads as a client that has not authenticated; bit 1 uses
// tight limits so that short inputs reach them.
func FuzzReadCommand(f *testing.F) {
	payload := bytes.Repeat([]byte("payload"), 20)
	seeds := []string{
		// Redis's tests/unit/protocol.tcl
		"*-10\r\n",
		"*3000000000\r\n",
		"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$-10\r\n",
		"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$2000000000\r\n",
		"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$blabla\r\n",
		"*1\r\nfoo\r\n",
		"*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n",
		"\x00" + string(payload),
		"*\x00" + string(payload),
		"$\x00" + string(payload),
		"set \"\"\"test-key\"\"\" test-value\r\nping\r\n",
		// redcon's overflow
		"*1\r\n$9223372036854775807\r\nx\r\n",
		// valid frames and pipelines
		"*1\r\n$4\r\nPING\r\n",
		"*4\r\n$8\r\nRL.TOKEN\r\n$7\r\nuser:42\r\n$4\r\n10/s\r\n$2\r\n20\r\n*1\r\n$4\r\nPING\r\n",
		"*2\r\n$4\r\nECHO\r\n$0\r\n\r\n*0\r\n*-1\r\n",
		"PING\r\nRL.TOKEN k 10/s 20\r\n\r\nECHO \"a\\x41\\n\" 'b\\'c'\r\n",
		"ECHO a\vb \fc\r\n",
		"*11\r\n$1\r\na\r\n",
		"*1\r\n$16385\r\n",
	}
	for _, s := range seeds {
		for mode := range uint8(4) {
			f.Add([]byte(s), mode)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		lim := readerTestLimits()
		if mode&2 != 0 {
			lim = ReaderLimits{MaxBulk: 64, MaxArgs: 8, MaxInline: 128}
		}
		unauth := mode&1 != 0
		checkOneCommand(t, data, &lim, unauth)
		checkSplitConsistency(t, data, &lim, unauth)
		if bytes.IndexByte(data, '"') < 0 && bytes.IndexByte(data, '\'') < 0 {
			var scratch []byte
			got, err := splitArgs(data, nil, &scratch)
			want := splitUnquotedReference(data)
			if err != nil || !sameArgs(got, want) {
				t.Fatalf("splitArgs(%q) = %q, %v; the reference splits it as %q", data, got, err, want)
			}
		}
	})
}

// checkOneCommand checks one call's result: bounds, aliasing, and that the
// arguments re-encoded as RESP parse back to themselves.
func checkOneCommand(t *testing.T, data []byte, lim *ReaderLimits, unauth bool) {
	var scratch []byte
	buf := data[:len(data):len(data)]
	args, used, err := readCommand(buf, make([][]byte, 0, 4), &scratch, lim, unauth)
	if used < 0 || used > len(buf) || (err != nil && used != 0) {
		t.Fatalf("readCommand(%q) = used %d, %v; want 0 ≤ used ≤ %d and 0 with an error", data, used, err, len(buf))
	}
	if err != nil || used == 0 {
		return
	}
	multibulk := buf[0] == '*'
	home := buf[:used:used]
	if !multibulk {
		home = scratch[:cap(scratch)]
	}
	for i, a := range args {
		if cap(a) != len(a) {
			t.Fatalf("readCommand(%q): argument %d has cap %d > len %d; appending to it would overwrite the next", data, i, cap(a), len(a))
		}
		if len(a) > 0 && !aliases(a, home) {
			t.Fatalf("readCommand(%q): argument %d (%q) is not inside the %s", data, i, a, map[bool]string{true: "input", false: "scratch buffer"}[multibulk])
		}
	}
	if len(args) == 0 {
		return
	}
	fits := int64(len(args)) <= lim.MaxArgs && !(unauth && len(args) > unauthMaxArgs)
	for _, a := range args {
		fits = fits && int64(len(a)) <= lim.MaxBulk && !(unauth && len(a) > unauthMaxBulk)
	}
	if !fits {
		if multibulk {
			t.Fatalf("readCommand(%q) accepted %d arguments beyond its limits %+v", data, len(args), *lim)
		}
		return // an inline command may hold what a multibulk one may not
	}
	enc := encodeMultibulk(args)
	again, n, err := readCommand(enc, nil, &scratch, lim, unauth)
	if err != nil || n != len(enc) || !sameArgs(again, args) {
		t.Fatalf("readCommand(%q) = %q; re-encoded as %q it reads %q, used %d of %d, %v", data, args, enc, again, n, len(enc), err)
	}
}

// checkSplitConsistency feeds data whole, then in two pieces split at every
// point (at about 128 points for inputs over 256 bytes): the commands, the
// bytes left and the error must be the same.
func checkSplitConsistency(t *testing.T, data []byte, lim *ReaderLimits, unauth bool) {
	whole := feedPieces(data, len(data), lim, unauth)
	step := 1
	if len(data) > 256 { // every point costs O(n²) on inputs of many short frames
		step = len(data)/128 + 1
	}
	for k := 0; k < len(data); k += step {
		split := feedPieces(data, k, lim, unauth)
		if !sameCommands(split.cmds, whole.cmds) || split.rest != whole.rest || !sameStreamError(split.err, whole.err) {
			t.Fatalf("input %q fed whole: %q, rest %d, %v; split at %d: %q, rest %d, %v",
				data, whole.cmds, whole.rest, whole.err, k, split.cmds, split.rest, split.err)
		}
	}
}

type fedStream struct {
	cmds [][]string
	rest int // bytes not consumed
	err  error
}

// feedPieces gives readCommand data[:k] as the first read and all of data
// as the second, the way the connection loop sees two reads.
func feedPieces(data []byte, k int, lim *ReaderLimits, unauth bool) fedStream {
	var s fedStream
	var args [][]byte
	var scratch []byte
	pos := 0
	for _, end := range []int{k, len(data)} {
		for pos < end {
			var n int
			args, n, s.err = readCommand(data[pos:end:end], args, &scratch, lim, unauth)
			if s.err != nil {
				s.rest = len(data) - pos
				return s
			}
			if n == 0 {
				break
			}
			if len(args) > 0 {
				cmd := make([]string, len(args))
				for i, a := range args {
					cmd[i] = string(a)
				}
				s.cmds = append(s.cmds, cmd)
			}
			pos += n
		}
	}
	s.rest = len(data) - pos
	return s
}

// sameStreamError compares the errors of two feedings. A count line longer
// than 64 KB without its '\r' is "too big" when read in pieces and "invalid"
// once its end arrives, in Redis as here.
func sameStreamError(split, whole error) bool {
	switch {
	case split == whole:
		return true
	case split == errProtoBigMbulkCount:
		return whole == errProtoMultibulkLen
	case split == errProtoBigBulkCount:
		return whole == errProtoBulkLen
	}
	return false
}

// splitUnquotedReference is sdssplitargs for a line without quotes, built
// differently: fields separated by ' ', '\t', '\r' and '\n', each with the
// other blanks (\v, \f) that sdssplitargs skips before an argument trimmed
// from its front. NUL is an ordinary byte, as in readCommand.
func splitUnquotedReference(line []byte) [][]byte {
	var out [][]byte
	for _, f := range bytes.FieldsFunc(line, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\r' || r == '\n'
	}) {
		if f = bytes.TrimLeft(f, "\v\f"); len(f) > 0 {
			out = append(out, f)
		}
	}
	return out
}

func encodeMultibulk(args [][]byte) []byte {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, "$"+strconv.Itoa(len(a))+"\r\n"...)
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}

// aliases reports whether a lies inside b's backing array.
func aliases(a, b []byte) bool {
	if len(a) == 0 || cap(b) == 0 {
		return false
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(a)))
	return p >= lo && p+uintptr(len(a)) <= lo+uintptr(cap(b))
}

func sameArgs(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// FuzzReadResume: parsing a stream in chunks while carrying unfinished
// commands in a readState (and moving the bytes between chunks, as the
// client's buffer does) gives the same commands as parsing it whole.
func FuzzReadResume(f *testing.F) {
	f.Add([]byte("*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$0\r\n\r\n*1\r\n$4\r\nPING\r\n"), uint8(1))
	f.Add([]byte("*2\r\n$4\r\nECHO\r\n$5\r\nhello\r\nPING\r\n*1\r\n$3\r\nfoo"), uint8(3))
	f.Add([]byte("*1\r\n$9223372036854775807\r\nx\r\n"), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		lim := ReaderLimits{MaxBulk: 1 << 10, MaxArgs: 64, MaxInline: 256}
		whole := parseAll(data, &lim, nil, len(data))
		step := int(chunk%16) + 1
		got := parseAll(data, &lim, &readState{}, step)
		if whole.err != got.err || len(whole.cmds) != len(got.cmds) {
			t.Fatalf("chunks of %d: %d commands, err %v; whole: %d commands, err %v", step, len(got.cmds), got.err, len(whole.cmds), whole.err)
		}
		for i := range whole.cmds {
			if whole.cmds[i] != got.cmds[i] {
				t.Fatalf("command %d: %q in chunks; %q whole", i, got.cmds[i], whole.cmds[i])
			}
		}
	})
}

type parsed struct {
	cmds []string
	err  error
}

// parseAll feeds data step bytes at a time into a buffer that is copied
// (moved) at every step, and parses every command it can.
func parseAll(data []byte, lim *ReaderLimits, st *readState, step int) parsed {
	var out parsed
	var buf, scratch []byte
	var args [][]byte
	for sent := 0; sent < len(data) || len(buf) > 0; {
		if sent < len(data) {
			n := min(step, len(data)-sent)
			buf = append(append([]byte(nil), buf...), data[sent:sent+n]...) // a new buffer: the bytes moved
			sent += n
			if st != nil {
				st.moved = true
			}
		}
		for len(buf) > 0 {
			var used int
			var err error
			args, used, err = readCommandFrom(buf, args, &scratch, lim, false, st)
			if err != nil {
				out.err = err
				return out
			}
			if used == 0 {
				break
			}
			var b strings.Builder
			for _, a := range args {
				b.WriteString(strconv.Quote(string(a)) + " ")
			}
			out.cmds = append(out.cmds, b.String())
			buf = buf[used:]
		}
		if sent == len(data) {
			break
		}
	}
	return out
}
