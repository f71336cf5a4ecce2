package client

import (
	"strconv"
	"sync"
	"time"
)

// argv builds one command's arguments without allocating once its buffers have grown: every
// argument but the command name is written as text into buf, and args holds pointers to spans
// of it, which go-redis writes through encoding.BinaryMarshaler (a pointer in an interface does
// not allocate; a string or an int64 would). The command name is a constant string, which does
// not allocate either.
//
// An argv comes from argvPool and goes back once the reply is decoded: go-redis hooks must not
// keep a command's arguments after Process returns (none of go-redis's own do).
type argv struct {
	args  []any
	buf   []byte
	spans []span
	// keyPos is the index in args of the first key, when it is not args[1]: go-redis's
	// ClusterClient and Ring route a command by that argument (cmd.SetFirstKeyPos), and without it
	// they take args[1], which for RL.CHECK is the policy and for RL.ALL the count.
	keyPos int8
}

// span is one argument: bytes [off, end) of its argv's buf.
type span struct {
	a        *argv
	off, end int
}

// MarshalBinary returns the argument's bytes, for go-redis's writer. They stay valid until the
// argv is reused.
func (s *span) MarshalBinary() ([]byte, error) { return s.a.buf[s.off:s.end], nil }

// String returns the argument as a string: go-redis's Ring and ClusterClient read a command's
// key with fmt.Sprint to route it.
func (s *span) String() string { return string(s.a.buf[s.off:s.end]) }

var argvPool = sync.Pool{New: func() any { return new(argv) }}

// getArgv returns an empty argv with room for n arguments after the command name. Room must be
// reserved before the first argument: args hold pointers into spans, which must not move. name
// is a string constant, or a string boxed once (algoCommands): boxing a string variable would
// allocate.
func getArgv(name any, n int) *argv {
	a := argvPool.Get().(*argv)
	if cap(a.spans) < n {
		a.spans = make([]span, 0, n+4)
	}
	a.args = append(a.args[:0], name)
	a.buf, a.spans = a.buf[:0], a.spans[:0]
	a.keyPos = 0
	return a
}

// release returns a to the pool; a must not be used afterwards.
func (a *argv) release() {
	clear(a.args) // drop the pointers, so that the pool keeps nothing else alive
	a.args = a.args[:0]
	argvPool.Put(a)
}

// add makes the bytes written to buf since off the next argument.
func (a *argv) add(off int) {
	if len(a.spans) == cap(a.spans) {
		panic("client: argv room not reserved") // a bug in a caller of getArgv
	}
	a.spans = append(a.spans, span{a: a, off: off, end: len(a.buf)})
	a.args = append(a.args, &a.spans[len(a.spans)-1])
}

func (a *argv) str(s string) {
	off := len(a.buf)
	a.buf = append(a.buf, s...)
	a.add(off)
}

// key appends s as a key or subject: the first one appended names the slot the command is routed
// to.
func (a *argv) key(s string) {
	if a.keyPos == 0 && len(a.args) <= 127 {
		a.keyPos = int8(len(a.args))
	}
	a.str(s)
}

func (a *argv) int(n int64) {
	off := len(a.buf)
	a.buf = strconv.AppendInt(a.buf, n, 10)
	a.add(off)
}

// rate appends r in the server's syntax; the caller has checked that r is valid.
func (a *argv) rate(r Rate) {
	off := len(a.buf)
	a.buf, _ = r.appendTo(a.buf)
	a.add(off)
}

// duration appends d ("60s", "1500ms"); the caller has checked it with validWindow.
func (a *argv) duration(d time.Duration) {
	off := len(a.buf)
	a.buf = appendDuration(a.buf, d, false)
	a.add(off)
}
