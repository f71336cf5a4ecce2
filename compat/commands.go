package compat

import (
	"math"

	"github.com/sluice-rl/sluice/internal/parse"
)

// The Redis 7.0 commands the supported scripts call, on a Key, with Redis's
// argument parsing, errors and expiry rules (t_string.c, expire.c). The
// exported ones are also what plain commands on a script's keys need.

// IncrBy is INCRBY on k at now: the new integer, or ErrWrongType,
// ErrNotInteger (the value is not a canonical integer) or ErrOverflow. A new
// key has no TTL; an existing key keeps its TTL.
func (k *Key) IncrBy(now, delta int64) (int64, error) {
	var old int64
	expire := int64(NoExpire)
	if k.Live(now) {
		switch k.Value.kind {
		case Foreign, List:
			return 0, ErrWrongType
		case Int:
			old, expire = int64(k.Value.num), k.Expire
		default:
			return 0, ErrNotInteger
		}
	}
	if (delta < 0 && old < 0 && delta < math.MinInt64-old) ||
		(delta > 0 && old > 0 && delta > math.MaxInt64-old) {
		return 0, ErrOverflow
	}
	k.Value, k.Expire, k.Written = IntValue(old+delta), expire, true
	return old + delta, nil
}

// Set is SET key v at now, with a TTL of ttlMs milliseconds (as ExpireMs
// returns it), or none if ttlMs is 0 (SET without KEEPTTL drops the old
// TTL). It replaces a value of any kind.
func (k *Key) Set(now int64, v Value, ttlMs int64) {
	k.Value, k.List, k.Written = v, nil, true
	k.Expire = NoExpire
	if ttlMs != 0 {
		k.Expire = expireAtMs(unixMs(now) + ttlMs)
	}
}

// ExpireMs parses a SET option's expire time as Redis does (EX seconds when
// seconds, else PX milliseconds) into milliseconds, or returns ErrNotInteger
// or invalid (the command's "invalid expire time" error) for a value that
// is not positive or whose expiry would overflow.
func ExpireMs(now int64, arg []byte, seconds bool, invalid error) (int64, error) {
	return expireMs(now, lval{t: tStr, s: arg}, seconds, invalid)
}

func expireMs(now int64, arg lval, seconds bool, invalid error) (int64, error) {
	ms, ok := callInt(arg)
	if !ok {
		return 0, ErrNotInteger
	}
	if ms <= 0 || (seconds && ms > math.MaxInt64/1000) {
		return 0, invalid
	}
	if seconds {
		ms *= 1000
	}
	if unixMs(now)+ms <= 0 { // the sum wraps, as in C
		return 0, invalid
	}
	return ms, nil
}

// callInt is what Redis's string2ll makes of a Lua value passed to
// redis.call: a string as it is; a number as Redis 7.0 formats it ("%.17g"),
// which is a canonical integer exactly when NumberValue makes an Int of it.
func callInt(v lval) (int64, bool) {
	switch v.t {
	case tStr:
		return parse.Int(v.s)
	case tNum:
		return NumberValue(v.f).Int()
	}
	return 0, false
}

// The script-side commands below take the line of the redis.call for its
// error message and return false when the script failed.

// get is redis.call("GET", KEYS[i]): the value (Absent for no key).
func (r *run) get(line, i int) (Value, bool) {
	k := r.key(i)
	switch {
	case k == nil:
		r.fail(line, ErrArgs)
		return Value{}, false
	case !k.Live(r.c.Now):
		return Value{}, true
	case k.Value.wrongType():
		r.fail(line, ErrWrongType)
		return Value{}, false
	}
	return k.Value, true
}

// pttl is redis.call("PTTL", KEYS[i]).
func (r *run) pttl(line, i int) (int64, bool) {
	k := r.key(i)
	if k == nil {
		r.fail(line, ErrArgs)
		return 0, false
	}
	return k.PTTL(r.c.Now), true
}

// writable is the check Redis makes before each write command of a script:
// the arguments are strings or numbers, and the script may write.
func (r *run) writable(line int, k *Key, args ...lval) bool {
	ok := k != nil
	for _, a := range args {
		ok = ok && a.t != tNil
	}
	switch {
	case !ok:
		r.fail(line, ErrArgs)
		return false
	case r.c.ReadOnly:
		r.fail(line, ErrReadOnly)
		return false
	}
	return true
}

// incrby is redis.call("INCRBY", KEYS[i], delta); INCR passes num(1).
func (r *run) incrby(line, i int, delta lval) (int64, bool) {
	k := r.key(i)
	if !r.writable(line, k, delta) {
		return 0, false
	}
	d, ok := callInt(delta)
	if !ok {
		r.fail(line, ErrNotInteger)
		return 0, false
	}
	n, err := k.IncrBy(r.c.Now, d)
	if err != nil {
		r.fail(line, err)
		return 0, false
	}
	return n, true
}

// set is redis.call("SET", KEYS[i], v, "EX"|"PX", ttl[, "NX"]) and, with
// invalid = ErrExpireSetex, redis.call("SETEX", KEYS[i], ttl, v). v is the
// value the argument becomes (never nil here); vArg is the argument itself.
func (r *run) set(line, i int, v Value, vArg, ttl lval, seconds, nx bool, invalid error) bool {
	k := r.key(i)
	if !r.writable(line, k, vArg, ttl) {
		return false
	}
	ms, err := expireMs(r.c.Now, ttl, seconds, invalid)
	if err != nil {
		r.fail(line, err)
		return false
	}
	if nx && k.Live(r.c.Now) {
		return true
	}
	k.Set(r.c.Now, v, ms)
	return true
}

// expire is redis.call("EXPIRE"|"PEXPIRE", KEYS[i], ttl): 1 if the key
// exists (a TTL in the past deletes it), 0 if not.
func (r *run) expire(line, i int, ttl lval, seconds bool) (int64, bool) {
	k := r.key(i)
	if !r.writable(line, k, ttl) {
		return 0, false
	}
	invalid := ErrPexpire
	if seconds {
		invalid = ErrExpire
	}
	when, ok := callInt(ttl)
	if !ok {
		r.fail(line, ErrNotInteger)
		return 0, false
	}
	if seconds {
		if when > math.MaxInt64/1000 || when < math.MinInt64/1000 {
			r.fail(line, invalid)
			return 0, false
		}
		when *= 1000
	}
	if when > math.MaxInt64-r.nowMs {
		r.fail(line, invalid)
		return 0, false
	}
	when += r.nowMs
	if !k.Live(r.c.Now) {
		return 0, true
	}
	k.Written = true
	if when <= r.nowMs {
		k.Value, k.List, k.Expire = Value{}, nil, 0
		return 1, true
	}
	k.Expire = expireAtMs(when)
	return 1, true
}
