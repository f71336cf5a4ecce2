package main

import (
	_ "embed"

	"github.com/sluice-rl/sluice/internal/resp"
)

// The limiter libraries' own Lua scripts (copies of compat/scripts, byte for
// byte: the SHA1 is what sluice recognises), each sent with EVALSHA, as the
// library sends it, to Redis, which runs the Lua, and to sluice, which runs
// the script natively. Each pair of scenarios sends the same command.

var (
	//go:embed lua/spring-request_rate_limiter-4.3.0.lua
	springLua string
	//go:embed lua/redis_rate-allowN-v9.1.1.lua
	redisRateLua string
	//go:embed lua/rate-limiter-flexible-11.lua
	flexibleLua string
	//go:embed lua/rate-limit-redis-6-increment.lua
	rateLimitRedisLua string
	//go:embed lua/ulule-limiter-v3-incr.lua
	ululeLua string
)

// library is one library's script call.
type library struct {
	name, label string
	lua         string
	keysPer     int
	args        func(w workload, sha string) []string
}

var libraries = []library{
	{"spring", "Spring Cloud Gateway", springLua, 2, func(w workload, sha string) []string {
		// Spring sends an empty now: the script reads TIME.
		return []string{"EVALSHA", sha, "2", "request_rate_limiter.{$KEY}.tokens", "request_rate_limiter.{$KEY}.timestamp",
			w.rate, itoa(w.capacity), "", itoa(w.cost)}
	}},
	{"redisrate", "go-redis/redis_rate allowN", redisRateLua, 1, func(w workload, sha string) []string {
		// burst, rate per period, period in seconds, cost.
		return []string{"EVALSHA", sha, "1", "rate:$KEY", itoa(w.capacity), w.rate, "1", itoa(w.cost)}
	}},
	{"flexible", "rate-limiter-flexible", flexibleLua, 1, func(w workload, sha string) []string {
		// points to consume, duration in seconds, the limiter's points and duration.
		return []string{"EVALSHA", sha, "1", "rlflx:$KEY", itoa(w.cost), itoa(w.window), itoa(w.capacity), itoa(w.window)}
	}},
	{"ratelimitredis", "rate-limit-redis increment", rateLimitRedisLua, 1, func(w workload, sha string) []string {
		// windowMs.
		return []string{"EVALSHA", sha, "1", "rl:$KEY", itoa(w.window * 1000)}
	}},
	{"ulule", "ulule/limiter incr", ululeLua, 1, func(w workload, sha string) []string {
		// count, period in ms.
		return []string{"EVALSHA", sha, "1", "limiter:$KEY", itoa(w.cost), itoa(w.window * 1000)}
	}},
}

// libraryPairs lists the scenarios of every library, sluice's then Redis's.
var libraryPairs []string

func init() {
	for _, l := range libraries {
		for _, srv := range []string{"sluice", "redis"} {
			label := "sluice " + l.label + " (native)"
			if srv == "redis" {
				label = "Redis " + l.label + " (Lua)"
			}
			scenarios = append(scenarios, &scenario{
				name: srv + "-script-" + l.name, label: label, server: srv, algo: "script",
				prefix: "lib" + l.name[:2] + ":", keysPer: l.keysPer, lua: l.lua, args: l.args, check: checkScript,
			})
			libraryPairs = append(libraryPairs, srv+"-script-"+l.name)
		}
	}
}

// checkScript checks a library script's reply: an array of integers (these
// scripts return two or four), never an error.
func checkScript(_ workload, v *resp.Value) (int8, string) {
	const want = "an array of integers"
	if v.Kind != '*' || len(v.Elems) < 2 {
		return -1, wrong(want, v)
	}
	for i := range v.Elems {
		if !v.Elems[i].IsInt() && v.Elems[i].Kind != '$' {
			return -1, wrong(want, v)
		}
	}
	return -1, ""
}
