package commands

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-rl/sluice/compat"
	"github.com/sluice-rl/sluice/internal/testutil"
)

// End-to-end tests of the scripting and string commands through go-redis
// and redis-cli over a real socket, with the debug clock frozen.

const (
	ululeIncr = compat.UluleIncrSHA1
	ululePeek = compat.UlulePeekSHA1
)

func TestEvalshaOfAKnownScriptNeedsNoLoad(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	s.at(0)
	if got := fmt.Sprint(do(t, rdb, "EVALSHA", ululeIncr, 1, "lim:a", 1, 60000)); got != "[1 60000]" {
		t.Fatalf("EVALSHA ulule incr = %s; want [1 60000]", got)
	}
	s.at(ms(250))
	if got := fmt.Sprint(do(t, rdb, "EVALSHA", ululeIncr, 1, "lim:a", 1, 60000)); got != "[2 59750]" {
		t.Fatalf("second EVALSHA = %s; want [2 59750]", got)
	}
	// The key answers the plain commands as Redis would.
	for _, c := range []struct {
		args []any
		want string
	}{
		{[]any{"GET", "lim:a"}, "2"},
		{[]any{"PTTL", "lim:a"}, "59750"},
		{[]any{"TTL", "lim:a"}, "60"},
		{[]any{"TYPE", "lim:a"}, "string"},
		{[]any{"EXISTS", "lim:a", "lim:b"}, "1"},
		{[]any{"EVALSHA_RO", ululePeek, 1, "lim:a"}, "[2 59750]"},
		{[]any{"SCAN", 0, "TYPE", "string"}, "[0 [lim:a]]"},
		{[]any{"RL.INFO", "lim:a"}, "[algorithm string expire_at_ns 1800000060001000000 ttl_ms 59750]"},
		{[]any{"DEL", "lim:a"}, "1"},
		{[]any{"EXISTS", "lim:a"}, "0"},
		{[]any{"PTTL", "lim:a"}, "-2"},
	} {
		if got := fmt.Sprint(do(t, rdb, c.args...)); got != c.want {
			t.Fatalf("%v = %s; want %s", c.args, got, c.want)
		}
	}
	if v, err := rdb.Do(context.Background(), "GET", "lim:a").Result(); err != redis.Nil {
		t.Fatalf("GET of a deleted key = %v, %v; want nil", v, err)
	}
}

func TestEvalshaOfAnUnknownSHA1IsNoscript(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(3))
	got := doErr(t, rdb, "EVALSHA", strings.Repeat("ab", 20), 0)
	if got != "NOSCRIPT No matching script. Please use EVAL." {
		t.Fatalf("EVALSHA of an unknown SHA1: %q; want Redis's NOSCRIPT", got)
	}
	// numkeys is checked first, as Redis does.
	for _, c := range []struct {
		args []any
		want string
	}{
		{[]any{"EVALSHA", strings.Repeat("ab", 20), "x"}, "ERR value is not an integer or out of range"},
		{[]any{"EVALSHA", strings.Repeat("ab", 20), -1}, "ERR Number of keys can't be negative"},
		{[]any{"EVALSHA", strings.Repeat("ab", 20), 2, "k"}, "ERR Number of keys can't be greater than number of args"},
		{[]any{"EVAL", "return 1"}, "ERR wrong number of arguments for 'eval' command"},
	} {
		if got := doErr(t, rdb, c.args...); got != c.want {
			t.Fatalf("%v: %q; want %q", c.args, got, c.want)
		}
	}
}

func TestEvalOfAnUnknownTextNamesTheNativeCommand(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	known := compat.Known.Lookup([]byte(compat.UluleIncrSHA1)).Text
	edited := strings.Replace(known, "ttl > 0", "ttl > 1", 1)
	got := doErr(t, rdb, "EVAL", edited, 1, "k", 1, 1000)
	for _, want := range []string{"ERR sluice runs no Lua", "ulule/limiter", "RL.FIXED key <limit> <period> [count]"} {
		if !strings.Contains(got, want) {
			t.Fatalf("EVAL of an edited ulule script: %q; want it to contain %q", got, want)
		}
	}
	got = doErr(t, rdb, "SCRIPT", "LOAD", "return redis.call('GET', KEYS[1])")
	if !strings.Contains(got, "use the RL.* commands") {
		t.Fatalf("SCRIPT LOAD of an unrelated text: %q; want it to point at the RL.* commands", got)
	}
	// The known text itself runs with EVAL.
	if got := fmt.Sprint(do(t, rdb, "EVAL", known, 1, "k", 1, 1000)); got != "[1 1000]" {
		t.Fatalf("EVAL of the known text = %s; want [1 1000]", got)
	}
}

