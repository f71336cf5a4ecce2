package compat

// rate-limit-redis, the Redis store of express-rate-limit: a fixed window
// counter in one key that starts at the first hit and lasts windowMs. The
// store builds each text at run time (the template literal with leading
// white space removed from every line, then trimmed), loads it with SCRIPT
// LOAD and sends EVALSHA with KEYS {prefix+key} and ARGV {windowMs} for
// increment and no ARGV for get, whatever the client (sendCommand passes
// the raw command). On NOSCRIPT it loads the text again. Source: npm
// rate-limit-redis, dist/index.cjs (MIT).

// The increment texts of 4.2.0, 5.0.0 and 6.0.1, and the get text they share.
// 4.x and 5.x pass ARGV {resetExpiryOnChange ? "1" : "0", windowMs}.
const (
	RateLimitRedisIncrementSHA1  = "895b92e1712734e1b464999be23953485475357b" // 6.0.1
	RateLimitRedisIncrement5SHA1 = "81dbecea94d2d10514719b20ed51faf711529d9d" // 5.0.0
	RateLimitRedisIncrement4SHA1 = "3f424a504987d231baa2e19159bb5def8ad32f87" // 4.2.0
	RateLimitRedisGetSHA1        = "6aeb97ed6086dcdeafdc6fda3999a0d0e38ec96a" // 4.2.0, 5.0.0, 6.0.1
)

var rateLimitRedisScripts = []*Script{{
	SHA1: RateLimitRedisIncrementSHA1, File: "rate-limit-redis-6-increment.lua", Library: "rate-limit-redis",
	Name: "increment", Versions: "6.0.1", Keys: 1, Args: 1,
	Native: "RL.FIXED key <limit> <windowMs>ms",
	impl:   implRLRIncrement,
	markers: []string{"local windowMs = tonumber(ARGV[1])", "timeToExpire", "totalHits",
		`redis.call("INCR", KEYS[1])`},
}, {
	SHA1: RateLimitRedisGetSHA1, File: "rate-limit-redis-6-get.lua", Library: "rate-limit-redis",
	Name: "get", Versions: "4.2.0, 5.0.0, 6.0.1", Keys: 1, Args: 0, ReadOnly: true,
	Native: "RL.FIXED key <limit> <windowMs>ms 0",
	impl:   implRLRGet,
	markers: []string{`local totalHits = redis.call("GET", KEYS[1])`, "timeToExpire",
		"return { totalHits, timeToExpire }"},
}, {
	SHA1: RateLimitRedisIncrement5SHA1, File: "rate-limit-redis-5-increment.lua", Library: "rate-limit-redis",
	Name: "increment", Versions: "5.0.0", Keys: 1, Args: 2,
	Native: "RL.FIXED key <limit> <windowMs>ms",
	impl:   implRLRIncrement5,
	markers: []string{"local windowMs = tonumber(ARGV[2])", `local resetOnChange = ARGV[1] == "1"`,
		"timeToExpire", `redis.call("PEXPIRE", KEYS[1], windowMs)`},
}, {
	SHA1: RateLimitRedisIncrement4SHA1, File: "rate-limit-redis-4-increment.lua", Library: "rate-limit-redis",
	Name: "increment", Versions: "4.2.0", Keys: 1, Args: 2,
	Native: "RL.FIXED key <limit> <windowMs>ms",
	impl:   implRLRIncrement4,
	markers: []string{`if timeToExpire <= 0 or ARGV[1] == "1"`, `redis.call("PEXPIRE", KEYS[1], tonumber(ARGV[2]))`,
		"timeToExpire = tonumber(ARGV[2])"},
}}

// isOne is the Lua test v == "1" (a number never equals a string).
func isOne(v lval) bool { return v.t == tStr && len(v.s) == 1 && v.s[0] == '1' }

