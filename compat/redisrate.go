package compat

import "math"

// go-redis/redis_rate: GCRA (after rwz/redis-gcra) in one key holding the
// theoretical arrival time as a float of seconds since 2017-01-01, read from
// the server's TIME. Limiter.AllowN and Limiter.AllowAtMost send KEYS
// {"rate:"+key} and ARGV {burst, rate, period in seconds (Go's
// strconv 'f' -1 format: "1", "60", "0.5"), n} through go-redis's
// Script.Run: EVALSHA, then EVAL with the text on NOSCRIPT. The reply is
// {allowed or cost, remaining, tostring(retry_after), tostring(reset_after)},
// the last two as strings of seconds. Source: github.com/go-redis/redis_rate
// lua.go (BSD-2-Clause; the Lua itself Copyright (c) 2017 Pavel Pravosud).

// The distinct texts of allowN and allowAtMost in v9 and v10.
const (
	AllowNSHA1v90          = "ed56c8a55853f0875fb1b3ec6a5f0d599ae50fb7" // v9.0.0–v9.0.2
	AllowNSHA1v910         = "b51fcf1fec2622e401ecd1495ba719a525362891" // v9.1.0
	AllowNSHA1v911         = "f52a5b566060d79fd321d695df55bc918339c4aa" // v9.1.1–v9.1.2, v10.0.0–v10.0.1
	AllowAtMostSHA1v90     = "879df209aa81c6045299275bd92eddc98dc3ba7d" // v9.0.0–v9.0.2
	AllowAtMostSHA1v910    = "a6aad3b47e739a75dad60abfc23778c5cf863397" // v9.1.0
	AllowAtMostSHA1v911    = "054143318f521948424aa25df61d7f7ba835a9d7" // v9.1.1–v9.1.2, v10.0.0–v10.0.1
	redisRateEpoch2017     = 1483228800
	redisRateUsecPerSecond = 1000000
)

// gcraText is what differs between the texts: v9.0 rounds remaining to the
// nearest integer (and allowAtMost denies only when it is exactly 0), v9.1.1
// stops writing a key whose reset_after is not positive; and the lines of
// the statements that can fail.
type gcraText struct {
	rounded, guarded         bool
	div, cost, burst, get    int // allowN: ei*cost on line cost; allowAtMost: none
	max, compareCost, setKey int
}

var (
	allowNv90       = &gcraText{rounded: true, div: 11, cost: 12, burst: 13, get: 26, max: 34, setKey: 54}
	allowNv910      = &gcraText{div: 11, cost: 12, burst: 13, get: 26, max: 34, setKey: 54}
	allowNv911      = &gcraText{guarded: true, div: 11, cost: 12, burst: 13, get: 26, max: 34, setKey: 55}
	allowAtMostv90  = &gcraText{rounded: true, div: 11, burst: 12, get: 25, max: 33, compareCost: 49, setKey: 60}
	allowAtMostv910 = &gcraText{div: 11, burst: 12, get: 25, max: 33, compareCost: 49, setKey: 60}
	allowAtMostv911 = &gcraText{guarded: true, div: 11, burst: 12, get: 25, max: 33, compareCost: 49, setKey: 61}
)

var redisRateScripts = []*Script{
	gcraScript(AllowNSHA1v90, "redis_rate-allowN-v9.0.lua", "allowN", "v9.0.0–v9.0.2", implAllowN, allowNv90),
	gcraScript(AllowNSHA1v910, "redis_rate-allowN-v9.1.0.lua", "allowN", "v9.1.0", implAllowN, allowNv910),
	gcraScript(AllowNSHA1v911, "redis_rate-allowN-v9.1.1.lua", "allowN", "v9.1.1–v9.1.2, v10.0.0–v10.0.1", implAllowN, allowNv911),
	gcraScript(AllowAtMostSHA1v90, "redis_rate-allowAtMost-v9.0.lua", "allowAtMost", "v9.0.0–v9.0.2", implAllowAtMost, allowAtMostv90),
	gcraScript(AllowAtMostSHA1v910, "redis_rate-allowAtMost-v9.1.0.lua", "allowAtMost", "v9.1.0", implAllowAtMost, allowAtMostv910),
	gcraScript(AllowAtMostSHA1v911, "redis_rate-allowAtMost-v9.1.1.lua", "allowAtMost", "v9.1.1–v9.1.2, v10.0.0–v10.0.1", implAllowAtMost, allowAtMostv911),
}

func gcraScript(sha, file, name, versions string, im impl, t *gcraText) *Script {
	markers := []string{"emission_interval", "burst_offset", "jan_1_2017", "new_tat"}
	if im == implAllowAtMost {
		markers = append(markers, "remaining < cost")
	}
	return &Script{
		SHA1: sha, File: file, Library: "go-redis/redis_rate", Name: name, Versions: versions,
		Keys: 1, Args: 4, Native: "RL.TOKEN key <rate>/<period> <burst> [n]",
		impl: im, gcra: t, markers: markers,
	}
}