func TestScriptLoadExistsFlush(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	for _, sc := range compat.Known.Scripts() {
		if got := do(t, rdb, "SCRIPT", "LOAD", sc.Text); got != sc.SHA1 {
			t.Fatalf("SCRIPT LOAD of %s = %v; want %s", sc.File, got, sc.SHA1)
		}
	}
	got := fmt.Sprint(do(t, rdb, "SCRIPT", "EXISTS", ululeIncr, strings.ToUpper(ululePeek), strings.Repeat("0", 40)))
	if got != "[1 1 0]" {
		t.Fatalf("SCRIPT EXISTS = %s; want [1 1 0]", got)
	}
	if got := do(t, rdb, "SCRIPT", "FLUSH"); got != "OK" {
		t.Fatalf("SCRIPT FLUSH = %v", got)
	}
	// Known scripts survive a flush: never NOSCRIPT for them.
	if got := fmt.Sprint(do(t, rdb, "SCRIPT", "EXISTS", ululeIncr)); got != "[1]" {
		t.Fatalf("SCRIPT EXISTS after FLUSH = %s; want [1]", got)
	}
	for _, c := range []struct {
		args []any
		want string
	}{
		{[]any{"SCRIPT", "FLUSH", "LATER"}, "ERR SCRIPT FLUSH only support SYNC|ASYNC option"},
		{[]any{"SCRIPT", "KILL"}, "NOTBUSY No scripts in execution right now."},
		{[]any{"SCRIPT", "LOAD"}, "ERR wrong number of arguments for 'script|load' command"},
		{[]any{"SCRIPT", "DEBUG", "YES"}, "ERR unknown subcommand 'DEBUG'. Try SCRIPT HELP."},
	} {
		if got := doErr(t, rdb, c.args...); got != c.want {
			t.Fatalf("%v: %q; want %q", c.args, got, c.want)
		}
	}
}

func TestLimiterStateAndStringsAreWrongTypeToEachOther(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	s.at(0)
	do(t, rdb, "RL.TOKEN", "bucket", "10/s", 5)
	do(t, rdb, "SET", "counter", 3)
	const wrong = "WRONGTYPE Operation against a key holding the wrong kind of value"
	for _, c := range []struct {
		args []any
		want string
	}{
		{[]any{"GET", "bucket"}, wrong},
		{[]any{"INCR", "bucket"}, wrong},
		{[]any{"EVALSHA", ululeIncr, 1, "bucket", 1, 1000}, wrong + " script: " + ululeIncr + ", on @user_script:5."},
		{[]any{"RL.TOKEN", "counter", "10/s", 5}, wrong},
		{[]any{"RL.FIXED", "counter", 5, "1s"}, wrong},
		{[]any{"PEXPIRE", "bucket", 100}, wrong + " (a limiter's TTL is set by its algorithm)"},
	} {
		if got := doErr(t, rdb, c.args...); got != c.want {
			t.Fatalf("%v: %q; want %q", c.args, got, c.want)
		}
	}
	// SET replaces a limiter's state, as Redis's SET replaces any value.
	if got := do(t, rdb, "SET", "bucket", "x"); got != "OK" {
		t.Fatalf("SET over a bucket = %v", got)
	}
	if got := do(t, rdb, "TYPE", "bucket"); got != "string" {
		t.Fatalf("TYPE after SET = %v; want string", got)
	}
}