// runRLRIncrement5 is (5.0.0):
//
//	 1 local windowMs = tonumber(ARGV[2])
//	 2 local resetOnChange = ARGV[1] == "1"
//	 3 local timeToExpire = redis.call("PTTL", KEYS[1])
//	 4 if timeToExpire <= 0 then
//	 5 redis.call("SET", KEYS[1], 1, "PX", windowMs)
//	 6 return { 1, windowMs }
//	 7 end
//	 8 local totalHits = redis.call("INCR", KEYS[1])
//	 9 if resetOnChange then
//	10 redis.call("PEXPIRE", KEYS[1], windowMs)
//	11 timeToExpire = windowMs
//	12 end
//	13 return { totalHits, timeToExpire }
func runRLRIncrement5(r *run) {
	rlrIncrement(r, 3, tonumber(r.arg(2)), isOne(r.arg(1)))
}

// runRLRIncrement4 is (4.2.0):
//
//	1 local totalHits = redis.call("INCR", KEYS[1])
//	2 local timeToExpire = redis.call("PTTL", KEYS[1])
//	3 if timeToExpire <= 0 or ARGV[1] == "1"
//	4 then
//	5 redis.call("PEXPIRE", KEYS[1], tonumber(ARGV[2]))
//	6 timeToExpire = tonumber(ARGV[2])
//	7 end
//	8 return { totalHits, timeToExpire }
func runRLRIncrement4(r *run) {
	hits, ok := r.incrby(1, 1, num(1))
	if !ok {
		return
	}
	ttl, _ := r.pttl(2, 1)
	t := float64(ttl)
	if ttl <= 0 || isOne(r.arg(1)) {
		windowMs := tonumber(r.arg(2))
		if _, ok := r.expire(5, 1, windowMs, false); !ok {
			return
		}
		t = windowMs.f
	}
	r.c.Reply.array()
	r.c.Reply.addInt(float64(hits))
	r.c.Reply.addInt(t)
}

// runRLRIncrement is:
//
//	1 local windowMs = tonumber(ARGV[1])
//	2 local timeToExpire = redis.call("PTTL", KEYS[1])
//	3 if timeToExpire <= 0 then
//	4 redis.call("SET", KEYS[1], 1, "PX", windowMs)
//	5 return { 1, windowMs }
//	6 end
//	7 local totalHits = redis.call("INCR", KEYS[1])
//	8 return { totalHits, timeToExpire }
func runRLRIncrement(r *run) {
	rlrIncrement(r, 2, tonumber(r.arg(1)), false)
}

// rlrIncrement is both versions' increment script, whose PTTL call is on
// line pttl: SET is two lines below it, INCR five and 5.0.0's PEXPIRE
// seven, which their errors name.
func rlrIncrement(r *run, pttl int, windowMs lval, resetOnChange bool) {
	ttl, ok := r.pttl(pttl, 1)
	if !ok {
		return
	}
	if ttl <= 0 {
		if !r.set(pttl+2, 1, IntValue(1), num(1), windowMs, false, false, ErrExpireSet) {
			return
		}
		r.c.Reply.array()
		r.c.Reply.addInt(1)
		r.c.Reply.addInt(windowMs.f) // a number: SET parsed it as an integer
		return
	}
	hits, ok := r.incrby(pttl+5, 1, num(1))
	if !ok {
		return
	}
	t := float64(ttl)
	if resetOnChange {
		if _, ok := r.expire(pttl+7, 1, windowMs, false); !ok {
			return
		}
		t = windowMs.f // a number: PEXPIRE parsed it
	}
	r.c.Reply.array()
	r.c.Reply.addInt(float64(hits))
	r.c.Reply.addInt(t)
}

// runRLRGet is:
//
//	1 local totalHits = redis.call("GET", KEYS[1])
//	2 local timeToExpire = redis.call("PTTL", KEYS[1])
//	3 return { totalHits, timeToExpire }
//
// GET's false for no key becomes a nil element (RESP3: null).
func runRLRGet(r *run) {
	v, ok := r.get(1, 1)
	if !ok {
		return
	}
	ttl, _ := r.pttl(2, 1)
	r.c.Reply.array()
	r.c.Reply.addValue(v)
	r.c.Reply.addInt(float64(ttl))
}
