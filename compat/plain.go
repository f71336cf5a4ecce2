package compat

import (
	"errors"
	"math"

	"github.com/sluice-rl/sluice/internal/parse"
	"github.com/sluice-rl/sluice/internal/replyerr"
)

// The plain string commands the libraries send on their scripts' keys, as
// operations over Keys with Redis 7.0's arguments, errors and replies, so
// that a keyspace can carry them out (and a replicated one log them) the
// same way as a script: Exec(op, call) with the key loaded in call.Keys[0]
// and the command's arguments after the key in call.Argv. Parsing happens
// inside Exec, so that an Op is data (a Raft log entry) and a replica that
// replays it reaches the same state and the same reply.

// The plain commands' errors, in Redis's words, without a script's location.
var (
	ErrSyntax       = errors.New("ERR syntax error")
	ErrDecrOverflow = errors.New("ERR decrement would overflow")
	// ErrValueTooLong refuses a string that a key of a script cannot hold.
	ErrValueTooLong = errors.New("ERR sluice keeps a string on a key only if it is a number or at most 64 bytes long")
	// ErrLimiterTTL refuses EXPIRE/PEXPIRE on a key that holds a native
	// limiter's state: its TTL is the instant its state becomes absent.
	ErrLimiterTTL = errors.New("WRONGTYPE Operation against a key holding the wrong kind of value (a limiter's TTL is set by its algorithm)")
	errExpireNXXX = errors.New("ERR NX and XX, GT or LT options at the same time are not compatible")
	errExpireGTLT = errors.New("ERR GT and LT options at the same time are not compatible")
)

// Cmd is what an Op does. The values are stored (the Raft log): new ones
// are added at the end.
type Cmd uint8

const (
	// CmdScript runs Op.Script with numkeys keys and its ARGV.
	CmdScript Cmd = iota + 1
	// CmdGet is GET key.
	CmdGet
	// CmdSet is SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL].
	CmdSet
	// CmdIncrBy is INCRBY key delta (INCR: delta "1").
	CmdIncrBy
	// CmdDecrBy is DECRBY key delta (DECR: delta "1").
	CmdDecrBy
	// CmdExpire is EXPIRE key seconds [NX|XX|GT|LT].
	CmdExpire
	// CmdPexpire is PEXPIRE key milliseconds [NX|XX|GT|LT].
	CmdPexpire
)

// Op is one operation on keys: a known script, or a plain command on one
// key. It is data: the same Op on the same keys at the same instant gives
// the same reply and the same writes.
type Op struct {
	Cmd    Cmd
	Script *Script // CmdScript
	// ReadOnly is EVAL_RO/EVALSHA_RO: the script's first write fails.
	ReadOnly bool
}

// Exec carries out op on c (see Call): c.Keys holds the keys' states (one
// for a plain command), c.Argv the arguments after the keys. Like
// Script.Run it is pure and deterministic.
func Exec(op Op, c *Call) {
	if op.Cmd == CmdScript && op.Script != nil {
		c.ReadOnly = op.ReadOnly
		op.Script.Run(c)
		return
	}
	c.Reply.reset()
	if len(c.Keys) != 1 {
		c.Reply.setError(ErrSyntax.Error())
		return
	}
	k := &c.Keys[0]
	var err error
	switch op.Cmd {
	case CmdGet:
		err = plainGet(k, c)
	case CmdMget:
		if err = plainGet(k, c); err == ErrWrongType {
			c.Reply, err = Reply{Elem: Elem{Type: Nil}}, nil
		}
	case CmdSet:
		err = plainSet(k, c)
	case CmdIncrBy, CmdDecrBy:
		err = plainIncr(k, c, op.Cmd == CmdDecrBy)
	case CmdExpire, CmdPexpire:
		err = plainExpire(k, c, op.Cmd == CmdExpire)
	default:
		var ok bool
		if ok, err = execMore(op.Cmd, k, c); !ok {
			err = ErrSyntax
		}
	}
	if err != nil {
		c.Reply.setError(err.Error())
	}
}

func plainGet(k *Key, c *Call) error {
	if len(c.Argv) != 0 {
		return ErrSyntax
	}
	if k.Live(c.Now) && !k.Value.IsString() {
		return ErrWrongType
	}
	v := Value{}
	if k.Live(c.Now) {
		v = k.Value
	}
	c.Reply.setValue(v)
	return nil
}

// setArgs are SET's options, as Redis 7.0's parseExtendedStringArgumentsOrReply
// reads them.
type setArgs struct {
	nx, xx, get, keepTTL bool
	unit                 byte // 0, 'e' EX, 'p' PX, 'E' EXAT, 'P' PXAT
	ttlArg               []byte
}

// parseSet reads the options after SET's value; every combination Redis
// refuses is a syntax error.
func parseSet(opts [][]byte) (setArgs, error) {
	var a setArgs
	for i := 0; i < len(opts); i++ {
		o := opts[i]
		switch {
		case foldEq(o, "nx") && !a.xx:
			a.nx = true
		case foldEq(o, "xx") && !a.nx:
			a.xx = true
		case foldEq(o, "get"):
			a.get = true
		case foldEq(o, "keepttl") && a.unit == 0:
			a.keepTTL = true
		case (foldEq(o, "ex") || foldEq(o, "px") || foldEq(o, "exat") || foldEq(o, "pxat")) &&
			!a.keepTTL && a.unit == 0 && i+1 < len(opts):
			switch {
			case foldEq(o, "ex"):
				a.unit = 'e'
			case foldEq(o, "px"):
				a.unit = 'p'
			case foldEq(o, "exat"):
				a.unit = 'E'
			default:
				a.unit = 'P'
			}
			i++
			a.ttlArg = opts[i]
		default:
			return a, ErrSyntax
		}
	}
	return a, nil
}

