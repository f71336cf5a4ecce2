package replyerr

import "errors"

// Code is the first word of a reply error line, Redis's error code.
type Code string

// The codes sluice answers with, and those its clients act on. Clients
// retry TRYAGAIN, CLUSTERDOWN, MOVED, ASK, LOADING and READONLY by
// themselves, so those mean that nothing was applied; UNKNOWN means that
// the outcome is unknown, and no client library retries it.
const (
	ERR         Code = "ERR" // Redis's generic code
	WRONGTYPE   Code = "WRONGTYPE"
	OOM         Code = "OOM"
	MISCONF     Code = "MISCONF"
	NOPERM      Code = "NOPERM"
	NOAUTH      Code = "NOAUTH"
	WRONGPASS   Code = "WRONGPASS"
	NOPROTO     Code = "NOPROTO"
	DENIED      Code = "DENIED"
	NOSCRIPT    Code = "NOSCRIPT"
	NOTBUSY     Code = "NOTBUSY"
	BUSY        Code = "BUSY"
	EXECABORT   Code = "EXECABORT"
	CLUSTERDOWN Code = "CLUSTERDOWN"
	UNKNOWN     Code = "UNKNOWN"
	READONLY    Code = "READONLY"
	TRYAGAIN    Code = "TRYAGAIN"
	MOVED       Code = "MOVED"
	ASK         Code = "ASK"
	CROSSSLOT   Code = "CROSSSLOT"
	LOADING     Code = "LOADING"
)

// Generic is a reply error of Redis's generic code, ERR: its text is
// Redis's without the "ERR ", which Line adds. Values compare with ==.
type Generic string

func (e Generic) Error() string { return string(e) }

// Error is a reply error with a code of its own: its text begins with the
// code word ("WRONGTYPE Operation against …"). Values compare with ==.
type Error string

// New is the reply error of code with text. Texts of the generic code are
// Generic values.
func New(code Code, text string) Error { return Error(string(code) + " " + text) }

func (e Error) Error() string { return string(e) }

// Code is e's code word.
func (e Error) Code() Code {
	for i := 0; i < len(e); i++ {
		if e[i] == ' ' {
			return Code(e[:i])
		}
	}
	return Code(e)
}

// Line is the one rule that gives a reply error its code: it returns err's
// reply line, without the '-' and the CRLF.
//
//   - A Generic, or an error that wraps one (%w) before any Error, is
//     "ERR " and its whole text.
//   - An Error, or an error that wraps one, keeps its code: the text as it
//     is when it begins with the code (the sentinel wrapped first, "%w:
//     detail"), else the code and the text ("CLUSTERDOWN asking n2: …").
//   - Any other error (from behind an interface, or relayed from a peer) is
//     its text when that starts with an error code (HasCode), and gets
//     "ERR " otherwise.
//
// So no line gets "ERR " twice, and a line relayed as a plain error keeps
// its code.
func Line(err error) string {
	switch e := err.(type) {
	case Generic:
		return "ERR " + string(e)
	case Error:
		return string(e)
	}
	text := err.Error()
	var c coded
	if errors.As(err, &c) {
		switch c := c.(type) {
		case Generic:
			return "ERR " + text
		case Error:
			if code := string(c.Code()); len(text) > len(code) && text[:len(code)+1] == code+" " {
				return text
			}
			return string(c.Code()) + " " + text
		}
	}
	if HasCode(text) {
		return text
	}
	return "ERR " + text
}

// coded is implemented by Generic and Error, so that errors.As finds the
// first of either in a chain.
type coded interface {
	error
	coded()
}

func (Generic) coded() {}
func (Error) coded()   {}

// Append appends err as a RESP error line: '-', the line Line gives it
// with any CR or LF turned into a space (as Redis and redcon.AppendError
// do), CRLF. It is the one function that writes a reply error.
func Append(b []byte, err error) []byte {
	text := Line(err)
	b = append(b, '-')
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		b = append(b, c)
	}
	return append(b, '\r', '\n')
}

// HasCode reports whether text starts with an upper-case word followed by a
// space or the end: a Redis error code.
func HasCode(text string) bool {
	i := 0
	for i < len(text) && text[i] >= 'A' && text[i] <= 'Z' {
		i++
	}
	return i > 0 && (i == len(text) || text[i] == ' ')
}
