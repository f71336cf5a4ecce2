package compat

import (
	"errors"
	"math"
)

// Python limits (behind Flask-Limiter and slowapi), its RedisStorage
// (limits/storage/redis.py): redis-py's register_script, which sends EVALSHA
// and, on NOSCRIPT, EVAL with the text. The fixed window is the incr_expire
// script (KEYS {key}, ARGV {expiry in seconds, amount}) and GET/TTL; with
// elastic expiry it is INCRBY and EXPIRE instead. The moving window is a list
// of hit timestamps, newest first, at most limit long: acquire_moving_window
// (ARGV {time.time(), limit, expiry in seconds, amount}) pushes amount
// timestamps if the entry limit-amount deep is older than the window, and
// moving_window (ARGV {int(now - expiry), limit}) counts the entries in the
// window. reset() runs clear_keys with KEYS {"LIMITER*"}: KEYS of the
// pattern, then DEL of what it found. Source: Debian's python3-limits 2.8.0,
// limits/resources/redis/lua_scripts (MIT).

// The texts of limits 2.8.0.
const (
	LimitsIncrExpireSHA1   = "628bd136a573a06b346879695681af12ccef300f"
	LimitsMovingWindowSHA1 = "3136f0028c572d2959b5cdc5ec15b287fab6a9ff"
	LimitsAcquireSHA1      = "d19f37c18768a509dbf1310a257bfc35be65609f"
	LimitsClearKeysSHA1    = "f2994557f1daca13bfef97c2a31ca4b174e031ca"
)

// ErrClearKeysInTransaction refuses limits' clear_keys script where the
// keyspace cannot be searched: inside MULTI. It runs as a command of its own.
var ErrClearKeysInTransaction = errors.New("ERR sluice runs limits' clear_keys script (KEYS and DEL by pattern) only outside MULTI")

// errArity is Redis 7.0's error for a command a script calls with the wrong
// number of arguments.
var errArity = errors.New("ERR Wrong number of args calling Redis command from script")

// MaxPush is how many entries one run of acquire_moving_window can push:
// Lua 5.1's unpack fails with "too many results to unpack" from
// LUAI_MAXCSTACK (8000) results on (redis-server 7.0.15: 7999 pushes,
// 8000 fails).
const MaxPush = 7999

var limitsScripts = []*Script{{
	SHA1: LimitsIncrExpireSHA1, File: "limits-2.8-incr_expire.lua", Library: "limits (Python)",
	Name: "incr_expire", Versions: "2.8.0", Keys: 1, Args: 2,
	Native: "RL.FIXED key <limit> <expiry>s [amount]",
	impl:   implLimitsIncrExpire,
	markers: []string{`current = redis.call("incrby", KEYS[1], amount)`, "if tonumber(current) == amount then",
		`redis.call("expire", KEYS[1], ARGV[1])`},
}, {
	SHA1: LimitsMovingWindowSHA1, File: "limits-2.8-moving_window.lua", Library: "limits (Python)",
	Name: "moving_window", Versions: "2.8.0", Keys: 1, Args: 2, ReadOnly: true,
	Native: "RL.LOG key <limit> <expiry>s 0",
	impl:   implLimitsMovingWindow,
	markers: []string{"local items = redis.call('lrange', KEYS[1], 0, tonumber(ARGV[2]))",
		"if tonumber(items[idx]) >= expiry then", "return {oldest, a}"},
}, {
	SHA1: LimitsAcquireSHA1, File: "limits-2.8-acquire_moving_window.lua", Library: "limits (Python)",
	Name: "acquire_moving_window", Versions: "2.8.0", Keys: 1, Args: 4,
	Native: "RL.LOG key <limit> <expiry>s [amount]",
	impl:   implLimitsAcquire,
	markers: []string{"redis.call('lindex', KEYS[1], tonumber(ARGV[2]) - amount)",
		"redis.call('lpush', KEYS[1], unpack(entries))", "redis.call('ltrim', KEYS[1], 0, limit - 1)"},
}, {
	SHA1: LimitsClearKeysSHA1, File: "limits-2.8-clear_keys.lua", Library: "limits (Python)",
	Name: "clear_keys", Versions: "2.8.0", Keys: 1, Args: 0, ClearKeys: true,
	Native:  "SCAN MATCH <pattern>, then DEL",
	impl:    implLimitsClearKeys,
	markers: []string{"local keys = redis.call('keys', KEYS[1])", "'del', unpack(keys, i, math.min(i+4999, #keys))"},
}}

