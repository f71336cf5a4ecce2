package compat

import (
	"bytes"
	"errors"
	"strconv"
)

// The error vocabulary: the messages Redis 7.0 gives for the failures a
// supported script can meet. Run appends the script's location to them the
// way Redis does (" script: <sha1>, on @user_script:<line>.").
var (
	ErrArgs         = errors.New("ERR Lua redis lib command arguments must be strings or integers")
	ErrWrongType    = errors.New("WRONGTYPE Operation against a key holding the wrong kind of value")
	ErrNotInteger   = errors.New("ERR value is not an integer or out of range")
	ErrOverflow     = errors.New("ERR increment or decrement would overflow")
	ErrReadOnly     = errors.New("ERR Write commands are not allowed from read-only scripts.")
	ErrExpireSet    = errors.New("ERR invalid expire time in 'set' command")
	ErrExpireSetex  = errors.New("ERR invalid expire time in 'setex' command")
	ErrExpirePsetex = errors.New("ERR invalid expire time in 'psetex' command")
	ErrExpire       = errors.New("ERR invalid expire time in 'expire' command")
	ErrPexpire      = errors.New("ERR invalid expire time in 'pexpire' command")
)

// Call is one run of a known script. The caller fills Now, Keys, Argv and
// ReadOnly, calls Script.Run, then sends Reply and stores the Keys marked
// Written. A Call can be reused: Run resets Reply.
type Call struct {
	// Now is the instant of the decision (unix ns): TIME's answer, and the
	// clock against which TTLs are set and keys are live.
	Now int64
	// Keys are the states of KEYS[1..numkeys], in order. A key that is not
	// there is a zero Key. When two KEYS name the same key, both positions
	// get the same state, and the caller stores the Written positions in
	// order, so the last write wins: every supported script reads all its
	// keys before it writes any, which makes this what Redis does.
	Keys []Key
	// Argv is ARGV[1..]; Run does not keep it.
	Argv [][]byte
	// ReadOnly is set for EVAL_RO and EVALSHA_RO: the script's first write
	// command fails, after the commands before it took effect, as in Redis.
	ReadOnly bool
	// Reply is the script's reply, set by Run.
	Reply Reply

	// The decimal string of TIME's seconds at the last Run that made it
	// (timeLen 0: none yet): the calls of a batch share their instant.
	timeSec int64
	timeLen uint8
	timeBuf [20]byte
	// listBuf is the room of the list a script wrote (Key.List), reused.
	listBuf []int64
}

// run is the state of one Run: the call, the script's SHA1 for its error
// messages, and the current millisecond.
type run struct {
	c     *Call
	sha   string
	nowMs int64
}

// fail ends the script with the error a redis.call at line raised.
func (r *run) fail(line int, err error) {
	r.c.Reply.setError(err.Error() + r.where(line))
}

// luaFail ends the script with a Lua runtime error at line.
func (r *run) luaFail(line int, msg string) {
	r.c.Reply.setError("ERR user_script:" + strconv.Itoa(line) + ": " + msg + r.where(line))
}

func (r *run) where(line int) string {
	return " script: " + r.sha + ", on @user_script:" + strconv.Itoa(line) + "."
}

// key returns KEYS[i] (1-based) or nil if the script got fewer keys.
func (r *run) key(i int) *Key {
	if i > len(r.c.Keys) {
		return nil
	}
	return &r.c.Keys[i-1]
}

// ltype is a Lua value's type, as far as these scripts go.
type ltype uint8

const (
	tNil ltype = iota
	tNum
	tStr
)

func (t ltype) String() string {
	switch t {
	case tNum:
		return "number"
	case tStr:
		return "string"
	}
	return "nil"
}

// lval is a Lua value: nil, a number or a string (which aliases ARGV).
type lval struct {
	t ltype
	// numOK is set for a string whose tonumber is known to be f (TIME's
	// seconds), so that arithmetic on it need not read s again.
	numOK bool
	f     float64
	s     []byte
}

func num(f float64) lval { return lval{t: tNum, f: f} }

