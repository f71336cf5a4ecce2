package commands

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// INFO commandstats, errorstats and latencystats, LATENCY and SLOWLOG over
// real sockets, in the forms Redis 7 prints them (each format is checked
// against redis-server's own output too).

// statsWorkload runs, on rdb: a pipeline of 8 decisions on a bucket of 5
// (5 allowed, 3 denied) for sluice, or 8 SETs for Redis; a command that
// runs and fails; one refused for its arity; one unknown command.
func statsWorkload(t *testing.T, rdb *redis.Client, sluice bool) (cmd string) {
	ctx := context.Background()
	pipe := rdb.Pipeline()
	for i := 0; i < 8; i++ {
		if sluice {
			pipe.Do(ctx, "RL.TOKEN", "user:1", "1/m", 5)
		} else {
			pipe.Do(ctx, "SET", "user:1", i)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if sluice {
		doErr(t, rdb, "RL.TOKEN", "user:1", "nonsense", 5)
		doErr(t, rdb, "RL.TOKEN", "user:1")
		cmd = "rl.token"
	} else {
		doErr(t, rdb, "SET", "user:1", "v", "EX", "nonsense")
		doErr(t, rdb, "SET", "user:1")
		cmd = "set"
	}
	doErr(t, rdb, "NOSUCHCOMMAND")
	return cmd
}

// infoLine returns the line of INFO section that starts with prefix.
func infoLine(t *testing.T, rdb *redis.Client, section, prefix string) string {
	t.Helper()
	info := do(t, rdb, "INFO", section).(string)
	for _, l := range strings.Split(info, "\r\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	t.Fatalf("INFO %s has no line %q:\n%s", section, prefix, info)
	return ""
}

func checkStatsFormats(t *testing.T, rdb *redis.Client, cmd string) {
	t.Helper()
	q := regexp.QuoteMeta(cmd)
	formats := []struct{ section, prefix, re string }{
		{"commandstats", "cmdstat_" + cmd + ":",
			`^cmdstat_` + q + `:calls=9,usec=\d+,usec_per_call=\d+\.\d\d,rejected_calls=1,failed_calls=1$`},
		{"errorstats", "errorstat_ERR:", `^errorstat_ERR:count=3$`},
		{"latencystats", "latency_percentiles_usec_" + cmd + ":",
			`^latency_percentiles_usec_` + q + `:p50=\d+\.\d{3},p99=\d+\.\d{3},p99\.9=\d+\.\d{3}$`},
		{"cpu", "used_cpu_user:", `^used_cpu_user:\d+\.\d{6}$`},
	}
	for _, f := range formats {
		if l := infoLine(t, rdb, f.section, f.prefix); !regexp.MustCompile(f.re).MatchString(l) {
			t.Errorf("INFO %s: %q does not match %s", f.section, l, f.re)
		}
	}
}

func TestInfoCommandStatsInRedisFormats(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		s := startServer(t, testConfig{EventLoops: loops})
		rdb := s.client(t, proto(2))
		checkStatsFormats(t, rdb, statsWorkload(t, rdb, true))
		// Redis's INFO: errorstats by default, commandstats and
		// latencystats with "all".
		def := do(t, rdb, "INFO").(string)
		all := do(t, rdb, "INFO", "all").(string)
		for _, h := range []string{"# CPU", "# Errorstats"} {
			if !strings.Contains(def, h+"\r\n") || !strings.Contains(all, h+"\r\n") {
				t.Errorf("INFO or INFO all lacks %q", h)
			}
		}
		for _, h := range []string{"# Commandstats", "# Latencystats"} {
			if strings.Contains(def, h) || !strings.Contains(all, h+"\r\n") {
				t.Errorf("%q: want it in INFO all only", h)
			}
		}
	})
}

func TestRedisPrintsTheSameStatsFormats(t *testing.T) {
	rdb := startRedis(t)
	do(t, rdb, "CONFIG", "RESETSTAT")
	checkStatsFormats(t, rdb, statsWorkload(t, rdb, false))
}

func TestLatencyHistogramCountsEveryCall(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(3))
	statsWorkload(t, rdb, true)
	v := do(t, rdb, "LATENCY", "HISTOGRAM", "rl.token", "nosuch").(map[any]any)
	h, ok := v["rl.token"].(map[any]any)
	if len(v) != 1 || !ok {
		t.Fatalf("LATENCY HISTOGRAM rl.token nosuch = %v; want rl.token alone", v)
	}
	if h["calls"] != int64(9) {
		t.Fatalf("calls = %v; want 9", h["calls"])
	}
	prev := int64(0)
	buckets := h["histogram_usec"].(map[any]any)
	for _, c := range buckets {
		prev = max(prev, c.(int64))
	}
	if prev != 9 {
		t.Fatalf("histogram_usec %v: the last cumulative count is %d; want 9", buckets, prev)
	}
	if got := s.cli(t, "", "LATENCY", "LATEST"); got != "\n" {
		t.Errorf("LATENCY LATEST = %q; want an empty array", got)
	}
	if got := doErr(t, rdb, "LATENCY", "NOSUCH"); got != "ERR unknown subcommand 'NOSUCH'. Try LATENCY HELP." {
		t.Errorf("LATENCY NOSUCH: %q", got)
	}
	if got := doErr(t, rdb, "LATENCY", "HISTORY"); got != "ERR wrong number of arguments for 'latency|history' command" {
		t.Errorf("LATENCY HISTORY: %q", got)
	}
}