// runLimitsIncrExpire is:
//
//	1 local current
//	2 local amount = tonumber(ARGV[2])
//	3 current = redis.call("incrby", KEYS[1], amount)
//	4
//	5 if tonumber(current) == amount then
//	6     redis.call("expire", KEYS[1], ARGV[1])
//	7 end
//	8
//	9 return current
func runLimitsIncrExpire(r *run) {
	amount := tonumber(r.arg(2))
	n, ok := r.incrby(3, 1, amount)
	if !ok {
		return
	}
	if float64(n) == amount.f {
		if _, ok := r.expire(6, 1, r.arg(1), true); !ok {
			return
		}
	}
	r.c.Reply.Type, r.c.Reply.Int = Integer, luaInt(float64(n)) // a Lua number on the way
}

// runLimitsMovingWindow is:
//
//	 1 local items = redis.call('lrange', KEYS[1], 0, tonumber(ARGV[2]))
//	 2 local expiry = tonumber(ARGV[1])
//	 3 local a = 0
//	 4 local oldest = nil
//	 5
//	 6 for idx=1,#items do
//	 7     if tonumber(items[idx]) >= expiry then
//	 8         a = a + 1
//	 9
//	10         if oldest == nil then
//	11             oldest = tonumber(items[idx])
//	12         end
//	13     else
//	14         break
//	15     end
//	16 end
//	17
//	18 return {oldest, a}
//
// A nil oldest ends the table before its first element: the reply is an
// empty array.
func runLimitsMovingWindow(r *run) {
	items, ok := r.lrange(1, 1, tonumber(r.arg(2)))
	if !ok {
		return
	}
	expiry := tonumber(r.arg(1))
	a := 0
	oldest := lval{}
	for _, w := range items {
		item := num(math.Float64frombits(uint64(w)))
		in, ok := r.lessEq(7, expiry, item) // item >= expiry
		if !ok {
			return
		}
		if !in {
			break
		}
		a++
		if oldest.t == tNil {
			oldest = item
		}
	}
	r.c.Reply.array()
	if oldest.t != tNil {
		r.c.Reply.addInt(oldest.f)
		r.c.Reply.addInt(float64(a))
	}
}

// runLimitsAcquire is:
//
//	 1 local amount = tonumber(ARGV[4])
//	 2 local entry = redis.call('lindex', KEYS[1], tonumber(ARGV[2]) - amount)
//	 3 local timestamp = tonumber(ARGV[1])
//	 4 local expiry = tonumber(ARGV[3])
//	 5
//	 6 if entry and tonumber(entry) >= timestamp - expiry then
//	 7     return false
//	 8 end
//	 9 local limit = tonumber(ARGV[2])
//	10 local entries= {}
//	11 for i=1, amount do
//	12     entries[i] = timestamp
//	13 end
//	14 redis.call('lpush', KEYS[1], unpack(entries))
//	15 redis.call('ltrim', KEYS[1], 0, limit - 1)
//	16 redis.call('expire', KEYS[1], expiry)
//	17
//	18 return true
func runLimitsAcquire(r *run) {
	amount := tonumber(r.arg(4))
	limit := tonumber(r.arg(2))
	l, am, ok := r.operands(2, limit, "", amount, "local 'amount'")
	if !ok {
		return
	}
	entry, found, ok := r.lindex(2, 1, num(l-am))
	if !ok {
		return
	}
	timestamp := tonumber(r.arg(1))
	expiry := tonumber(r.arg(3))
	if found {
		t, e, ok := r.operands(6, timestamp, "local 'timestamp'", expiry, "local 'expiry'")
		if !ok {
			return
		}
		if entry >= t-e { // two numbers: no error
			return // false: a nil reply
		}
	}
	// for i=1, amount: the integers from 1 to amount; a nil timestamp
	// leaves the table empty.
	n := 0.0
	if am >= 1 && timestamp.t == tNum {
		n = math.Floor(am)
	}
	k := r.key(1)
	switch {
	case n > MaxPush:
		r.luaFail(14, "too many results to unpack")
		return
	case k == nil:
		r.fail(14, ErrArgs)
		return
	case n == 0:
		r.fail(14, errArity)
		return
	case !r.writable(14, k):
		return
	case k.Live(r.c.Now) && k.Value.kind != List:
		r.fail(14, ErrWrongType)
		return
	}
	r.lpushTrim(k, int(n), timestamp.f)
	if !r.ltrim(15, k, num(l-1)) {
		return
	}
	if _, ok := r.expire(16, 1, expiry, true); !ok {
		return
	}
	r.c.Reply.Type, r.c.Reply.Int = Integer, 1
}

