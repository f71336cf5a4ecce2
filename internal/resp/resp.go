package resp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// The reply reader parses every reply completely, so that each one can be
// checked, and reuses its buffers: reading a reply does not allocate once
// a Value has held replies of that shape. It bounds what a broken or
// hostile stream can make it hold.

const (
	maxBulk  = 512 << 20 // a reply bulk longer than this is a broken stream (Redis's proto-max-bulk-len)
	maxElems = 1 << 20
	maxDepth = 8
)

// Value is one parsed reply. Text, for bulk, simple and error replies, and
// Elems, for aggregates, point into buffers that the next Read into the
// same Value reuses: copy what must outlive it.
type Value struct {
	Kind  byte   // the RESP type byte: + - : $ * _ # , ( = % ~ >
	Num   int64  // integer value; length of a bulk or aggregate, -1 for a RESP2 null
	Text  []byte // payload of + - $ = , ( ! (kept here, not parsed)
	Elems []Value
}

// IsInt reports whether v is an integer reply.
func (v *Value) IsInt() bool { return v.Kind == ':' }

// IsError reports whether v is an error reply (simple or RESP3 bulk error).
func (v *Value) IsError() bool { return v.Kind == '-' || v.Kind == '!' }

// IsNull reports whether v is a null: RESP3's, or a RESP2 null bulk or array.
func (v *Value) IsNull() bool { return v.Kind == '_' || v.Num < 0 && (v.Kind == '$' || v.Kind == '*') }

// ErrProtocol is a reply stream that is not RESP: the connection is unusable.
var ErrProtocol = errors.New("resp: protocol error in reply stream")

// Read reads one complete reply into v.
func Read(r *bufio.Reader, v *Value) error {
	return readDepth(r, v, 0)
}

func readDepth(r *bufio.Reader, v *Value, depth int) error {
	line, err := r.ReadSlice('\n')
	if err != nil {
		if err == bufio.ErrBufferFull {
			return fmt.Errorf("%w: header line longer than %d bytes", ErrProtocol, r.Size())
		}
		return err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return fmt.Errorf("%w: bad line %q", ErrProtocol, clip(string(line), 60))
	}
	v.Kind = line[0]
	body := line[1 : len(line)-2]
	v.Num = 0
	v.Text = v.Text[:0]
	v.Elems = v.Elems[:0]
	switch v.Kind {
	case '+', '-', ',', '(', '#':
		v.Text = append(v.Text, body...)
		return nil
	case '_':
		v.Num = -1
		return nil
	case ':':
		n, ok := atoi(body)
		if !ok {
			return fmt.Errorf("%w: bad integer %q", ErrProtocol, clip(string(body), 40))
		}
		v.Num = n
		return nil
	case '$', '=', '!':
		return readBulk(r, v, body)
	case '*', '%', '~', '>', '|':
		return readAggregate(r, v, body, depth)
	default:
		return fmt.Errorf("%w: unknown reply type %q", ErrProtocol, v.Kind)
	}
}

// readBulk reads the bytes of a bulk-like reply (a string, a verbatim
// string, a bulk error) whose header line's body gave its length.
func readBulk(r *bufio.Reader, v *Value, body []byte) error {
	n, ok := atoi(body)
	if !ok || n < -1 || n > maxBulk {
		return fmt.Errorf("%w: bad bulk length %q", ErrProtocol, clip(string(body), 40))
	}
	v.Num = n
	if n < 0 {
		return nil
	}
	// Read in steps of at most 1 MB, so that a broken length costs only
	// what actually arrives.
	need := int(n) + 2
	for len(v.Text) < need {
		start := len(v.Text)
		v.Text = slices.Grow(v.Text, min(need-start, 1<<20))
		v.Text = v.Text[:start+min(need-start, 1<<20)]
		if _, err := io.ReadFull(r, v.Text[start:]); err != nil {
			return err
		}
	}
	if v.Text[n] != '\r' || v.Text[n+1] != '\n' {
		return fmt.Errorf("%w: bulk not followed by CRLF", ErrProtocol)
	}
	v.Text = v.Text[:n]
	return nil
}

// readAggregate reads the elements of an aggregate reply (an array, a map,
// a set, a push, attributes) whose header line's body gave its count, at
// nesting depth depth.
func readAggregate(r *bufio.Reader, v *Value, body []byte, depth int) error {
	n, ok := atoi(body)
	if !ok || n < -1 || n > maxElems {
		return fmt.Errorf("%w: bad aggregate length %q", ErrProtocol, clip(string(body), 40))
	}
	v.Num = n
	if n < 0 {
		return nil
	}
	if depth >= maxDepth {
		return fmt.Errorf("%w: replies nested deeper than %d", ErrProtocol, maxDepth)
	}
	count := int(n)
	if v.Kind == '%' || v.Kind == '|' {
		count *= 2
	}
	for i := 0; i < count; i++ { // grown one by one, reusing earlier elements' buffers
		if i < cap(v.Elems) {
			v.Elems = v.Elems[:i+1]
		} else {
			v.Elems = append(v.Elems, Value{})
		}
		if err := readDepth(r, &v.Elems[i], depth+1); err != nil {
			return err
		}
	}
	if v.Kind == '|' { // attributes precede the real reply
		return readDepth(r, v, depth)
	}
	return nil
}