// arg is ARGV[i] (1-based): a string, or nil past the end.
func (r *run) arg(i int) lval {
	if i > len(r.c.Argv) {
		return lval{}
	}
	return lval{t: tStr, s: r.c.Argv[i-1]}
}

// tonumber is Lua's tonumber(v): a number, or nil.
func tonumber(v lval) lval {
	if f, ok := v.number(); ok {
		return num(f)
	}
	return lval{}
}

// number is v as an arithmetic operand: numbers as they are, strings
// converted as Lua converts them.
func (v lval) number() (float64, bool) {
	switch v.t {
	case tNum:
		return v.f, true
	case tStr:
		if v.numOK {
			return v.f, true
		}
		return str2d(v.s)
	}
	return 0, false
}

// operands converts the operands of an arithmetic operation at line, or
// fails as Lua 5.1 does, naming the first operand that is not a number
// (an and bn describe the operands: "local 'rate'", or "" for none).
func (r *run) operands(line int, a lval, an string, b lval, bn string) (x, y float64, ok bool) {
	x, okA := a.number()
	y, okB := b.number()
	if okA && okB {
		return x, y, true
	}
	bad, name := b, bn
	if !okA {
		bad, name = a, an
	}
	if name == "" {
		r.luaFail(line, "attempt to perform arithmetic on a "+bad.t.String()+" value")
	} else {
		r.luaFail(line, "attempt to perform arithmetic on "+name+" (a "+bad.t.String()+" value)")
	}
	return 0, 0, false
}

// less is Lua 5.1's a < b at line (b > a is the same operation); lessEq is
// a <= b. Numbers and strings compare among themselves; anything else fails.
func (r *run) less(line int, a, b lval) (bool, bool) {
	switch {
	case a.t == tNum && b.t == tNum:
		return a.f < b.f, true
	case a.t == tStr && b.t == tStr:
		return bytes.Compare(a.s, b.s) < 0, true
	}
	r.orderError(line, a, b)
	return false, false
}

func (r *run) lessEq(line int, a, b lval) (bool, bool) {
	switch {
	case a.t == tNum && b.t == tNum:
		return a.f <= b.f, true
	case a.t == tStr && b.t == tStr:
		return bytes.Compare(a.s, b.s) <= 0, true
	}
	r.orderError(line, a, b)
	return false, false
}

func (r *run) orderError(line int, a, b lval) {
	ta, tb := a.t.String(), b.t.String()
	if ta[2] == tb[2] { // Lua 5.1 compares the type names' third letters
		r.luaFail(line, "attempt to compare two "+ta+" values")
		return
	}
	r.luaFail(line, "attempt to compare "+ta+" with "+tb)
}

// checkNumber is luaL_checknumber for argument n of the library function
// fn ("max"): a number, or a string that converts to one.
func (r *run) checkNumber(line, n int, fn string, v lval) (float64, bool) {
	if f, ok := v.number(); ok {
		return f, true
	}
	r.luaFail(line, "bad argument #"+strconv.Itoa(n)+" to '"+fn+"' (number expected, got "+v.t.String()+")")
	return 0, false
}

// timeSeconds is the string redis.call('TIME')[1] returns at the
// decision's instant (the unix seconds), which aliases c's buffer until
// the next Run.
func (r *run) timeSeconds() lval {
	sec, _ := r.timeNow()
	c := r.c
	if c.timeLen == 0 || c.timeSec != sec {
		c.timeSec, c.timeLen = sec, uint8(len(strconv.AppendInt(c.timeBuf[:0], sec, 10)))
	}
	return lval{t: tStr, numOK: true, f: float64(sec), s: c.timeBuf[:c.timeLen]}
}

// timeNow is what redis.call('TIME') returns at the decision's instant:
// the unix seconds and the microseconds within the second.
func (r *run) timeNow() (sec, usec int64) {
	now := r.c.Now
	sec = now / 1_000_000_000
	usec = now % 1_000_000_000 / 1000
	if usec < 0 {
		sec, usec = sec-1, usec+1_000_000
	}
	return sec, usec
}
