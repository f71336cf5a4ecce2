package compat

import "math"

// Spring Cloud Gateway's RedisRateLimiter: request_rate_limiter.lua, a token
// bucket in two keys (tokens, last refill in whole seconds), refilled at
// replenishRate tokens per second up to burstCapacity. Spring sends KEYS
// {request_rate_limiter.{id}.tokens, request_rate_limiter.{id}.timestamp}
// ({routeId.id} from 4.2.0) and ARGV {replenishRate, burstCapacity, now,
// requestedTokens}; since 3.0.6 now
// is "" and the script reads the server's TIME (3.0.0–3.0.5 passed the
// client's epoch seconds). Spring Data Redis sends EVALSHA, then EVAL with
// the file's exact text on NOSCRIPT. Source: github.com/spring-cloud/
// spring-cloud-gateway, spring-cloud-gateway-server/src/main/resources/
// META-INF/scripts/request_rate_limiter.lua (Apache-2.0).

// The four texts of request_rate_limiter.lua in the 3.x and 4.x lines.
const (
	SpringSHA1v300 = "9d491aea731237273f4274f9ed9660b432b23791" // 3.0.0–3.0.5
	SpringSHA1v306 = "76a566c51f92d8f643d16e0ef0101663d5380dba" // 3.0.6–3.1.10, 4.0.0
	SpringSHA1v401 = "775635cca91092477cbcee85fd800accb6adc4b2" // 4.0.1–4.2.7
	SpringSHA1v430 = "0ad5736ed1c04aae6ec194376c784b89b8c08a7a" // 4.3.0–4.3.5
)

// springNow is where a text takes now from.
type springNow uint8

const (
	nowArg       springNow = iota // tonumber(ARGV[3]); nil stays nil
	nowTime                       // redis.call('TIME')[1], always
	nowArgOrTime                  // tonumber(ARGV[3]), else TIME's seconds
)

// springText is what differs between the texts: where now comes from and
// the lines of the statements that can fail.
type springText struct {
	now                                                            springNow
	fill, getTokens, getStamp, delta, allowed, setTokens, setStamp int
}

var (
	springV300 = &springText{nowArg, 10, 20, 26, 32, 34, 48, 49}
	springV306 = &springText{nowTime, 12, 22, 28, 34, 36, 50, 51}
	springV401 = &springText{nowArgOrTime, 12, 27, 33, 39, 41, 55, 56}
	springV430 = &springText{nowArgOrTime, 11, 14, 15, 17, 19, 23, 24}
)

var springScripts = []*Script{
	springScript(SpringSHA1v300, "spring-request_rate_limiter-3.0.0.lua", "3.0.0–3.0.5 (and 3.0.0-M1…3.1.0-RC1)", springV300),
	springScript(SpringSHA1v306, "spring-request_rate_limiter-3.0.6.lua", "3.0.6–3.0.8, 3.1.0–3.1.10, 4.0.0 (and 4.0.0-M1…RC3)", springV306),
	springScript(SpringSHA1v401, "spring-request_rate_limiter-4.0.1.lua", "4.0.1–4.0.9, 4.1.0–4.1.9, 4.2.0–4.2.7 (and 4.3.0-M1, M2)", springV401),
	springScript(SpringSHA1v430, "spring-request_rate_limiter-4.3.0.lua", "4.3.0–4.3.5 (and 4.3.0-M3, RC1, main)", springV430),
}

func springScript(sha, file, versions string, t *springText) *Script {
	return &Script{
		SHA1: sha, File: file, Library: "Spring Cloud Gateway", Name: "request_rate_limiter.lua",
		Versions: versions, Keys: 2, Args: 4,
		Native: "RL.TOKEN key <replenishRate>/s <burstCapacity> [requestedTokens]",
		impl:   implSpring, spring: t,
		markers: []string{"tokens_key", "timestamp_key", "filled_tokens", "last_refreshed"},
	}
}

// runSpring is request_rate_limiter.lua.
func runSpring(r *run, t *springText) {
	rate := tonumber(r.arg(1))
	capacity := tonumber(r.arg(2))
	var now lval // a number, or TIME's seconds as a string
	switch t.now {
	case nowArg:
		now = tonumber(r.arg(3))
	case nowTime:
		now = r.timeSeconds()
	case nowArgOrTime:
		if now = tonumber(r.arg(3)); now.t == tNil {
			now = r.timeSeconds()
		}
	}
	requested := tonumber(r.arg(4))

	c, rt, ok := r.operands(t.fill, capacity, "local 'capacity'", rate, "local 'rate'")
	if !ok {
		return
	}
	fill := div(c, rt)
	ttl := math.Floor(mul(fill, 2))

	v, ok := r.get(t.getTokens, 1)
	if !ok {
		return
	}
	lastTokens, ok := v.number()
	if !ok {
		lastTokens = c
	}
	v, ok = r.get(t.getStamp, 2)
	if !ok {
		return
	}
	lastRefreshed, ok := v.number()
	if !ok {
		lastRefreshed = 0
	}

	n, lr, ok := r.operands(t.delta, now, "local 'now'", num(lastRefreshed), "local 'last_refreshed'")
	if !ok {
		return
	}
	delta := luaMax(0, sub(n, lr))
	filled := luaMin(c, add(lastTokens, mul(delta, rt)))
	allowed, ok := r.lessEq(t.allowed, requested, num(filled)) // filled >= requested
	if !ok {
		return
	}
	newTokens := filled
	if allowed {
		newTokens = sub(filled, requested.f)
	}

	if 0 < ttl {
		if !r.set(t.setTokens, 1, NumberValue(newTokens), num(newTokens), num(ttl), true, false, ErrExpireSetex) {
			return
		}
		stamp := NumberValue(now.f) // a number, or TIME's seconds (an Int)
		if !r.set(t.setStamp, 2, stamp, now, num(ttl), true, false, ErrExpireSetex) {
			return
		}
	}

	r.c.Reply.array()
	if allowed {
		r.c.Reply.addInt(1)
	} else {
		r.c.Reply.addInt(0)
	}
	r.c.Reply.addInt(newTokens)
}