// atoi parses a RESP integer: optional '-', then decimal digits, within
// int64. It is strconv.ParseInt(string(b), 10, 64) without the string and
// the generality, which cost the load generator CPU on every reply. It
// takes what a server sends, leading zeros and "-0" included, so it is not
// Redis's string2ll (internal/parse.Int).
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

// String renders a reply for an error report or a log, cut to about 120
// bytes: +OK, -ERR …, :1, "text", null, *2[:1 "x"].
func (v *Value) String() string {
	var b strings.Builder
	describeTo(&b, v)
	return clip(b.String(), 120)
}

func describeTo(b *strings.Builder, v *Value) {
	if b.Len() > 160 {
		return
	}
	switch v.Kind {
	case '+':
		b.WriteString("+" + string(v.Text))
	case '-', '!':
		b.WriteString("-" + string(v.Text))
	case ':':
		b.WriteString(":" + strconv.FormatInt(v.Num, 10))
	case '_':
		b.WriteString("null")
	case '$', '=':
		if v.Num < 0 {
			b.WriteString("null bulk")
			return
		}
		b.WriteString(strconv.Quote(clip(string(v.Text), 40)))
	case '*', '%', '~', '>':
		if v.Num < 0 {
			b.WriteString("null array")
			return
		}
		b.WriteByte(v.Kind)
		b.WriteString(strconv.FormatInt(v.Num, 10) + "[")
		for i := range v.Elems {
			if i > 0 {
				b.WriteString(" ")
			}
			describeTo(b, &v.Elems[i])
		}
		b.WriteString("]")
	default:
		b.WriteString(string(v.Kind) + string(v.Text))
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// AppendCommand appends a command as a RESP array of bulk strings.
func AppendCommand(b []byte, args ...string) []byte {
	b = appendHeader(b, '*', len(args))
	for _, a := range args {
		b = appendHeader(b, '$', len(a))
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}

// AppendArgs appends a command of byte-slice arguments, as AppendCommand.
func AppendArgs(b []byte, args [][]byte) []byte {
	b = appendHeader(b, '*', len(args))
	for _, a := range args {
		b = appendHeader(b, '$', len(a))
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}

func appendHeader(b []byte, kind byte, n int) []byte {
	b = append(b, kind)
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

// ReadRaw appends one complete reply, exactly as it arrived, to dst: a
// proxy relays it byte for byte. It checks the framing with Read's bounds,
// not the contents.
func ReadRaw(r *bufio.Reader, dst []byte) ([]byte, error) {
	return readRaw(r, dst, 0)
}

func readRaw(r *bufio.Reader, dst []byte, depth int) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		if err == bufio.ErrBufferFull {
			return dst, fmt.Errorf("%w: header line longer than %d bytes", ErrProtocol, r.Size())
		}
		return dst, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return dst, fmt.Errorf("%w: bad line %q", ErrProtocol, clip(string(line), 60))
	}
	kind, body := line[0], line[1:len(line)-2]
	dst = append(dst, line...)
	switch kind {
	case '+', '-', ',', '(', '#', '_', ':':
		return dst, nil
	case '$', '=', '!':
		n, ok := atoi(body)
		if !ok || n < -1 || n > maxBulk {
			return dst, fmt.Errorf("%w: bad bulk length %q", ErrProtocol, clip(string(body), 40))
		}
		if n < 0 {
			return dst, nil
		}
		start, need := len(dst), int(n)+2
		for len(dst)-start < need { // in steps of at most 1 MB, as readBulk
			at := len(dst)
			step := min(need-(at-start), 1<<20)
			dst = slices.Grow(dst, step)[:at+step]
			if n, err := io.ReadFull(r, dst[at:]); err != nil {
				return dst[:at+n], err // what arrived, never the bytes grown for the rest
			}
		}
		if dst[len(dst)-2] != '\r' || dst[len(dst)-1] != '\n' {
			return dst, fmt.Errorf("%w: bulk not followed by CRLF", ErrProtocol)
		}
		return dst, nil
	case '*', '%', '~', '>', '|':
		n, ok := atoi(body)
		if !ok || n < -1 || n > maxElems {
			return dst, fmt.Errorf("%w: bad aggregate length %q", ErrProtocol, clip(string(body), 40))
		}
		if depth >= maxDepth {
			return dst, fmt.Errorf("%w: replies nested deeper than %d", ErrProtocol, maxDepth)
		}
		count := int(n)
		if kind == '%' || kind == '|' {
			count *= 2
		}
		for i := 0; i < count; i++ {
			if dst, err = readRaw(r, dst, depth+1); err != nil {
				return dst, err
			}
		}
		if kind == '|' { // attributes precede the real reply
			return readRaw(r, dst, depth)
		}
		return dst, nil
	}
	return dst, fmt.Errorf("%w: unknown reply type %q", ErrProtocol, kind)
}
