package main

import (
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/sluice-rl/sluice/internal/resp"
)

// The scenarios: one command shape each, sent to one server, with the check
// every reply must pass. A reply that fails its check is an error, reported
// with an example; it is never counted as a success.

//go:embed lua/token_bucket.lua
var tokenBucketLua string

//go:embed lua/fixed_window.lua
var fixedWindowLua string

// workload holds the limiter parameters every decision scenario shares.
type workload struct {
	rate     string // tokens per second, a plain decimal both RL.TOKEN and Lua read
	capacity int64  // bucket capacity, and the fixed window's limit
	window   int64  // fixed window length in seconds
	cost     int64  // units asked per request
}

// scenario is one command shape against one server.
type scenario struct {
	name   string // flag name: sluice-token
	label  string // table label: sluice RL.TOKEN
	server string // "sluice" or "redis"
	algo   string // "token", "fixed", or "" for the reference commands
	prefix string // key prefix, distinct per scenario so that scenarios never share a key
	lua    string // script source, if the scenario runs EVALSHA
	// keysPer is how many server keys one logical key uses.
	keysPer int
	// args returns the command with $KEY for the key and $NOW for the
	// caller's clock in unix seconds.
	args func(w workload, sha string) []string
	// check validates one reply: allowed is 1 or 0 for a decision, -1 for
	// other commands; problem is empty when the reply is right.
	check func(w workload, v *resp.Value) (allowed int8, problem string)
	// setup, if set, prepares a fresh server before the run (after it
	// starts, before the RSS baseline): for the run's keys keys.
	setup func(srv *server, w workload, keys int) error
}

var scenarios = []*scenario{
	{
		name: "sluice-ping", label: "sluice PING", server: "sluice", prefix: "pg:",
		args:  func(workload, string) []string { return []string{"PING"} },
		check: checkPong,
	},
	{
		name: "sluice-token", label: "sluice RL.TOKEN", server: "sluice", algo: "token", prefix: "tk:", keysPer: 1,
		args: func(w workload, _ string) []string {
			return []string{"RL.TOKEN", "$KEY", w.rate, itoa(w.capacity), itoa(w.cost)}
		},
		check: checkDecision,
	},
	{
		name: "sluice-fixed", label: "sluice RL.FIXED", server: "sluice", algo: "fixed", prefix: "fw:", keysPer: 1,
		args: func(w workload, _ string) []string {
			return []string{"RL.FIXED", "$KEY", itoa(w.capacity), itoa(w.window) + "s", itoa(w.cost)}
		},
		check: checkDecision,
	},
	// The same decisions under a named policy, which the server reads from
	// a rules file (benchPolicy) written with the workload's parameters.
	{
		name: "sluice-check", label: "sluice RL.CHECK (TOKEN policy)", server: "sluice-policies", algo: "token",
		prefix: "pc:", keysPer: 1,
		args: func(w workload, _ string) []string {
			return []string{"RL.CHECK", benchPolicy, "$KEY", itoa(w.cost)}
		},
		check: checkDecision,
	},
	// The same, with one subject in ten overridden (RL.OVERRIDE, the
	// policy's own parameters, so that every answer stays the same): each
	// decision then also looks up its subject's override.
	{
		name: "sluice-check-ovr", label: "sluice RL.CHECK, 1 in 10 overridden", server: "sluice-policies", algo: "token",
		prefix: "po:", keysPer: 1,
		args: func(w workload, _ string) []string {
			return []string{"RL.CHECK", benchPolicy, "$KEY", itoa(w.cost)}
		},
		check: checkDecision,
		setup: preloadOverrides("po:", 10),
	},
	// The same decisions with a policy per key (a gateway's policy per API
	// key): the subject names its own policy, one of at least
	// policyTable, all loaded through one pipelined connection first.
	{
		name: "sluice-check-100k", label: "sluice RL.CHECK, a policy per key (100k policies)", server: "sluice",
		algo: "token", prefix: "pk:", keysPer: 1,
		args: func(w workload, _ string) []string {
			return []string{"RL.CHECK", "$KEY", "$KEY", itoa(w.cost)}
		},
		check: checkDecision,
		setup: preloadPolicies("pk:", policyTable),
	},
	// RL.TOKEN on keys of the length and shape RL.CHECK derives at 100k
	// policies (pol:<policy>:token:<subject>, two bytes shorter: the name's
	// ':' is not escaped as %3A): the store's part of RL.CHECK's cost,
	// without the policy lookup, the derived key or the per-policy counts.
	{
		name: "sluice-token-derived", label: "sluice RL.TOKEN on RL.CHECK's state keys", server: "sluice",
		algo: "token", prefix: "pd:", keysPer: 1,
		args: func(w workload, _ string) []string {
			return []string{"RL.TOKEN", "pol:$KEY:token:$KEY", w.rate, itoa(w.capacity), itoa(w.cost)}
		},
		check: checkDecision,
	},
	// The same decisions with the append-only log on (a fresh directory
	// per server), at two appendfsync policies.
	aofToken("sluice-token-aof-everysec", "sluice RL.TOKEN, appendfsync everysec", "sluice-aof-everysec"),
	aofToken("sluice-token-aof-always", "sluice RL.TOKEN, appendfsync always", "sluice-aof-always"),
	// The same decisions over TLS, and as a user held to a key pattern
	// (security.go).
	tlsToken("sluice-token-tls", "sluice RL.TOKEN over TLS", "sluice-tls"),
	{
		name: "sluice-token-acl", label: "sluice RL.TOKEN, ACL user ~ac:*", server: "sluice-acl", algo: "token",
		prefix: "ac:", keysPer: 1,
		args: func(w workload, _ string) []string {
			return []string{"RL.TOKEN", "$KEY", w.rate, itoa(w.capacity), itoa(w.cost)}
		},
		check: checkDecision,
	},
	// The same decisions with the Prometheus endpoint on and scraped once a
	// second (see scrape in servers.go).
	metricsToken("sluice-token-metrics", "sluice RL.TOKEN, /metrics scraped every second", "sluice-metrics"),
	// The same decisions through a replicated group of -cluster nodes that
	// bench starts for every round (see groupruns.go).
	groupToken("group-token", "group RL.TOKEN → leader", "group"),
	groupToken("group-token-follower", "group RL.TOKEN → follower", "group-follower"),
	groupToken("group-token-nofsync", "group RL.TOKEN → leader, no fsync", "group-nofsync"),
	groupToken("group-token-follower-nofsync", "group RL.TOKEN → follower, no fsync", "group-follower-nofsync"),
	groupToken("group-token-bolt", "group RL.TOKEN → leader, bolt log", "group-bolt"),
	// The same decisions through a sharded cluster of -cluster-groups
	// groups of -cluster nodes that bench starts for every round, each key
	// sent to its slot's leader (see sharded.go).
	groupToken("cluster-token", "cluster RL.TOKEN → each slot's leader", "cluster"),
	{
		name: "redis-ping", label: "Redis PING", server: "redis", prefix: "pg:",
		args:  func(workload, string) []string { return []string{"PING"} },
		check: checkPong,
	},
	{
		name: "redis-incr", label: "Redis INCR", server: "redis", prefix: "in:", keysPer: 1,
		args:  func(workload, string) []string { return []string{"INCR", "$KEY"} },
		check: checkIncr,
	},
	{
		name: "redis-lua-token", label: "Redis Lua token bucket", server: "redis", algo: "token", prefix: "tk:",
		keysPer: 2, lua: tokenBucketLua,
		args: func(w workload, sha string) []string {
			return []string{"EVALSHA", sha, "2", "rl.{$KEY}.tokens", "rl.{$KEY}.timestamp",
				w.rate, itoa(w.capacity), "$NOW", itoa(w.cost)}
		},
		check: checkLuaToken,
	},
	{
		name: "redis-lua-fixed", label: "Redis Lua fixed window", server: "redis", algo: "fixed", prefix: "fw:",
		keysPer: 1, lua: fixedWindowLua,
		args: func(w workload, sha string) []string {
			return []string{"EVALSHA", sha, "1", "$KEY", itoa(w.capacity), itoa(w.window), itoa(w.cost)}
		},
		check: checkLuaFixed,
	},
}

