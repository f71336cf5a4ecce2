package compat

import (
	"strconv"
	"strings"
)

// Type is a RESP reply's type.
type Type uint8

const (
	// Nil is Lua's false (or nil) returned: RESP2 "$-1", RESP3 "_".
	Nil Type = iota
	// Integer is a Lua number returned (truncated toward zero).
	Integer
	// Bulk is a Lua string returned.
	Bulk
	// Array is a Lua table returned: its elements up to the first nil.
	Array
	// Error is a failed script: Reply.Err holds the message.
	Error
	// OK is the status reply "+OK" of a plain SET.
	OK
)

// MaxElems is the longest array a supported script returns.
const MaxElems = 4

// Elem is a scalar reply: Nil, Integer or Bulk. A bulk string is at most
// MaxBytes bytes (a Bytes value; a "%.17g" or "%.14g" number takes at most
// 24), held in place so that building a reply allocates nothing.
type Elem struct {
	Type Type
	n    uint8
	Int  int64
	buf  [MaxBytes]byte
}

// Bytes returns a Bulk element's string; it aliases e.
func (e *Elem) Bytes() []byte { return e.buf[:e.n] }

// Reply is what a script returns to the client: an Array of Elems (every
// supported script's success), an Error, or a scalar in Elem. The zero value
// is a Nil reply.
type Reply struct {
	Elem
	// Err is an Error reply's message, code first ("ERR …", "WRONGTYPE …"),
	// without the leading '-' and the CRLF.
	Err   string
	Len   int // Array: the number of elements in Elems
	Elems [MaxElems]Elem
}

func (r *Reply) reset() { *r = Reply{} }

func (r *Reply) setError(msg string) {
	r.reset()
	r.Type, r.Err = Error, msg
}

// array makes r an empty array; add appends to it.
func (r *Reply) array() {
	r.reset()
	r.Type = Array
}

// addInt appends the integer reply of the Lua number f.
func (r *Reply) addInt(f float64) {
	r.Elems[r.Len] = Elem{Type: Integer, Int: luaInt(f)}
	r.Len++
}

// addToString appends the bulk reply of tostring(f).
func (r *Reply) addToString(f float64) {
	e := &r.Elems[r.Len]
	*e = Elem{Type: Bulk}
	e.n = uint8(len(appendToString(e.buf[:0], f)))
	r.Len++
}

// addValue appends what a string value becomes in Lua and then in the
// reply: a bulk string, or Nil for Absent (GET's false).
func (r *Reply) addValue(v Value) {
	e := &r.Elems[r.Len]
	*e = Elem{Type: Nil}
	if v.IsString() {
		e.Type = Bulk
		e.n = uint8(len(v.AppendString(e.buf[:0])))
	}
	r.Len++
}

// AppendRESP appends r in the protocol of a client that speaks RESP3 (resp3)
// or RESP2. Only Nil differs between the two for these replies.
func (r *Reply) AppendRESP(dst []byte, resp3 bool) []byte {
	switch r.Type {
	case Error:
		dst = append(dst, '-')
		dst = append(dst, r.Err...)
		return append(dst, '\r', '\n')
	case Array:
		dst = append(dst, '*')
		dst = strconv.AppendInt(dst, int64(r.Len), 10)
		dst = append(dst, '\r', '\n')
		for i := 0; i < r.Len; i++ {
			dst = r.Elems[i].appendRESP(dst, resp3)
		}
		return dst
	}
	return r.Elem.appendRESP(dst, resp3)
}

func (e *Elem) appendRESP(dst []byte, resp3 bool) []byte {
	switch e.Type {
	case Integer:
		dst = append(dst, ':')
		dst = strconv.AppendInt(dst, e.Int, 10)
	case OK:
		dst = append(dst, "+OK"...)
	case Bulk:
		dst = append(dst, '$')
		dst = strconv.AppendInt(dst, int64(e.n), 10)
		dst = append(dst, '\r', '\n')
		dst = append(dst, e.Bytes()...)
	default:
		if resp3 {
			dst = append(dst, '_')
		} else {
			dst = append(dst, "$-1"...)
		}
	}
	return append(dst, '\r', '\n')
}

// String describes r for tests and logs: (error) ERR …, 5, "0.5", (nil),
// [1 "2"].
func (r *Reply) String() string {
	switch r.Type {
	case Error:
		return "(error) " + r.Err
	case Array:
		var b strings.Builder
		b.WriteByte('[')
		for i := 0; i < r.Len; i++ {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(r.Elems[i].String())
		}
		b.WriteByte(']')
		return b.String()
	}
	return r.Elem.String()
}

// String describes e: 5, "0.5" or (nil).
func (e *Elem) String() string {
	switch e.Type {
	case Integer:
		return strconv.FormatInt(e.Int, 10)
	case Bulk:
		return strconv.Quote(string(e.Bytes()))
	case OK:
		return "OK"
	}
	return "(nil)"
}
