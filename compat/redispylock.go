package compat

import "bytes"

// redis-py's Lock (redis/lock.py), what a connection that also takes locks
// sends: acquire is SET name token NX PX timeout (token: uuid1().hex, 32
// bytes), locked and owned are GET, and release, extend and reacquire are
// these scripts, through register_script (EVALSHA; on NOSCRIPT, EVAL), with
// KEYS {name} and ARGV {token}, {token, ms, replace_ttl ? "1" : "0"} and
// {token, timeout ms}. The texts are the class attributes, leading newline
// and indentation included. Source: Debian's python3-redis 4.3.4 (MIT).

// The texts of redis-py 4.3.4.
const (
	RedisPyLockReleaseSHA1   = "c3f8721cbb97f72bc19e972846bd7aaf91901658"
	RedisPyLockExtendSHA1    = "a4e8783852e6b949f9ef3a97212805108459a890"
	RedisPyLockReacquireSHA1 = "1cac51482acf5858da00f6d685d68f886cd6b6b2"
)

var redisPyLockScripts = []*Script{{
	SHA1: RedisPyLockReleaseSHA1, File: "redis-py-4.3-lock-release.lua", Library: "redis-py",
	Name: "Lock.release", Versions: "4.3.4", Keys: 1, Args: 1,
	Native: "none: a lock is not a rate limit",
	impl:   implLockRelease,
	markers: []string{"local token = redis.call('get', KEYS[1])", "if not token or token ~= ARGV[1] then",
		"redis.call('del', KEYS[1])"},
}, {
	SHA1: RedisPyLockExtendSHA1, File: "redis-py-4.3-lock-extend.lua", Library: "redis-py",
	Name: "Lock.extend", Versions: "4.3.4", Keys: 1, Args: 3,
	Native: "none: a lock is not a rate limit",
	impl:   implLockExtend,
	markers: []string{"local expiration = redis.call('pttl', KEYS[1])", "newttl = ARGV[2] + expiration",
		"redis.call('pexpire', KEYS[1], newttl)"},
}, {
	SHA1: RedisPyLockReacquireSHA1, File: "redis-py-4.3-lock-reacquire.lua", Library: "redis-py",
	Name: "Lock.reacquire", Versions: "4.3.4", Keys: 1, Args: 2,
	Native:  "none: a lock is not a rate limit",
	impl:    implLockReacquire,
	markers: []string{"if not token or token ~= ARGV[1] then", "redis.call('pexpire', KEYS[1], ARGV[2])"},
}}

// ownedBy is the scripts' first lines (the text starts with an empty line):
//
//	2 local token = redis.call('get', KEYS[1])
//	3 if not token or token ~= ARGV[1] then
//	4     return 0
//	5 end
//
// It reports whether the script goes on; when it does not, the reply is
// set (0, or GET's error).
func (r *run) ownedBy(token lval) bool {
	v, ok := r.get(2, 1)
	if !ok {
		return false
	}
	var buf [MaxBytes]byte
	if v.Kind() == Absent || token.t != tStr || !bytes.Equal(v.AppendString(buf[:0]), token.s) {
		r.c.Reply.Type, r.c.Reply.Int = Integer, 0
		return false
	}
	return true
}

// runLockRelease is ownedBy, then:
//
//	6 redis.call('del', KEYS[1])
//	7 return 1
func runLockRelease(r *run) {
	if !r.ownedBy(r.arg(1)) {
		return
	}
	k := r.key(1)
	if !r.writable(6, k) {
		return
	}
	k.Value, k.List, k.Expire, k.Written = Value{}, nil, 0, true
	r.c.Reply.Type, r.c.Reply.Int = Integer, 1
}

// runLockExtend is ownedBy, then:
//
//	 6 local expiration = redis.call('pttl', KEYS[1])
//	 7 if not expiration then
//	 8     expiration = 0
//	 9 end
//	10 if expiration < 0 then
//	11     return 0
//	12 end
//	13
//	14 local newttl = ARGV[2]
//	15 if ARGV[3] == "0" then
//	16     newttl = ARGV[2] + expiration
//	17 end
//	18 redis.call('pexpire', KEYS[1], newttl)
//	19 return 1
func runLockExtend(r *run) {
	if !r.ownedBy(r.arg(1)) {
		return
	}
	expiration, _ := r.pttl(6, 1)
	if expiration < 0 {
		r.c.Reply.Type, r.c.Reply.Int = Integer, 0
		return
	}
	newttl := r.arg(2)
	if a3 := r.arg(3); a3.t == tStr && len(a3.s) == 1 && a3.s[0] == '0' {
		x, y, ok := r.operands(16, newttl, "field '?'", num(float64(expiration)), "")
		if !ok {
			return
		}
		newttl = num(x + y)
	}
	if _, ok := r.expire(18, 1, newttl, false); !ok {
		return
	}
	r.c.Reply.Type, r.c.Reply.Int = Integer, 1
}

// runLockReacquire is ownedBy, then:
//
//	6 redis.call('pexpire', KEYS[1], ARGV[2])
//	7 return 1
func runLockReacquire(r *run) {
	if !r.ownedBy(r.arg(1)) {
		return
	}
	if _, ok := r.expire(6, 1, r.arg(2), false); !ok {
		return
	}
	r.c.Reply.Type, r.c.Reply.Int = Integer, 1
}