// gcraStart is the common head of both scripts: ARGV, the emission
// interval, now (seconds since 2017 from TIME) and the stored TAT, at least
// now. cost is tonumber(ARGV[4]); allowN multiplies it in before burst.
func gcraStart(r *run, t *gcraText, allowN bool) (ei, increment, burstOffset, now, tat float64, cost lval, ok bool) {
	burst, rate, period := r.arg(1), r.arg(2), r.arg(3)
	cost = tonumber(r.arg(4))
	p, rt, ok := r.operands(t.div, period, "local 'period'", rate, "local 'rate'")
	if !ok {
		return
	}
	ei = div(p, rt)
	if allowN {
		var c float64
		if _, c, ok = r.operands(t.cost, num(ei), "local 'emission_interval'", cost, "local 'cost'"); !ok {
			return
		}
		increment = mul(ei, c)
	}
	_, b, ok := r.operands(t.burst, num(ei), "local 'emission_interval'", burst, "local 'burst'")
	if !ok {
		return
	}
	burstOffset = mul(ei, b)

	sec, usec := r.timeNow()
	now = add(float64(sec-redisRateEpoch2017), div(float64(usec), redisRateUsecPerSecond))

	v, ok := r.get(t.get, 1)
	if !ok {
		return
	}
	tatVal := num(now)
	if v.Kind() != Absent {
		tatVal = lval{}
		if f, isNum := v.number(); isNum {
			tatVal = num(f)
		}
	}
	if tat, ok = r.checkNumber(t.max, 1, "max", tatVal); !ok {
		return
	}
	tat = luaMax(tat, now)
	return ei, increment, burstOffset, now, tat, cost, true
}

// setTAT is the script's redis.call("SET", key, new_tat, "EX",
// math.ceil(reset_after)), only when reset_after > 0 in the guarded texts.
func setTAT(r *run, t *gcraText, newTAT, resetAfter float64) bool {
	if t.guarded && !(0 < resetAfter) {
		return true
	}
	return r.set(t.setKey, 1, NumberValue(newTAT), num(newTAT), num(math.Ceil(resetAfter)), true, false, ErrExpireSet)
}

// runAllowN is redis_rate's allowN: admit all n or nothing.
func runAllowN(r *run, t *gcraText) {
	ei, increment, burstOffset, now, tat, cost, ok := gcraStart(r, t, true)
	if !ok {
		return
	}
	newTAT := add(tat, increment)
	allowAt := sub(newTAT, burstOffset)
	diff := sub(now, allowAt)
	remaining := div(diff, ei)
	if t.rounded {
		remaining = math.Floor(add(remaining, 0.5))
	}
	if remaining < 0 {
		resetAfter := sub(tat, now)
		retryAfter := mul(diff, -1)
		r.c.Reply.array()
		r.c.Reply.addInt(0)
		r.c.Reply.addInt(0)
		r.c.Reply.addToString(retryAfter)
		r.c.Reply.addToString(resetAfter)
		return
	}
	resetAfter := sub(newTAT, now)
	if !setTAT(r, t, newTAT, resetAfter) {
		return
	}
	r.c.Reply.array()
	r.c.Reply.addInt(cost.f)
	r.c.Reply.addInt(remaining)
	r.c.Reply.addToString(-1)
	r.c.Reply.addToString(resetAfter)
}

// runAllowAtMost is redis_rate's allowAtMost: admit up to n, as many as
// there are.
func runAllowAtMost(r *run, t *gcraText) {
	ei, _, burstOffset, now, tat, cost, ok := gcraStart(r, t, false)
	if !ok {
		return
	}
	diff := sub(now, sub(tat, burstOffset))
	remaining := div(diff, ei)
	denied := remaining < 1
	if t.rounded {
		remaining = math.Floor(add(remaining, 0.5))
		denied = remaining == 0
	}
	if denied {
		resetAfter := sub(tat, now)
		retryAfter := sub(ei, diff)
		r.c.Reply.array()
		r.c.Reply.addInt(0)
		r.c.Reply.addInt(0)
		r.c.Reply.addToString(retryAfter)
		r.c.Reply.addToString(resetAfter)
		return
	}
	less, ok := r.less(t.compareCost, num(remaining), cost)
	if !ok {
		return
	}
	n := cost.f
	if less {
		n, remaining = remaining, 0
	} else {
		remaining = sub(remaining, n)
	}
	newTAT := add(tat, mul(ei, n))
	resetAfter := sub(newTAT, now)
	if !setTAT(r, t, newTAT, resetAfter) {
		return
	}
	r.c.Reply.array()
	r.c.Reply.addInt(n)
	r.c.Reply.addInt(remaining)
	r.c.Reply.addToString(-1)
	r.c.Reply.addToString(resetAfter)
}
