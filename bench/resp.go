package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// A small RESP2/RESP3 reply reader for the load generator. It parses every
// reply completely, so that each one can be checked, and it reuses its
// buffers: reading a reply does not allocate once a connection has seen
// replies of that shape.

const (
	maxBulk  = 64 << 20 // a reply bulk longer than this is treated as a broken stream
	maxElems = 1 << 20
	maxDepth = 8
)

// value is one parsed reply. Text, for bulk, simple and error replies, and
// elems, for aggregates, point into buffers that the next read reuses.
type value struct {
	kind  byte   // the RESP type byte: + - : $ * _ # , ( = % ~ >
	num   int64  // integer value; length of a bulk or aggregate, -1 for a RESP2 null
	text  []byte // payload of + - $ = , ( (kept here, not parsed)
	elems []value
}

// isInt reports whether v is an integer reply.
func (v *value) isInt() bool { return v.kind == ':' }

// isError reports whether v is an error reply (simple or RESP3 bulk error).
func (v *value) isError() bool { return v.kind == '-' || v.kind == '!' }

// errProtocol is a reply stream that is not RESP: the connection is unusable.
var errProtocol = errors.New("protocol error in reply stream")

// readValue reads one complete reply into v.
func readValue(r *bufio.Reader, v *value) error {
	return readValueDepth(r, v, 0)
}

func readValueDepth(r *bufio.Reader, v *value, depth int) error {
	line, err := r.ReadSlice('\n')
	if err != nil {
		if err == bufio.ErrBufferFull {
			return fmt.Errorf("%w: header line longer than %d bytes", errProtocol, r.Size())
		}
		return err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return fmt.Errorf("%w: bad line %q", errProtocol, clip(string(line), 60))
	}
	v.kind = line[0]
	body := line[1 : len(line)-2]
	v.num = 0
	v.text = v.text[:0]
	v.elems = v.elems[:0]
	switch v.kind {
	case '+', '-', ',', '(', '#':
		v.text = append(v.text, body...)
		return nil
	case '_':
		v.num = -1
		return nil
	case ':':
		n, ok := atoi(body)
		if !ok {
			return fmt.Errorf("%w: bad integer %q", errProtocol, clip(string(body), 40))
		}
		v.num = n
		return nil
	case '$', '=', '!':
		n, ok := atoi(body)
		if !ok || n < -1 || n > maxBulk {
			return fmt.Errorf("%w: bad bulk length %q", errProtocol, clip(string(body), 40))
		}
		v.num = n
		if n < 0 {
			return nil
		}
		// Read in steps of at most 1 MB, so that a broken length costs only
		// what actually arrives.
		need := int(n) + 2
		for len(v.text) < need {
			start := len(v.text)
			v.text = slices.Grow(v.text, min(need-start, 1<<20))
			v.text = v.text[:start+min(need-start, 1<<20)]
			if _, err := io.ReadFull(r, v.text[start:]); err != nil {
				return err
			}
		}
		if v.text[n] != '\r' || v.text[n+1] != '\n' {
			return fmt.Errorf("%w: bulk not followed by CRLF", errProtocol)
		}
		v.text = v.text[:n]
		return nil
	case '*', '%', '~', '>', '|':
		n, ok := atoi(body)
		if !ok || n < -1 || n > maxElems {
			return fmt.Errorf("%w: bad aggregate length %q", errProtocol, clip(string(body), 40))
		}
		v.num = n
		if n < 0 {
			return nil
		}
		if depth >= maxDepth {
			return fmt.Errorf("%w: replies nested deeper than %d", errProtocol, maxDepth)
		}
		count := int(n)
		if v.kind == '%' || v.kind == '|' {
			count *= 2
		}
		for i := 0; i < count; i++ { // grown one by one, reusing earlier elements' buffers
			if i < cap(v.elems) {
				v.elems = v.elems[:i+1]
			} else {
				v.elems = append(v.elems, value{})
			}
			if err := readValueDepth(r, &v.elems[i], depth+1); err != nil {
				return err
			}
		}
		if v.kind == '|' { // attributes precede the real reply
			return readValueDepth(r, v, depth)
		}
		return nil
	default:
		return fmt.Errorf("%w: unknown reply type %q", errProtocol, v.kind)
	}
}

// atoi parses a RESP integer: optional '-', then decimal digits, within
// int64. It is strconv.ParseInt(string(b), 10, 64) without the string and
// the generality, which were a tenth of the generator's CPU on five-integer
// replies.
func atoi(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	var u uint64
	for _, c := range b {
		if c < '0' || c > '9' || u > (1<<63)/10 {
			return 0, false
		}
		u = u*10 + uint64(c-'0') // at most 1<<63 + 9: no uint64 overflow
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true
	}
	if u > 1<<63-1 {
		return 0, false
	}
	return int64(u), true
}

// describe renders a reply for an error report, cut to about 120 bytes.
func describe(v *value) string {
	var b strings.Builder
	describeTo(&b, v)
	return clip(b.String(), 120)
}

func describeTo(b *strings.Builder, v *value) {
	if b.Len() > 160 {
		return
	}
	switch v.kind {
	case '+':
		b.WriteString("+" + string(v.text))
	case '-', '!':
		b.WriteString("-" + string(v.text))
	case ':':
		b.WriteString(":" + strconv.FormatInt(v.num, 10))
	case '_':
		b.WriteString("null")
	case '$', '=':
		if v.num < 0 {
			b.WriteString("null bulk")
			return
		}
		b.WriteString(strconv.Quote(clip(string(v.text), 40)))
	case '*', '%', '~', '>':
		if v.num < 0 {
			b.WriteString("null array")
			return
		}
		b.WriteByte(v.kind)
		b.WriteString(strconv.FormatInt(v.num, 10) + "[")
		for i := range v.elems {
			if i > 0 {
				b.WriteString(" ")
			}
			describeTo(b, &v.elems[i])
		}
		b.WriteString("]")
	default:
		b.WriteString(string(v.kind) + string(v.text))
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// appendCommand appends a command as a RESP array of bulk strings.
func appendCommand(b []byte, args ...string) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = appendBulk(b, a)
	}
	return b
}

func appendBulk(b []byte, s string) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}
