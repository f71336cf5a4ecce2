package commands

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// A per-client quota table, as a Go middleware keeps one, loaded into the
// server as overrides of one policy: -1 means unlimited, 0 prohibited and
// N means N requests a minute. Over a real server, driven through go-redis
// with the clock frozen (fixture_test.go).

// quotaRow returns the RL.OVERRIDE SET command that loads one row of a
// quota table under policy: -1 UNLIMITED, 0 DENY, N FIXED N 1m.
func quotaRow(policy, client string, quota int64) []any {
	args := []any{"RL.OVERRIDE", "SET", policy, client}
	switch {
	case quota < 0:
		return append(args, "UNLIMITED")
	case quota == 0:
		return append(args, "DENY")
	}
	return append(args, "FIXED", quota, "1m")
}

// loadQuotaTable loads every row of table under policy through one
// go-redis pipeline, and fails the test on any refusal.
func loadQuotaTable(t *testing.T, rdb *redis.Client, policy string, table map[string]int64) {
	t.Helper()
	ctx := context.Background()
	pipe := rdb.Pipeline()
	for client, quota := range table {
		pipe.Do(ctx, quotaRow(policy, client, quota)...)
	}
	cmds, err := pipe.Exec(ctx)
	if err != nil {
		t.Fatalf("loading the quota table: %v", err)
	}
	for _, c := range cmds {
		if v, err := c.(*redis.Cmd).Result(); err != nil || v != "OK" {
			t.Fatalf("%v = %v, %v; want OK", c.Args(), v, err)
		}
	}
}

// listOverrides walks RL.OVERRIDE LIST policy to its end with count per
// call and returns each subject's row as "mode count period_ns".
func listOverrides(t *testing.T, rdb *redis.Client, policy string, count int) map[string]string {
	t.Helper()
	seen := map[string]string{}
	cursor := "0"
	for calls := 0; ; calls++ {
		v := do(t, rdb, "RL.OVERRIDE", "LIST", policy, cursor, "COUNT", count).([]any)
		for _, e := range v[1].([]any) {
			f := e.([]any)
			subject := f[0].(string)
			if _, dup := seen[subject]; dup {
				continue // SCAN's contract: a key may come twice
			}
			seen[subject] = fmt.Sprint(f[1], " ", f[3], " ", f[4])
		}
		if cursor = v[0].(string); cursor == "0" {
			return seen
		}
		if calls > 10000 {
			t.Fatal("RL.OVERRIDE LIST did not end")
		}
	}
}

// tableRows renders a quota table as listOverrides renders the overrides
// that load it.
func tableRows(table map[string]int64) map[string]string {
	rows := map[string]string{}
	for client, quota := range table {
		switch {
		case quota < 0:
			rows[client] = "unlimited 0 0"
		case quota == 0:
			rows[client] = "deny 0 0"
		default:
			rows[client] = fmt.Sprintf("limit %d 60000000000", quota)
		}
	}
	return rows
}

func sortedRows(rows map[string]string) string {
	lines := make([]string, 0, len(rows))
	for k, v := range rows {
		lines = append(lines, k+"="+v)
	}
	sort.Strings(lines)
	return strings.Join(lines, ", ")
}

