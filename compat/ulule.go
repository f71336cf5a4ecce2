package compat

// ulule/limiter's Redis store (drivers/store/redis): a fixed window counter
// in one key, counted with INCRBY and given the period's TTL on its first
// hit. Store.Increment and Store.Get send the incr script with KEYS
// {prefix+":"+key} and ARGV {count, period in ms} (Get with count 1);
// Store.Peek sends the peek script with no ARGV. Both are loaded with SCRIPT
// LOAD when the store is created (NewStore fails if that fails) and run
// with EVALSHA, loaded again on NOSCRIPT. Releases before v3.7.0 used
// WATCH/MULTI instead of scripts. Source: github.com/ulule/limiter/v3
// drivers/store/redis/store.go (MIT).

// The incr and peek texts of v3.7.0 and later.
const (
	UluleIncrSHA1 = "f74233f556d3f99c50b61169cf8aa8d5deb63fb2" // v3.7.0–v3.11.2
	UlulePeekSHA1 = "566f5c6a17e5fddb9a10bf389f754edd0d899c61" // v3.7.0–v3.11.2
)

var ululeScripts = []*Script{{
	SHA1: UluleIncrSHA1, File: "ulule-limiter-v3-incr.lua", Library: "ulule/limiter",
	Name: "luaIncrScript", Versions: "v3.7.0–v3.11.2", Keys: 1, Args: 2,
	Native: "RL.FIXED key <limit> <period> [count]",
	impl:   implUluleIncr,
	markers: []string{"local count = tonumber(ARGV[1])", `redis.call("incrby", key, ARGV[1])`,
		"if ret == count then", `redis.call("pexpire", key, ARGV[2])`},
}, {
	SHA1: UlulePeekSHA1, File: "ulule-limiter-v3-peek.lua", Library: "ulule/limiter",
	Name: "luaPeekScript", Versions: "v3.7.0–v3.11.2", Keys: 1, Args: 0, ReadOnly: true,
	Native:  "RL.FIXED key <limit> <period> 0",
	impl:    implUlulePeek,
	markers: []string{`local v = redis.call("get", key)`, "if v == false then", "return {tonumber(v), ttl}"},
}}

// runUluleIncr is (the text starts with an empty line):
//
//	 2 local key = KEYS[1]
//	 3 local count = tonumber(ARGV[1])
//	 4 local ttl = tonumber(ARGV[2])
//	 5 local ret = redis.call("incrby", key, ARGV[1])
//	 6 if ret == count then
//	 7 	if ttl > 0 then
//	 8 		redis.call("pexpire", key, ARGV[2])
//	 9 	end
//	10 	return {ret, ttl}
//	11 end
//	12 ttl = redis.call("pttl", key)
//	13 return {ret, ttl}
func runUluleIncr(r *run) {
	count := tonumber(r.arg(1))
	ttl := tonumber(r.arg(2))
	n, ok := r.incrby(5, 1, r.arg(1))
	if !ok {
		return
	}
	ret := float64(n)
	if count.t == tNum && ret == count.f {
		positive, ok := r.less(7, num(0), ttl) // ttl > 0
		if !ok {
			return
		}
		if positive {
			if _, ok := r.expire(8, 1, r.arg(2), false); !ok {
				return
			}
		}
		r.c.Reply.array()
		r.c.Reply.addInt(ret)
		r.c.Reply.addInt(ttl.f)
		return
	}
	pttl, _ := r.pttl(12, 1)
	r.c.Reply.array()
	r.c.Reply.addInt(ret)
	r.c.Reply.addInt(float64(pttl))
}

// runUlulePeek is:
//
//	2 local key = KEYS[1]
//	3 local v = redis.call("get", key)
//	4 if v == false then
//	5 	return {0, 0}
//	6 end
//	7 local ttl = redis.call("pttl", key)
//	8 return {tonumber(v), ttl}
//
// A value that is not a number makes tonumber(v) nil, which ends the array
// before its first element: the reply is an empty array.
func runUlulePeek(r *run) {
	v, ok := r.get(3, 1)
	if !ok {
		return
	}
	r.c.Reply.array()
	if v.Kind() == Absent {
		r.c.Reply.addInt(0)
		r.c.Reply.addInt(0)
		return
	}
	ttl, _ := r.pttl(7, 1)
	if f, ok := v.number(); ok {
		r.c.Reply.addInt(f)
		r.c.Reply.addInt(float64(ttl))
	}
}