func TestSlowlogLogsSlowBatches(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	if n := do(t, rdb, "SLOWLOG", "LEN"); n != int64(0) {
		t.Fatalf("SLOWLOG LEN = %v at start", n)
	}
	// slowlog-log-slower-than 0 logs every batch.
	s.h.slowlog.slower.Store(0)
	do(t, rdb, "CLIENT", "SETNAME", "watcher")
	do(t, rdb, "RL.TOKEN", "user:1", "1/m", 5)
	entries := do(t, rdb, "SLOWLOG", "GET", 1).([]any)
	if len(entries) != 1 {
		t.Fatalf("SLOWLOG GET 1 = %v", entries)
	}
	e := entries[0].([]any)
	if len(e) != 6 || e[3].([]any)[0] != "RL.TOKEN" || e[5] != "watcher" || !strings.HasPrefix(e[4].(string), "127.0.0.1:") {
		t.Fatalf("entry %v; want id, time, µs, [RL.TOKEN], address, name", e)
	}
	if do(t, rdb, "SLOWLOG", "LEN").(int64) < 2 {
		t.Fatal("SLOWLOG LEN: want the two batches at least")
	}
	s.h.slowlog.maxLen.Store(2)
	for i := 0; i < 5; i++ {
		do(t, rdb, "PING")
	}
	if n := do(t, rdb, "SLOWLOG", "LEN"); n != int64(2) {
		t.Fatalf("SLOWLOG LEN = %v; want slowlog-max-len 2", n)
	}
	if got := doErr(t, rdb, "SLOWLOG", "GET", -2); got != "ERR count should be greater than or equal to -1" {
		t.Fatalf("SLOWLOG GET -2: %q", got)
	}
	s.h.slowlog.slower.Store(-1)
	do(t, rdb, "SLOWLOG", "RESET")
	do(t, rdb, "PING")
	if n := do(t, rdb, "SLOWLOG", "LEN"); n != int64(0) {
		t.Fatalf("SLOWLOG LEN = %v after RESET with the log off", n)
	}
}

func TestConfigResetstatZeroesTheStatistics(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	statsWorkload(t, rdb, true)
	if got := do(t, rdb, "CONFIG", "RESETSTAT"); got != "OK" {
		t.Fatalf("CONFIG RESETSTAT = %v", got)
	}
	// As in Redis, the CONFIG RESETSTAT call itself is counted after it.
	if l := infoLine(t, rdb, "commandstats", "cmdstat_"); !strings.HasPrefix(l, "cmdstat_config|resetstat:calls=1,") {
		t.Errorf("INFO commandstats after RESETSTAT: %q; want CONFIG's own call alone", l)
	}
	info := do(t, rdb, "INFO", "errorstats", "stats").(string)
	if strings.Contains(info, "errorstat_") || !strings.Contains(info, "decisions_denied:0\r\n") {
		t.Errorf("INFO after RESETSTAT:\n%s", info)
	}
	if got := doErr(t, rdb, "CONFIG", "RESETSTAT", "x"); got != "ERR wrong number of arguments for 'config|resetstat' command" {
		t.Errorf("CONFIG RESETSTAT x: %q", got)
	}
}

// fieldNames returns the names of a CLIENT INFO line's fields, in order.
func fieldNames(line string) []string {
	var names []string
	for _, f := range strings.Fields(line) {
		names = append(names, f[:strings.IndexByte(f, '=')])
	}
	return names
}

func TestClientInfoPrintsEveryFieldRedisPrints(t *testing.T) {
	theirs := fieldNames(do(t, startRedis(t), "CLIENT", "INFO").(string))
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	do(t, rdb, "PING")
	line := do(t, rdb, "CLIENT", "INFO").(string)
	ours := fieldNames(line)
	// Redis's fields appear in Redis's order (sluice adds Redis 7.2's
	// lib-name and lib-ver).
	i := 0
	for _, name := range ours {
		if i < len(theirs) && name == theirs[i] {
			i++
		}
	}
	if i != len(theirs) {
		t.Fatalf("CLIENT INFO lacks Redis's %q or has it out of order:\nsluice %s\nRedis  %v", theirs[i], line, theirs)
	}
	if !strings.Contains(line, " cmd=client|info ") {
		t.Errorf("CLIENT INFO: %q; want cmd=client|info, the command running, as Redis 7", line)
	}
	// go-redis parses it into its ClientInfo.
	if info, err := rdb.ClientInfo(context.Background()).Result(); err != nil || info.ID == 0 {
		t.Fatalf("go-redis ClientInfo: %+v, %v", info, err)
	}
}