// TestE2EQuotaTableDecidesUnlimitedProhibitedAndPerMinute: the policy
// quota (FIXED 60 per minute) with a table loaded as its overrides. A
// client with N gets N a minute, refused until the next minute; -1 is
// always admitted with the policy's limit remaining, and never counted; 0
// is always refused with retry_after -1; a client not in the table gets
// the policy's 60 a minute. RL.OVERRIDE LIST gives the table back.
func TestE2EQuotaTableDecidesUnlimitedProhibitedAndPerMinute(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	do(t, rdb, "RL.POLICY", "SET", "quota", "FIXED", "60", "1m")
	table := map[string]int64{
		"client:0000001": -1,
		"client:0000002": 0,
		"client:0000003": 3,
		"client:0000004": 1000,
	}
	loadQuotaTable(t, rdb, "quota", table)

	check := func(client string, n ...any) []any { return append([]any{"RL.CHECK", "quota", client}, n...) }
	script := []call{
		// N = 3: three in the minute, then refused until it ends.
		{0, check("client:0000003"), "[1 3 2 0 60000]"},
		{ms(1), check("client:0000003"), "[1 3 1 0 59999]"},
		{ms(2), check("client:0000003"), "[1 3 0 0 59998]"},
		{ms(3), check("client:0000003"), "[0 3 0 59997 59997]"},
		{ms(30000), check("client:0000003"), "[0 3 0 30000 30000]"},
		{ms(59999), check("client:0000003"), "[0 3 0 1 1]"},
		{ms(60000), check("client:0000003"), "[1 3 2 0 60000]"},
		// N = 1000: a thousand, counted by the override's limit, not the policy's 60.
		{0, check("client:0000004", 999), "[1 1000 1 0 60000]"},
		{0, check("client:0000004"), "[1 1000 0 0 60000]"},
		{0, check("client:0000004"), "[0 1000 0 60000 60000]"},
		{ms(60000), check("client:0000004", 1000), "[1 1000 0 0 60000]"},
		// -1: admitted whatever it asks, with the policy's limit remaining.
		{0, check("client:0000001", 1000), "[1 60 60 0 0]"},
		{ms(59999), check("client:0000001", 61), "[1 60 60 0 0]"},
		{ms(60000), check("client:0000001"), "[1 60 60 0 0]"},
		// 0: refused whatever it asks, never to be admitted.
		{0, check("client:0000002"), "[0 60 0 -1 0]"},
		{0, check("client:0000002", 0), "[0 60 0 -1 0]"},
		{ms(60000), check("client:0000002"), "[0 60 0 -1 0]"},
		// Not in the table: the policy's default, 60 a minute.
		{0, check("client:0000009"), "[1 60 59 0 60000]"},
		{0, check("client:0000009", 59), "[1 60 0 0 60000]"},
		{0, check("client:0000009"), "[0 60 0 60000 60000]"},
		{ms(60000), check("client:0000009"), "[1 60 59 0 60000]"},
	}
	s.play(t, script)
	// The unlimited client is admitted on every call, however many.
	s.at(ms(60000))
	for i := range 200 {
		if got := ints(t, do(t, rdb, check("client:0000001")...)); got != "[1 60 60 0 0]" {
			t.Fatalf("call %d of the unlimited client = %s", i, got)
		}
	}
	// Neither -1 nor 0 keeps any state: they are decided by the override alone.
	if n := do(t, rdb, "EXISTS", "pol:quota:fixed:client:0000001", "pol:quota:fixed:client:0000002"); n != int64(0) {
		t.Fatalf("EXISTS of the unlimited and prohibited clients' state = %v; want 0", n)
	}
	if got, want := sortedRows(listOverrides(t, rdb, "quota", 3)), sortedRows(tableRows(table)); got != want {
		t.Fatalf("RL.OVERRIDE LIST quota = %s; want the table %s", got, want)
	}
}

// TestE2EQuotaTableEditTakesEffectOnTheNextDecision: reloading changed
// rows replaces their overrides, and a row removed from the table (its
// override deleted) leaves the client to the policy's default.
func TestE2EQuotaTableEditTakesEffectOnTheNextDecision(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	do(t, rdb, "RL.POLICY", "SET", "quota", "FIXED", "60", "1m")
	loadQuotaTable(t, rdb, "quota", map[string]int64{"client:a": -1, "client:b": 0, "client:c": 2})
	s.play(t, []call{
		{0, []any{"RL.CHECK", "quota", "client:c", 2}, "[1 2 0 0 60000]"},
		{0, []any{"RL.CHECK", "quota", "client:c"}, "[0 2 0 60000 60000]"},
	})
	edited := map[string]int64{"client:b": 5, "client:c": 0}
	loadQuotaTable(t, rdb, "quota", edited)
	if got := do(t, rdb, "RL.OVERRIDE", "DEL", "quota", "client:a"); got != int64(1) {
		t.Fatalf("RL.OVERRIDE DEL quota client:a = %v; want 1", got)
	}
	s.play(t, []call{
		{ms(10), []any{"RL.CHECK", "quota", "client:a"}, "[1 60 59 0 59990]"},
		{ms(10), []any{"RL.CHECK", "quota", "client:b", 5}, "[1 5 0 0 59990]"},
		{ms(10), []any{"RL.CHECK", "quota", "client:b"}, "[0 5 0 59990 59990]"},
		{ms(10), []any{"RL.CHECK", "quota", "client:c"}, "[0 60 0 -1 0]"},
	})
	if got, want := sortedRows(listOverrides(t, rdb, "quota", 10)), sortedRows(tableRows(edited)); got != want {
		t.Fatalf("RL.OVERRIDE LIST quota after the edit = %s; want %s", got, want)
	}
}
