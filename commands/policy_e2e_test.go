package commands

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-rl/sluice/policy"
)

// Policies over a real server, driven through go-redis and redis-cli with
// the clock frozen (fixture_test.go).

// TestE2ECheckTiersKeepSeparateBuckets: two tiers of an API gateway, free
// (10/s, burst 20) and pro (100/s, burst 200). A key decided under both
// has a bucket per policy; each tier's burst and refill are its own.
func TestE2ECheckTiersKeepSeparateBuckets(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	do(t, rdb, "RL.POLICY", "SET", "free", "TOKEN", "10/s", "20")
	do(t, rdb, "RL.POLICY", "SET", "pro", "TOKEN", "100/s", "200", "DESCRIPTION", "paid keys")
	s.play(t, []call{
		{0, []any{"RL.CHECK", "free", "key:abc", 20}, "[1 20 0 0 2000]"},
		{0, []any{"RL.CHECK", "free", "key:abc"}, "[0 20 0 100 2000]"},
		{0, []any{"RL.CHECK", "pro", "key:abc", 200}, "[1 200 0 0 2000]"},
		{0, []any{"RL.CHECK", "pro", "key:abc"}, "[0 200 0 10 2000]"},
		{ms(100), []any{"RL.CHECK", "free", "key:abc"}, "[1 20 0 0 2000]"},
		{ms(100), []any{"RL.CHECK", "pro", "key:abc", 10}, "[1 200 0 0 2000]"},
		{ms(100), []any{"RL.CHECK", "free", "key:other"}, "[1 20 19 0 100]"},
	})
	// The state is under the derived keys, one per policy.
	var keys []string
	it := rdb.Scan(context.Background(), 0, "pol:*", 100).Iterator()
	for it.Next(context.Background()) {
		keys = append(keys, it.Val())
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	sort.Strings(keys)
	want := "pol:free:token:key:abc pol:free:token:key:other pol:pro:token:key:abc"
	if got := strings.Join(keys, " "); got != want {
		t.Fatalf("SCAN 0 MATCH pol:* = %s; want %s", got, want)
	}
}

// TestE2ECheckAnswersAsTheAlgorithmsCommand: RL.CHECK under a policy
// replies exactly what the RL.* command of its algorithm replies with the
// same parameters, for every algorithm a policy decides.
func TestE2ECheckAnswersAsTheAlgorithmsCommand(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	for _, c := range []struct{ algo, p1, p2 string }{
		{"TOKEN", "5/s", "3"}, {"LEAKY", "5/s", "3"}, {"FIXED", "3", "1s"}, {"SLIDING", "3", "1s"}, {"LOG", "3", "1s"},
	} {
		name := "p-" + strings.ToLower(c.algo)
		do(t, rdb, "RL.POLICY", "SET", name, c.algo, c.p1, c.p2)
		for i, at := range []time.Duration{0, 0, ms(10), ms(10), ms(250), ms(700)} {
			s.at(at)
			want := ints(t, do(t, rdb, "RL."+c.algo, "direct:"+name, c.p1, c.p2))
			got := ints(t, do(t, rdb, "RL.CHECK", name, "u"))
			if got != want {
				t.Fatalf("%s call %d at +%v: RL.CHECK = %s; RL.%s = %s", c.algo, i, at, got, c.algo, want)
			}
		}
		s.at(0)
	}
}

// TestE2ECheckShadowPolicyAdmitsAndCountsWouldBeDenials: a SHADOW policy
// decides as usual but always admits; INFO policies counts the decisions
// it would have denied.
func TestE2ECheckShadowPolicyAdmitsAndCountsWouldBeDenials(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	do(t, rdb, "RL.POLICY", "SET", "trial", "FIXED", "2", "1m", "SHADOW")
	s.play(t, []call{
		{0, []any{"RL.CHECK", "trial", "u"}, "[1 2 1 0 60000]"},
		{0, []any{"RL.CHECK", "trial", "u"}, "[1 2 0 0 60000]"},
		{0, []any{"RL.CHECK", "trial", "u"}, "[1 2 0 0 60000]"},
		{0, []any{"RL.CHECK", "trial", "u", 5}, "[1 2 0 0 60000]"},
	})
	info := do(t, rdb, "INFO", "policies").(string)
	if !strings.Contains(info, "policy_shadow_denied:2\r\n") {
		t.Fatalf("INFO policies = %q; want policy_shadow_denied:2", info)
	}
	// Without SHADOW the same state denies.
	do(t, rdb, "RL.POLICY", "SET", "trial", "FIXED", "2", "1m")
	if got := ints(t, do(t, rdb, "RL.CHECK", "trial", "u")); got != "[0 2 0 60000 60000]" {
		t.Fatalf("enforced RL.CHECK = %s", got)
	}
}

// TestE2EPolicyChangeAppliesToExistingState: a policy changed while a
// subject has state decides the next call with the new parameters on that
// state, as an RL.* command with other arguments does.
func TestE2EPolicyChangeAppliesToExistingState(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	do(t, rdb, "RL.POLICY", "SET", "api", "FIXED", "5", "1m")
	s.play(t, []call{{0, []any{"RL.CHECK", "api", "u", 4}, "[1 5 1 0 60000]"}})
	do(t, rdb, "RL.POLICY", "SET", "api", "FIXED", "10", "1m")
	s.play(t, []call{{ms(1), []any{"RL.CHECK", "api", "u"}, "[1 10 5 0 59999]"}})
	do(t, rdb, "RL.POLICY", "SET", "api", "FIXED", "3", "1m")
	s.play(t, []call{{ms(2), []any{"RL.CHECK", "api", "u"}, "[0 3 0 59998 59998]"}})
}

// TestE2EPolicyCommandsAndErrors: SET, GET, LIST, DEL, and each bad input
// answered with its error while the connection keeps serving.
func TestE2EPolicyCommandsAndErrors(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	do(t, rdb, "RL.POLICY", "SET", "free", "TOKEN", "10/s", "20")
	do(t, rdb, "RL.POLICY", "SET", "jobs", "CONCURRENCY", "5", "30s", "DESCRIPTION", "batch jobs")
	do(t, rdb, "RL.POLICY", "SET", "api:v2.daily", "fixed", "1000", "1d", "shadow")
	got := do(t, rdb, "RL.POLICY", "GET", "jobs").([]any)
	if want := "[name jobs algorithm CONCURRENCY count 5 period_ns 30000000000 shadow 0 description batch jobs source command]"; fmtList(got) != want {
		t.Fatalf("GET jobs = %s; want %s", fmtList(got), want)
	}
	if v, err := rdb.Do(context.Background(), "RL.POLICY", "GET", "nope").Result(); err == nil || err.Error() != "redis: nil" {
		t.Fatalf("GET nope = %v, %v; want nil", v, err)
	}
	if got := fmtList(do(t, rdb, "RL.POLICY", "LIST").([]any)); got != "[api:v2.daily free jobs]" {
		t.Fatalf("LIST = %s", got)
	}
	if got := fmtList(do(t, rdb, "RL.POLICY", "LIST", "*o*").([]any)); got != "[jobs]" {
		t.Fatalf("LIST *o* = %s", got)
	}
	for _, c := range []struct {
		args []any
		want string
	}{
		{[]any{"RL.CHECK", "nope", "u"}, "ERR no such policy 'nope'"},
		{[]any{"RL.CHECK", "jobs", "u"}, "ERR " + string(errCheckConcurrency)},
		{[]any{"RL.CHECK", "free", "u", "x"}, "ERR value is not an integer or out of range"},
		{[]any{"RL.CHECK", "free"}, "ERR wrong number of arguments for 'rl.check' command"},
		{[]any{"RL.CHECK", "free", "u", "nope", "v"}, "ERR no such policy 'nope'"},
		{[]any{"RL.CHECK", "free", "u", "jobs", "v", 1}, "ERR " + string(errCheckConcurrency)},
		{[]any{"RL.CHECK", "free", "u", "free", "v", "x"}, "ERR value is not an integer or out of range"},
		{[]any{"RL.POLICY", "SET", "a b", "TOKEN", "1/s", "1"}, "ERR invalid policy name 'a b': use 1 to 128 of the characters A-Z a-z 0-9 _ . : -"},
		{[]any{"RL.POLICY", "SET", strings.Repeat("x", 129), "TOKEN", "1/s", "1"}, "ERR invalid policy name"},
		{[]any{"RL.POLICY", "SET", "x", "GCRA", "1/s", "1"}, "ERR unknown algorithm 'GCRA': use TOKEN, LEAKY, FIXED, SLIDING, LOG or CONCURRENCY"},
		{[]any{"RL.POLICY", "SET", "x", "TOKEN", "0/s", "1"}, "ERR rate must be positive"},
		{[]any{"RL.POLICY", "SET", "x", "FIXED", "0", "1s"}, "ERR limit must be positive"},
		{[]any{"RL.POLICY", "SET", "x", "FIXED", "1", "1"}, "ERR window needs a unit, like 60s or 1500ms"},
		{[]any{"RL.POLICY", "SET", "x", "LOG", "10001", "1s"}, "ERR limit is above log-max-limit"},
		{[]any{"RL.POLICY", "SET", "x", "FIXED", "1", "1s", "LOUD"}, "ERR syntax error"},
		{[]any{"RL.POLICY", "SET", "x", "FIXED", "1", "1s", "DESCRIPTION"}, "ERR syntax error"},
		{[]any{"RL.POLICY", "SET", "x", "FIXED", "1"}, "ERR wrong number of arguments for 'rl.policy|set' command"},
		{[]any{"RL.POLICY", "GET"}, "ERR wrong number of arguments for 'rl.policy|get' command"},
		{[]any{"RL.POLICY", "FROB"}, "ERR unknown subcommand 'FROB'. Try RL.POLICY HELP."},
		{[]any{"RL.POLICY", "RELOAD"}, "ERR " + string(errNoRulesFiles)},
		{[]any{"RL.POLICY", "RELOAD", "force"}, "ERR " + string(errNoRulesFiles)},
		{[]any{"RL.POLICY", "RELOAD", "NOW"}, "ERR syntax error"},
		{[]any{"RL.POLICY", "RELOAD", "FORCE", "x"}, "ERR wrong number of arguments for 'rl.policy|reload' command"},
	} {
		if got := doErr(t, rdb, c.args...); !strings.HasPrefix(got, c.want) {
			t.Errorf("%v = %q; want %q", c.args, got, c.want)
		}
	}
	if got := do(t, rdb, "RL.POLICY", "DEL", "free"); got != int64(1) {
		t.Fatalf("DEL free = %v", got)
	}
	if got := do(t, rdb, "RL.POLICY", "DEL", "free"); got != int64(0) {
		t.Fatalf("DEL free again = %v", got)
	}
	if got := doErr(t, rdb, "RL.CHECK", "free", "u"); got != "ERR no such policy 'free'" {
		t.Fatalf("RL.CHECK after DEL = %q", got)
	}
	if got := do(t, rdb, "PING"); got != "PONG" {
		t.Fatalf("PING = %v", got)
	}
}

// TestE2EFilePoliciesAreReadOnlyAndReload: policies from a rules file are
// decided like the others, refused to RL.POLICY SET and DEL with the
// file's name, and RL.POLICY RELOAD takes an edit of the file; a broken
// edit is refused whole with its position, and the rules in force stay.
func TestE2EFilePoliciesAreReadOnlyAndReload(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.yaml")
	write := func(text string) {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("policies:\n  - name: daily\n    algorithm: fixed\n    limit: 2\n    window: 1d\n")
	reg := policy.NewRegistry()
	w := policy.NewWatcher(policy.WatchConfig{Paths: []string{path}, Apply: func(rs *policy.RuleSet) error {
		reg.SetRules(rs)
		return nil
	}})
	if err := w.Reload(1); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, testConfig{Policies: reg, Rules: w})
	rdb := s.client(t, proto(2))
	s.play(t, []call{{0, []any{"RL.CHECK", "daily", "u", 2}, "[1 2 0 0 57600000]"}})
	want := "ERR policy 'daily' is read-only: it comes from the rules file " + path
	if got := doErr(t, rdb, "RL.POLICY", "SET", "daily", "FIXED", "5", "1d"); got != want {
		t.Fatalf("SET daily = %q; want %q", got, want)
	}
	if got := doErr(t, rdb, "RL.POLICY", "DEL", "daily"); got != want {
		t.Fatalf("DEL daily = %q; want %q", got, want)
	}
	if got := fmtList(do(t, rdb, "RL.POLICY", "GET", "daily").([]any)); !strings.HasSuffix(got, "source "+path+"]") {
		t.Fatalf("GET daily = %s", got)
	}
	write("policies:\n  - name: daily\n    algorithm: fixed\n    limit: 3\n    window: 1d\n")
	do(t, rdb, "RL.POLICY", "RELOAD")
	s.play(t, []call{{0, []any{"RL.CHECK", "daily", "u"}, "[1 3 0 0 57600000]"}})
	write("policies:\n  - name: daily\n    algorithm: fixed\n    limit: 3\n    window: soon\n")
	if got := doErr(t, rdb, "RL.POLICY", "RELOAD"); !strings.Contains(got, path+":5:") {
		t.Fatalf("RELOAD of a broken file = %q; want its position", got)
	}
	s.play(t, []call{{0, []any{"RL.CHECK", "daily", "u"}, "[0 3 0 57600000 57600000]"}})
	info := do(t, rdb, "INFO", "policies").(string)
	for _, line := range []string{"policies:1\r\n", "policies_files:1\r\n", "rules_loads:2\r\n", "rules_failures:1\r\n",
		"rules_last_reload_status:err\r\n", "rules_files:" + path + "\r\n"} {
		if !strings.Contains(info, line) {
			t.Errorf("INFO policies lacks %q:\n%s", line, info)
		}
	}
}

// TestCLIPolicyAndCheck: redis-cli defines a policy and decides with it.
func TestCLIPolicyAndCheck(t *testing.T) {
	s := startServer(t, testConfig{})
	out := s.cli(t, "RL.POLICY SET free TOKEN 10/s 20\nRL.CHECK free key:abc 5\nRL.CHECK nope x\n")
	if want := "OK\n1\n20\n15\n0\n500\nERR no such policy 'nope'\n\n"; out != want {
		t.Fatalf("redis-cli printed %q; want %q", out, want)
	}
}

// fmtList renders a reply array as "[a b 1]".
func fmtList(list []any) string {
	parts := make([]string, len(list))
	for i, x := range list {
		switch v := x.(type) {
		case string:
			parts[i] = v
		case int64:
			parts[i] = strconv.FormatInt(v, 10)
		default:
			parts[i] = "?"
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// TestE2EInfoAndResetReachAPolicysState: RL.INFO POLICY and RL.RESET
// POLICY name the state RL.CHECK keeps by policy and subject.
func TestE2EInfoAndResetReachAPolicysState(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	do(t, rdb, "RL.POLICY", "SET", "daily", "FIXED", "3", "1d")
	s.play(t, []call{{0, []any{"RL.CHECK", "daily", "u1", 3}, "[1 3 0 0 57600000]"}})
	s.play(t, []call{{0, []any{"RL.CHECK", "daily", "u2"}, "[1 3 2 0 57600000]"}})
	got := fmtList(do(t, rdb, "RL.INFO", "POLICY", "daily", "u1").([]any))
	if want := fmtList(do(t, rdb, "RL.INFO", "pol:daily:fixed:u1").([]any)); got != want || !strings.HasPrefix(got, "[algorithm rl-fixed") {
		t.Fatalf("RL.INFO POLICY daily u1 = %s; RL.INFO of its key = %s", got, want)
	}
	if got := do(t, rdb, "RL.RESET", "POLICY", "daily", "u1", "u2", "u3"); got != int64(2) {
		t.Fatalf("RL.RESET POLICY daily u1 u2 u3 = %v; want 2", got)
	}
	s.play(t, []call{{0, []any{"RL.CHECK", "daily", "u1"}, "[1 3 2 0 57600000]"}})
	for _, c := range []struct {
		args []any
		want string
	}{
		{[]any{"RL.INFO", "POLICY", "nope", "u"}, "ERR no such policy 'nope'"},
		{[]any{"RL.RESET", "POLICY", "nope", "u"}, "ERR no such policy 'nope'"},
		{[]any{"RL.INFO", "POLICY", "daily"}, "ERR wrong number of arguments for 'rl.info' command"},
	} {
		if got := doErr(t, rdb, c.args...); got != c.want {
			t.Errorf("%v = %q; want %q", c.args, got, c.want)
		}
	}
	if v, err := rdb.Do(context.Background(), "RL.INFO", "POLICY", "daily", "never").Result(); err != redis.Nil {
		t.Fatalf("RL.INFO POLICY of a subject without state = %v, %v; want nil", v, err)
	}
}