// groupToken is sluice-token sent to a group's node.
func groupToken(name, label, server string) *scenario {
	return &scenario{name: name, label: label, server: server, algo: "token", prefix: "tk:", keysPer: 1,
		args: func(w workload, _ string) []string {
			return []string{"RL.TOKEN", "$KEY", w.rate, itoa(w.capacity), itoa(w.cost)}
		},
		check: checkDecision,
	}
}

// tlsToken is sluice-token over TLS.
func tlsToken(name, label, server string) *scenario {
	sc := groupToken(name, label, server)
	sc.prefix = "tt:"
	return sc
}

func aofToken(name, label, server string) *scenario {
	sc := groupToken(name, label, server)
	sc.prefix = "ta:"
	return sc
}

func metricsToken(name, label, server string) *scenario {
	sc := groupToken(name, label, server)
	sc.prefix = "tm:"
	return sc
}

func findScenario(name string) *scenario {
	for _, s := range scenarios {
		if s.name == name {
			return s
		}
	}
	return nil
}

func scenarioNames() string {
	var names []string
	for _, s := range scenarios {
		names = append(names, s.name)
	}
	return strings.Join(names, ",")
}

// scriptSHA is the SHA1 Redis names a script by.
func scriptSHA(src string) string {
	sum := sha1.Sum([]byte(src))
	return hex.EncodeToString(sum[:])
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func checkPong(_ workload, v *resp.Value) (int8, string) {
	if v.Kind == '+' && string(v.Text) == "PONG" {
		return -1, ""
	}
	return -1, wrong("+PONG", v)
}

func checkIncr(_ workload, v *resp.Value) (int8, string) {
	if v.IsInt() && v.Num > 0 {
		return -1, ""
	}
	return -1, wrong("a positive integer", v)
}

// checkDecision checks the five-integer reply of an RL.* decision (RESP2):
// allowed, limit, remaining, retry_after_ms, reset_after_ms.
func checkDecision(w workload, v *resp.Value) (int8, string) {
	const want = "[allowed 0|1, limit, 0<=remaining<=limit, retry_after_ms, reset_after_ms>=0]"
	if v.Kind != '*' || len(v.Elems) != 5 {
		return -1, wrong(want, v)
	}
	e := v.Elems
	for i := range e {
		if !e[i].IsInt() {
			return -1, wrong(want, v)
		}
	}
	allowed, limit, remaining, retry, reset := e[0].Num, e[1].Num, e[2].Num, e[3].Num, e[4].Num
	switch {
	case allowed != 0 && allowed != 1, limit != w.capacity, remaining < 0 || remaining > limit, reset < 0:
		return -1, wrong(want, v)
	case allowed == 1 && retry != 0:
		return -1, wrong(want+" with retry_after_ms 0 when admitted", v)
	case allowed == 0 && retry == 0:
		return -1, wrong(want+" with retry_after_ms -1 or >0 when denied", v)
	case retry < -1:
		return -1, wrong(want, v)
	}
	return int8(allowed), ""
}

// checkLuaToken checks {allowed, tokens left} of token_bucket.lua.
func checkLuaToken(w workload, v *resp.Value) (int8, string) {
	const want = "[allowed 0|1, 0<=tokens<=capacity]"
	if v.Kind != '*' || len(v.Elems) != 2 || !v.Elems[0].IsInt() || !v.Elems[1].IsInt() {
		return -1, wrong(want, v)
	}
	allowed, left := v.Elems[0].Num, v.Elems[1].Num
	if (allowed != 0 && allowed != 1) || left < 0 || left > w.capacity {
		return -1, wrong(want, v)
	}
	return int8(allowed), ""
}

// checkLuaFixed checks {allowed, count} of fixed_window.lua.
func checkLuaFixed(w workload, v *resp.Value) (int8, string) {
	const want = "[allowed 0|1, count>=cost]"
	if v.Kind != '*' || len(v.Elems) != 2 || !v.Elems[0].IsInt() || !v.Elems[1].IsInt() {
		return -1, wrong(want, v)
	}
	allowed, count := v.Elems[0].Num, v.Elems[1].Num
	if (allowed != 0 && allowed != 1) || count < w.cost || (allowed == 1) != (count <= w.capacity) {
		return -1, wrong(want, v)
	}
	return int8(allowed), ""
}

// wrong describes a reply that failed its check. Error replies are quoted
// as they are; other replies say what was expected.
func wrong(want string, v *resp.Value) string {
	if v.IsError() {
		return "error reply: " + v.String()
	}
	return "wrong reply: want " + want + ", got " + v.String()
}

// template is a command compiled into literal RESP bytes with holes for the
// key and the clock, so that encoding a request is a few appends.
type template []piece

type piece struct {
	lit  []byte
	hole byte // 0 none, 'k' the key, 'n' now as a bulk string
}

// compileTemplate compiles args for keys of keyLen bytes: every "$KEY" in an
// argument is the key; an argument "$NOW" is the clock.
func compileTemplate(args []string, keyLen int) template {
	var t template
	lit := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		if a == "$NOW" {
			t = append(t, piece{lit: lit, hole: 'n'})
			lit = nil
			continue
		}
		parts := strings.Split(a, "$KEY")
		size := len(a) - (len(parts)-1)*(len("$KEY")-keyLen)
		lit = append(lit, "$"+strconv.Itoa(size)+"\r\n"...)
		for i, p := range parts {
			if i > 0 {
				t = append(t, piece{lit: lit, hole: 'k'})
				lit = nil
			}
			lit = append(lit, p...)
		}
		lit = append(lit, '\r', '\n')
	}
	return append(t, piece{lit: lit})
}

// encode appends one request.
func (t template) encode(b, key, now []byte) []byte {
	for i := range t {
		b = append(b, t[i].lit...)
		switch t[i].hole {
		case 'k':
			b = append(b, key...)
		case 'n':
			b = append(b, '$')
			b = strconv.AppendInt(b, int64(len(now)), 10)
			b = append(b, '\r', '\n')
			b = append(b, now...)
			b = append(b, '\r', '\n')
		}
	}
	return b
}

// keyDigits is the width of the key number, as redis-benchmark's
// __rand_int__ (k:000000012345).
const keyDigits = 12

// appendKey appends prefix and k as keyDigits zero-padded decimal digits.
func appendKey(b []byte, prefix string, k uint64) []byte {
	b = append(b, prefix...)
	var d [keyDigits]byte
	for i := keyDigits - 1; i >= 0; i-- {
		d[i] = byte('0' + k%10)
		k /= 10
	}
	return append(b, d[:]...)
}
