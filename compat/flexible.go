package compat

// rate-limiter-flexible's RateLimiterRedis: a fixed window counter in one
// key, created with SET NX EX and counted with INCRBY. consume, penalty and
// reward (a negative count) send KEYS {keyPrefix+":"+key} and ARGV {points,
// secDuration, limiter points, limiter duration}; only the first two are
// read. Through ioredis the script is a defined command (EVALSHA, EVAL on
// NOSCRIPT); through node-redis (useRedisPackage) it is EVAL with the text
// every time. The text is one line: the source's template literal ends each
// line with a backslash, which joins them. Source: npm rate-limiter-flexible,
// lib/RateLimiterRedis.js (ISC).

// FlexibleSHA1 is the script of every 11.x release.
const FlexibleSHA1 = "a1de965f42e177aa339706bd580f049065eca79a" // 11.0.0–11.4.0

var flexibleScripts = []*Script{{
	SHA1: FlexibleSHA1, File: "rate-limiter-flexible-11.lua", Library: "rate-limiter-flexible",
	Name: "RateLimiterRedis incrTtlLuaScript", Versions: "11.0.0–11.4.0", Keys: 1, Args: 4,
	Native: "RL.FIXED key <points> <duration>s [points to consume]",
	impl:   implFlexible,
	markers: []string{"redis.call('set', KEYS[1], 0, 'EX', ARGV[2], 'NX')", "local consumed",
		"redis.call('incrby', KEYS[1], ARGV[1])", "ttl = 1000 * ARGV[2]"},
}}

// flexibleLine is the line of every statement: the text has one.
const flexibleLine = 1

// runFlexible is:
//
//	redis.call('set', KEYS[1], 0, 'EX', ARGV[2], 'NX')
//	local consumed = redis.call('incrby', KEYS[1], ARGV[1])
//	local ttl = redis.call('pttl', KEYS[1])
//	if ttl == -1 then
//	  redis.call('expire', KEYS[1], ARGV[2])
//	  ttl = 1000 * ARGV[2]
//	end
//	return {consumed, ttl}
func runFlexible(r *run) {
	points, secs := r.arg(1), r.arg(2)
	if !r.set(flexibleLine, 1, IntValue(0), num(0), secs, true, true, ErrExpireSet) {
		return
	}
	consumed, ok := r.incrby(flexibleLine, 1, points)
	if !ok {
		return
	}
	ttl, _ := r.pttl(flexibleLine, 1)
	ttlF := float64(ttl)
	if ttl == -1 {
		if _, ok := r.expire(flexibleLine, 1, secs, true); !ok {
			return
		}
		// SET's EX already parsed ARGV[2] as a positive integer, so the
		// arithmetic cannot fail.
		s, _ := secs.number()
		ttlF = mul(1000, s)
	}
	r.c.Reply.array()
	r.c.Reply.addInt(float64(consumed))
	r.c.Reply.addInt(ttlF)
}