func TestStringKeysExpireAsRedisKeys(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	s.at(0)
	do(t, rdb, "SET", "k", 5, "PX", 1000)
	s.at(ms(999) + 999_999) // the key lives through its last millisecond
	if got := fmt.Sprint(do(t, rdb, "GET", "k"), " ", do(t, rdb, "PTTL", "k")); got != "5 1" {
		t.Fatalf("GET, PTTL at 999.999 ms = %s; want 5 1", got)
	}
	s.at(ms(1000))
	if got := fmt.Sprint(do(t, rdb, "PTTL", "k")); got != "0" {
		t.Fatalf("PTTL in the last millisecond = %s; want 0", got)
	}
	s.at(ms(1001))
	if got := fmt.Sprint(do(t, rdb, "EXISTS", "k"), " ", do(t, rdb, "PTTL", "k")); got != "0 -2" {
		t.Fatalf("EXISTS, PTTL after expiry = %s; want 0 -2", got)
	}
	do(t, rdb, "INCRBY", "n", 7)
	if got := fmt.Sprint(do(t, rdb, "PTTL", "n"), " ", do(t, rdb, "TTL", "n")); got != "-1 -1" {
		t.Fatalf("PTTL, TTL of a key without a TTL = %s; want -1 -1", got)
	}
}

func TestScriptsRunInsideAPipelineAfterDecisions(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	s.at(0)
	ctx := context.Background()
	pipe := rdb.Pipeline()
	tok := pipe.Do(ctx, "RL.TOKEN", "a", "1/s", 1)
	inc := pipe.Do(ctx, "EVALSHA", ululeIncr, 1, "b", 1, 1000)
	tok2 := pipe.Do(ctx, "RL.TOKEN", "a", "1/s", 1)
	get := pipe.Do(ctx, "GET", "b")
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(tok.Val(), inc.Val(), tok2.Val(), get.Val())
	if got != "[1 1 0 0 1000] [1 1000] [0 1 0 1000 1000]1" {
		t.Fatalf("pipeline = %s", got)
	}
}

func TestScriptNullIsRESP3NullAfterHello3(t *testing.T) {
	s := startServer(t, testConfig{})
	s.at(0)
	c := testutil.Dial(t, s.addr)
	get := "*4\r\n$7\r\nEVALSHA\r\n$40\r\n" + compat.RateLimitRedisGetSHA1 + "\r\n$1\r\n1\r\n$7\r\nmissing\r\n"
	if got := c.Do(get); got != "[$nil :-2]" {
		t.Fatalf("RESP2 get of a missing key = %s; want [$nil :-2]", got)
	}
	c.Send("*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n")
	c.NC.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.R.ReadString('\n'); err != nil { // the map's header
		t.Fatal(err)
	}
	for { // skip the map's pairs up to the last ("modules" and its empty array)
		line, err := c.R.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line == "*0\r\n" {
			break
		}
	}
	c.Send(get)
	want := "*2\r\n_\r\n:-2\r\n"
	buf := make([]byte, len(want))
	if _, err := io.ReadFull(c.R, buf); err != nil || string(buf) != want {
		t.Fatalf("RESP3 get of a missing key = %q, %v; want %q", buf, err, want)
	}
}

// The known scripts by EVALSHA, pipelined 16 deep through the handler, as
// the libraries send them (bench/ compares them with Redis running the Lua).
func BenchmarkCmdEvalshaUlule(b *testing.B) {
	benchPipeline(b, func(i int) []string { return []string{"EVALSHA", ululeIncr, "1", key(i), "1", "3600000"} })
}

func BenchmarkCmdEvalshaSpring(b *testing.B) {
	benchPipeline(b, func(i int) []string {
		return []string{"EVALSHA", "0ad5736ed1c04aae6ec194376c784b89b8c08a7a", "2",
			"rl.{" + key(i) + "}.tokens", "rl.{" + key(i) + "}.timestamp", "1000", "100000", "", "1"}
	})
}

func BenchmarkCmdEvalshaRedisRate(b *testing.B) {
	benchPipeline(b, func(i int) []string {
		return []string{"EVALSHA", compat.AllowNSHA1v911, "1", "rate:" + key(i), "100000", "1000", "1", "1"}
	})
}

func BenchmarkCmdGet(b *testing.B) {
	benchPipeline(b, func(i int) []string { return []string{"GET", key(i)} })
}

