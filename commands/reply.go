package commands

import (
	"slices"

	"github.com/tidwall/redcon"
)

// Replies are appended to the client's output buffer with redcon's RESP
// encoders and flushed once per pipeline batch. RESP3 types (maps, booleans,
// nulls, doubles) are written here where redcon has no encoder for them.

func (c *Client) writeOK()                 { c.out = redcon.AppendOK(c.out) }
func (c *Client) writeSimple(s string)     { c.out = redcon.AppendString(c.out, s) }
func (c *Client) writeInt(n int64)         { c.out = appendInt(c.out, n) }
func (c *Client) writeBulk(b []byte)       { c.out = redcon.AppendBulk(c.out, b) }
func (c *Client) writeBulkString(s string) { c.out = redcon.AppendBulkString(c.out, s) }
func (c *Client) writeArray(n int)         { c.out = redcon.AppendArray(c.out, n) }

// writeError is the one place a reply error is written. Errors that carry a
// Redis error code (an upper-case first word) go out as they are; any other
// error gets Redis's generic "ERR " prefix.
func (c *Client) writeError(err error) {
	msg := err.Error()
	if !hasErrorCode(msg) {
		msg = "ERR " + msg
	}
	c.out = redcon.AppendError(c.out, msg)
	c.errors++
}

func hasErrorCode(msg string) bool {
	i := 0
	for i < len(msg) && msg[i] >= 'A' && msg[i] <= 'Z' {
		i++
	}
	return i > 0 && (i == len(msg) || msg[i] == ' ')
}

// writeNull writes a null: "$-1" in RESP2, "_" in RESP3.
func (c *Client) writeNull() {
	if c.resp3.Load() {
		c.out = append(c.out, '_', '\r', '\n')
		return
	}
	c.out = redcon.AppendNull(c.out)
}

// writeMap writes a map header of n pairs: "%n" in RESP3, an array of 2n
// elements in RESP2.
func (c *Client) writeMap(n int) {
	if c.resp3.Load() {
		c.out = appendLine(c.out, '%', int64(n))
		return
	}
	c.out = redcon.AppendArray(c.out, 2*n)
}

// writeSet writes a set header: "~n" in RESP3, an array in RESP2.
func (c *Client) writeSet(n int) {
	if c.resp3.Load() {
		c.out = appendLine(c.out, '~', int64(n))
		return
	}
	c.out = redcon.AppendArray(c.out, n)
}

// writeBool writes a boolean: "#t"/"#f" in RESP3, 1/0 in RESP2.
func (c *Client) writeBool(b bool) {
	if c.resp3.Load() {
		if b {
			c.out = append(c.out, '#', 't', '\r', '\n')
		} else {
			c.out = append(c.out, '#', 'f', '\r', '\n')
		}
		return
	}
	if b {
		c.out = append(c.out, ':', '1', '\r', '\n')
	} else {
		c.out = append(c.out, ':', '0', '\r', '\n')
	}
}

// appendInt appends the RESP integer ":n\r\n". It is redcon.AppendInt
// written for the decision replies, five integers each, without strconv's
// calls and copies (the reply encoding was a sixth of a pipelined
// decision's CPU).
func appendInt(b []byte, n int64) []byte { return appendLine(b, ':', n) }

// appendLine appends a RESP line of a type byte and a number: an integer
// (':'), or the header of an aggregate or a blob ('%', '~', '='). It counts
// the digits first and writes them right to left in place.
func appendLine(b []byte, kind byte, n int64) []byte {
	if n >= 0 && n < 10 {
		return append(b, kind, byte('0'+n), '\r', '\n')
	}
	u := uint64(n)
	if n < 0 {
		u = -u
	}
	size := 4 // the type byte, the first digit, CRLF
	for x := u; x >= 10; x /= 10 {
		size++
	}
	if n < 0 {
		size++
	}
	l := len(b)
	b = slices.Grow(b, size)[:l+size]
	t := b[l:]
	t[0] = kind
	t[size-2], t[size-1] = '\r', '\n'
	i := size - 2
	for u >= 10 {
		i--
		t[i] = byte('0' + u%10)
		u /= 10
	}
	t[i-1] = byte('0' + u)
	if n < 0 {
		t[1] = '-'
	}
	return b
}

// writeVerbatim writes a text blob (INFO, CLIENT INFO): a verbatim string in
// RESP3, a bulk string in RESP2, as Redis does.
func (c *Client) writeVerbatim(s string) {
	if !c.resp3.Load() {
		c.out = redcon.AppendBulkString(c.out, s)
		return
	}
	c.out = appendLine(c.out, '=', int64(len(s)+4))
	c.out = append(c.out, "txt:"...)
	c.out = append(c.out, s...)
	c.out = append(c.out, '\r', '\n')
}