// plainSet is SET key value [options]: OK, or nil when NX/XX kept it from
// writing; with GET, the old value (nil if none).
func plainSet(k *Key, c *Call) error {
	if len(c.Argv) < 1 {
		return ErrSyntax
	}
	a, err := parseSet(c.Argv[1:])
	if err != nil {
		return err
	}
	expire := int64(NoExpire)
	if a.unit != 0 {
		ms, ok := parse.Int(a.ttlArg)
		if !ok {
			return ErrNotInteger
		}
		if ms <= 0 || ((a.unit == 'e' || a.unit == 'E') && ms > math.MaxInt64/1000) {
			return ErrExpireSet
		}
		if a.unit == 'e' || a.unit == 'E' {
			ms *= 1000
		}
		if a.unit == 'e' || a.unit == 'p' {
			if ms > math.MaxInt64-unixMs(c.Now) {
				return ErrExpireSet
			}
			ms += unixMs(c.Now)
		}
		expire = expireAtMs(ms)
	}
	v, ok := StringValue(c.Argv[0])
	if !ok {
		return ErrValueTooLong
	}
	live := k.Live(c.Now)
	if a.get && live && !k.Value.IsString() {
		return ErrWrongType
	}
	if a.get {
		old := Value{}
		if live {
			old = k.Value
		}
		c.Reply.setValue(old)
	}
	if (a.nx && live) || (a.xx && !live) {
		if !a.get {
			c.Reply.Type = Nil
		}
		return nil
	}
	if a.keepTTL && live {
		expire = k.Expire
	}
	if expire != NoExpire && expire <= c.Now {
		// EXAT/PXAT in the past: Redis deletes the key (and still says OK).
		k.Value, k.List, k.Expire, k.Written = Value{}, nil, 0, true
	} else {
		k.Value, k.List, k.Expire, k.Written = v, nil, expire, true
	}
	if !a.get {
		c.Reply.Type = OK
	}
	return nil
}

// plainIncr is INCRBY/DECRBY key delta: the new value.
func plainIncr(k *Key, c *Call, decr bool) error {
	if len(c.Argv) != 1 {
		return ErrSyntax
	}
	d, ok := parse.Int(c.Argv[0])
	if !ok {
		return ErrNotInteger
	}
	if decr {
		if d == math.MinInt64 {
			return ErrDecrOverflow
		}
		d = -d
	}
	n, err := k.IncrBy(c.Now, d)
	if err != nil {
		return err
	}
	c.Reply.Type, c.Reply.Int = Integer, n
	return nil
}

// plainExpire is EXPIRE/PEXPIRE key ttl [NX|XX|GT|LT]: 1 if the TTL was set
// (a TTL in the past deletes the key), 0 if not.
func plainExpire(k *Key, c *Call, seconds bool) error {
	if len(c.Argv) < 1 {
		return ErrSyntax
	}
	var nx, xx, gt, lt bool
	for _, o := range c.Argv[1:] {
		switch {
		case foldEq(o, "nx"):
			nx = true
		case foldEq(o, "xx"):
			xx = true
		case foldEq(o, "gt"):
			gt = true
		case foldEq(o, "lt"):
			lt = true
		default:
			return errors.New("ERR Unsupported option " + string(o))
		}
	}
	switch {
	case nx && (xx || gt || lt):
		return errExpireNXXX
	case gt && lt:
		return errExpireGTLT
	}
	invalid := ErrPexpire
	if seconds {
		invalid = ErrExpire
	}
	when, ok := parse.Int(c.Argv[0])
	if !ok {
		return ErrNotInteger
	}
	if seconds {
		if when > math.MaxInt64/1000 || when < math.MinInt64/1000 {
			return invalid
		}
		when *= 1000
	}
	nowMs := unixMs(c.Now)
	if when > math.MaxInt64-nowMs {
		return invalid
	}
	when += nowMs
	c.Reply.Type = Integer
	if !k.Live(c.Now) {
		return nil
	}
	if k.Value.kind == Foreign {
		return ErrLimiterTTL
	}
	newExpire := expireAtMs(when)
	switch {
	case nx && k.Expire != NoExpire, xx && k.Expire == NoExpire,
		gt && (k.Expire == NoExpire || newExpire <= k.Expire),
		lt && k.Expire != NoExpire && newExpire >= k.Expire:
		return nil
	}
	k.Written = true
	if when <= nowMs {
		k.Value, k.List, k.Expire = Value{}, nil, 0
	} else {
		k.Expire = newExpire
	}
	c.Reply.Int = 1
	return nil
}

// setValue makes r the scalar reply of GET for v: a bulk string, or nil.
func (r *Reply) setValue(v Value) {
	r.addValue(v)
	r.Elem, r.Elems[0], r.Len = r.Elems[0], Elem{}, 0
}

// foldEq reports whether b is the lower-case ASCII word w in any case.
func foldEq(b []byte, w string) bool {
	if len(b) != len(w) {
		return false
	}
	for i := range b {
		if b[i]|0x20 != w[i] {
			return false
		}
	}
	return true
}

// ErrorReply is the error reply of err, with the code the one rule
// (replyerr.Line) gives it.
func ErrorReply(err error) Reply {
	var r Reply
	r.setError(replyerr.Line(err))
	return r
}
