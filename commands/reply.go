package commands

import (
	"slices"

	"github.com/sluice-rl/sluice/internal/replyerr"

	"github.com/tidwall/redcon"
)

// Replies are appended to the connection's output buffer (server.Conn.Out)
// with redcon's RESP encoders, and written by the transport once per
// batch. RESP3 types (maps, booleans, nulls, verbatim strings) are written
// here where redcon has no encoder for them.

func (s *session) writeOK()                   { s.conn.Out = redcon.AppendOK(s.conn.Out) }
func (s *session) writeSimple(text string)    { s.conn.Out = redcon.AppendString(s.conn.Out, text) }
func (s *session) writeInt(n int64)           { s.conn.Out = appendInt(s.conn.Out, n) }
func (s *session) writeBulk(b []byte)         { s.conn.Out = redcon.AppendBulk(s.conn.Out, b) }
func (s *session) writeBulkString(str string) { s.conn.Out = redcon.AppendBulkString(s.conn.Out, str) }
func (s *session) writeArray(n int)           { s.conn.Out = redcon.AppendArray(s.conn.Out, n) }

// writeError is the one place a reply error is written, with the code
// replyerr's one rule gives it.
func (s *session) writeError(err error) {
	at := len(s.conn.Out)
	s.conn.Out = replyerr.Append(s.conn.Out, err)
	s.errors++
	s.h.errs.count(s.conn.Out[at:])
	if s.cur != 0 {
		s.slots[s.cur-1].failed++
	}
}

// writeNull writes a null: "$-1" in RESP2, "_" in RESP3.
func (s *session) writeNull() {
	if s.resp3.Load() {
		s.conn.Out = append(s.conn.Out, '_', '\r', '\n')
		return
	}
	s.conn.Out = redcon.AppendNull(s.conn.Out)
}

// writeNullArray writes a null array: "*-1" in RESP2, "_" in RESP3, as
// Redis's EXEC answers when a watched key changed.
func (s *session) writeNullArray() {
	if s.resp3.Load() {
		s.conn.Out = append(s.conn.Out, '_', '\r', '\n')
		return
	}
	s.conn.Out = append(s.conn.Out, '*', '-', '1', '\r', '\n')
}

// writeMap writes a map header of n pairs: "%n" in RESP3, an array of 2n
// elements in RESP2.
func (s *session) writeMap(n int) {
	if s.resp3.Load() {
		s.conn.Out = appendLine(s.conn.Out, '%', int64(n))
		return
	}
	s.conn.Out = redcon.AppendArray(s.conn.Out, 2*n)
}

// writeSet writes a set header: "~n" in RESP3, an array in RESP2.
func (s *session) writeSet(n int) {
	if s.resp3.Load() {
		s.conn.Out = appendLine(s.conn.Out, '~', int64(n))
		return
	}
	s.conn.Out = redcon.AppendArray(s.conn.Out, n)
}

// writeBool writes a boolean: "#t"/"#f" in RESP3, 1/0 in RESP2.
func (s *session) writeBool(b bool) {
	if s.resp3.Load() {
		if b {
			s.conn.Out = append(s.conn.Out, '#', 't', '\r', '\n')
		} else {
			s.conn.Out = append(s.conn.Out, '#', 'f', '\r', '\n')
		}
		return
	}
	if b {
		s.conn.Out = append(s.conn.Out, ':', '1', '\r', '\n')
	} else {
		s.conn.Out = append(s.conn.Out, ':', '0', '\r', '\n')
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
func (s *session) writeVerbatim(text string) {
	if !s.resp3.Load() {
		s.conn.Out = redcon.AppendBulkString(s.conn.Out, text)
		return
	}
	s.conn.Out = appendLine(s.conn.Out, '=', int64(len(text)+4))
	s.conn.Out = append(s.conn.Out, "txt:"...)
	s.conn.Out = append(s.conn.Out, text...)
	s.conn.Out = append(s.conn.Out, '\r', '\n')
}