// TestScriptsDoNotAllocate holds a pipeline of EVALSHA of a known script,
// and of the string commands, to zero heap allocations once the
// connection's buffers and the keys exist.
func TestScriptsDoNotAllocate(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation count is measured in full runs")
	}
	c := loopback(t)
	var batch strings.Builder
	for i := 0; i < 16; i++ {
		batch.WriteString(frame("EVALSHA", ululeIncr, "1", key(i), "1", "3600000"))
		batch.WriteString(frame("GET", key(i)))
		batch.WriteString(frame("INCR", key(i)))
	}
	in := []byte(batch.String())
	run := func() { feed(t, c, in) }
	run()
	if allocs := testing.AllocsPerRun(100, run); allocs != 0 {
		t.Fatalf("a batch of 16 EVALSHA, GET and INCR allocates %.1f times; want 0", allocs)
	}
}

// TestLimitsClearKeysDeletesByPattern: Python limits' storage.reset() sends
// clear_keys with the pattern "LIMITER*" as KEYS[1]: every key that matches
// is deleted, of any kind (a moving window's list, a counter, a limiter's
// state), and the count is the reply; with no key it is Redis's argument
// error, and EVALSHA_RO fails once there is something to delete.
func TestLimitsClearKeysDeletesByPattern(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	s.at(0)
	clear := compat.LimitsClearKeysSHA1
	if got := fmt.Sprint(do(t, rdb, "EVALSHA", clear, 1, "LIMITER*")); got != "0" {
		t.Fatalf("clear_keys of nothing = %s; want 0", got)
	}
	do(t, rdb, "EVALSHA", compat.LimitsAcquireSHA1, 1, "LIMITER/m/a", "1800000000.25", 5, 60, 2)
	do(t, rdb, "EVALSHA", compat.LimitsIncrExpireSHA1, 1, "LIMITER/f/a", 60, 1)
	do(t, rdb, "RL.TOKEN", "LIMITER/native", "1/s", 1)
	do(t, rdb, "SET", "other", 1)
	if got := fmt.Sprint(do(t, rdb, "TYPE", "LIMITER/m/a")); got != "list" {
		t.Fatalf("TYPE of the moving window = %s; want list", got)
	}
	want := "Write commands are not allowed from read-only scripts. script: " + clear + ", on @user_script:5."
	if got := doErr(t, rdb, "EVALSHA_RO", clear, 1, "LIMITER*"); !strings.Contains(got, want) {
		t.Fatalf("EVALSHA_RO clear_keys = %s; want %s", got, want)
	}
	want = "Lua redis lib command arguments must be strings or integers script: " + clear + ", on @user_script:1."
	if got := doErr(t, rdb, "EVALSHA", clear, 0); !strings.Contains(got, want) {
		t.Fatalf("clear_keys without KEYS[1] = %s; want %s", got, want)
	}
	if got := fmt.Sprint(do(t, rdb, "EVALSHA", clear, 1, "LIMITER*")); got != "3" {
		t.Fatalf("clear_keys = %s; want 3", got)
	}
	if got := fmt.Sprint(do(t, rdb, "EXISTS", "LIMITER/m/a", "LIMITER/f/a", "LIMITER/native", "other")); got != "1" {
		t.Fatalf("EXISTS after clear_keys = %s; want 1 (other)", got)
	}
}

// TestPubSubIsRefusedNamingWhatSluiceIs: SUBSCRIBE, PUBLISH and the other
// pub/sub commands get Redis's unknown-command error (clients match its
// start), which adds that sluice has no pub/sub.
func TestPubSubIsRefusedNamingWhatSluiceIs(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	for _, args := range [][]any{{"SUBSCRIBE", "ch"}, {"PUBLISH", "ch", "m"}, {"PSUBSCRIBE", "c*"}, {"PUBSUB", "CHANNELS"}} {
		got := doErr(t, rdb, args...)
		want := "ERR unknown command '" + args[0].(string) + "', with args beginning with: '" + args[1].(string) + "'"
		if !strings.HasPrefix(got, want) || !strings.Contains(got, "sluice is a rate-limit server: it has no pub/sub") {
			t.Fatalf("%v = %q; want %q… and that sluice has no pub/sub", args, got, want)
		}
	}
	if got := doErr(t, rdb, "NOSUCH"); strings.Contains(got, "pub/sub") {
		t.Fatalf("NOSUCH = %q; want no word of pub/sub", got)
	}
}