// runLimitsClearKeys answers what the keyspace cannot do inside a
// transaction; outside one the server carries the script out itself (KEYS
// of the pattern, then DEL), since it names no keys but a pattern.
func runLimitsClearKeys(r *run) {
	r.c.Reply.setError(ErrClearKeysInTransaction.Error())
}

// listOf returns k's elements for a list command: none for no key, or
// WRONGTYPE (ok false) for a key holding anything else.
func (r *run) listOf(line int, k *Key) ([]int64, bool) {
	switch {
	case !k.Live(r.c.Now):
		return nil, true
	case k.Value.kind != List:
		r.fail(line, ErrWrongType)
		return nil, false
	}
	return k.List, true
}

// lrange is redis.call('lrange', KEYS[i], 0, stop): Redis parses the
// indexes before it looks the key up.
func (r *run) lrange(line, i int, stop lval) ([]int64, bool) {
	k := r.key(i)
	if k == nil || stop.t == tNil {
		r.fail(line, ErrArgs)
		return nil, false
	}
	end, ok := callInt(stop)
	if !ok {
		r.fail(line, ErrNotInteger)
		return nil, false
	}
	list, ok := r.listOf(line, k)
	if !ok {
		return nil, false
	}
	n := int64(len(list))
	if end < 0 {
		end += n
	}
	if end < 0 || n == 0 {
		return nil, true
	}
	return list[:min(end, n-1)+1], true
}

// lindex is redis.call('lindex', KEYS[i], index): the element's number and
// whether there is one. Redis looks the key up before it parses the index.
func (r *run) lindex(line, i int, index lval) (float64, bool, bool) {
	k := r.key(i)
	if k == nil {
		r.fail(line, ErrArgs)
		return 0, false, false
	}
	list, ok := r.listOf(line, k)
	if !ok || !k.Live(r.c.Now) {
		return 0, false, ok
	}
	idx, ok := callInt(index)
	if !ok {
		r.fail(line, ErrNotInteger)
		return 0, false, false
	}
	n := int64(len(list))
	if idx < 0 {
		idx += n
	}
	if idx < 0 || idx >= n {
		return 0, false, true
	}
	return math.Float64frombits(uint64(list[idx])), true, true
}

// lpushTrim is LPUSH of n copies of the number f on k (a list or no key):
// the new list is written to the Call's own room, since the old one may
// alias the keyspace.
func (r *run) lpushTrim(k *Key, n int, f float64) {
	var old []int64
	expire := int64(NoExpire)
	if k.Live(r.c.Now) {
		old, expire = k.List, k.Expire
	}
	buf := r.c.listBuf[:0]
	bits := int64(math.Float64bits(f))
	for range n {
		buf = append(buf, bits)
	}
	buf = append(buf, old...)
	r.c.listBuf = buf
	k.Value, k.List, k.Expire, k.Written = ListValue(), buf, expire, true
}

// ltrim is redis.call('ltrim', KEYS[1], 0, stop) on k, which holds a list.
// An empty result removes the key.
func (r *run) ltrim(line int, k *Key, stop lval) bool {
	end, ok := callInt(stop)
	if !ok {
		r.fail(line, ErrNotInteger)
		return false
	}
	n := int64(len(k.List))
	if end < 0 {
		end += n
	}
	k.Written = true
	if end < 0 {
		k.Value, k.List, k.Expire = Value{}, nil, 0
		return true
	}
	k.List = k.List[:min(end, n-1)+1]
	return true
}
