package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
)

// The memory a per-client quota table takes when it is loaded as overrides
// of one policy, measured on the real process: its resident size and the
// key space's own accounting (INFO memory) before and after.

// overridesToMeasure is how many overrides TestOverridesMemoryPerOverride
// loads: 100,000 by default, 1,000,000 with SLUICE_OVERRIDES_RSS=1, or the
// count SLUICE_OVERRIDES_RSS names (above 1).
func overridesToMeasure(t *testing.T) int {
	v := os.Getenv("SLUICE_OVERRIDES_RSS")
	if v == "" {
		return 100_000
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("SLUICE_OVERRIDES_RSS=%q: want 1 (for 1,000,000) or a count of overrides", v)
	}
	if n == 1 {
		return 1_000_000
	}
	return n
}

// quotaClient is the subject of row i of the table: 14 bytes.
func quotaClient(i int) string { return fmt.Sprintf("client:%07d", i) }

// quotaOf is row i's quota, in the table's mix: a third -1 (unlimited), a
// third 0 (prohibited), a third N a minute with N from 1 to 1000.
func quotaOf(i int) int64 {
	switch i % 3 {
	case 0:
		return -1
	case 1:
		return 0
	}
	return 1 + int64(i%1000)
}

// quotaRow returns the RL.OVERRIDE SET command that loads row i.
func quotaRow(i int) []any {
	args := []any{"RL.OVERRIDE", "SET", "quota", quotaClient(i)}
	switch q := quotaOf(i); {
	case q < 0:
		return append(args, "UNLIMITED")
	case q == 0:
		return append(args, "DENY")
	default:
		return append(args, "FIXED", q, "1m")
	}
}

// memorySample is the process's resident size and the key space's bytes.
type memorySample struct {
	rssKB                    int64
	used, arena, index, keys int64
}

// sampleMemory returns the server's figures once MEMORY PURGE has returned
// the Go heap's garbage to the system, so that what stays resident is what
// the server holds.
func sampleMemory(t *testing.T, p *proc) memorySample {
	t.Helper()
	rdb := client(t, p)
	if err := rdb.Do(context.Background(), "MEMORY", "PURGE").Err(); err != nil {
		t.Fatal(err)
	}
	num := func(name string) int64 {
		n, err := strconv.ParseInt(infoField(t, rdb, "memory", name), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	return memorySample{
		rssKB: residentKB(p.cmd.Process.Pid, "VmRSS"),
		used:  num("keyspace_used_memory"), arena: num("keyspace_arena_bytes"),
		index: num("keyspace_index_bytes"), keys: num("keyspace_keys"),
	}
}

// TestOverridesMemoryPerOverride loads a quota table of n overrides (the
// mix of quotaOf, subjects of 14 bytes under the policy quota, so keys
// ovr:quota:client:NNNNNNN of 24) through pipelines of 1000, and reports
// the resident size and the key space's bytes they add, per override and
// per override beyond the subject's bytes. With four shards, as on two
// cores. The default run loads 100,000 and holds RSS to 96 bytes beyond
// the subject (the runtime's and the allocator's noise is a few hundred
// kB, a few bytes an override at this count) and the key space's own
// bytes to 64. A sample of the overrides then decides as its row says,
// and RL.OVERRIDE LIST walks all of them.
//
// go test ./cmd/sluice -run TestOverridesMemoryPerOverride -v with
// SLUICE_OVERRIDES_RSS=1 measures 1,000,000 (bench/RESULTS.md).
func TestOverridesMemoryPerOverride(t *testing.T) {
	n := overridesToMeasure(t)
	p := start(t, "--shards", "4", "--save", "0", "--dir", t.TempDir())
	if residentKB(p.cmd.Process.Pid, "VmRSS") == 0 {
		t.Skip("no /proc/PID/status here to read the resident size from")
	}
	rdb := client(t, p)
	ctx := context.Background()
	if err := rdb.Do(ctx, "RL.POLICY", "SET", "quota", "FIXED", "60", "1m").Err(); err != nil {
		t.Fatal(err)
	}
	// One pipeline first, deleted again, so that the connection's buffers
	// and the runtime's first allocations are in the baseline.
	if oom := pipelined(t, rdb, 1000, quotaRow); oom != 0 {
		t.Fatalf("%d overrides refused with OOM", oom)
	}
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	before := sampleMemory(t, p)
	if oom := pipelined(t, rdb, n, quotaRow); oom != 0 {
		t.Fatalf("%d overrides refused with OOM", oom)
	}
	after := sampleMemory(t, p)
	if got := after.keys - before.keys; got != int64(n) {
		t.Fatalf("keyspace_keys grew by %d; want %d", got, n)
	}

	const subject = 14 // len(quotaClient(i))
	per := func(bytes int64) float64 { return float64(bytes) / float64(n) }
	rss := (after.rssKB - before.rssKB) << 10
	used := after.used - before.used
	t.Logf("| overrides | RSS delta | RSS/override | RSS beyond subject | keyspace_used_memory/override | beyond subject | arena/override | index/override |")
	t.Logf("| %d | %.1f MiB | %.1f B | %.1f B | %.1f B | %.1f B | %.1f B | %.1f B |",
		n, float64(rss)/(1<<20), per(rss), per(rss)-subject, per(used), per(used)-subject,
		per(after.arena-before.arena), per(after.index-before.index))
	if got := per(rss) - subject; got > 96 {
		t.Errorf("resident size grew %.1f bytes an override beyond the subject's; want at most 96", got)
	}
	if got := per(used) - subject; got > 64 {
		t.Errorf("keyspace_used_memory grew %.1f bytes an override beyond the subject's; want at most 64", got)
	}

	checkQuotaSample(t, p, n)
	listed := 0
	kinds := map[string]int{}
	for cursor := "0"; ; {
		v, err := rdb.Do(ctx, "RL.OVERRIDE", "LIST", "quota", cursor, "COUNT", 1000).Slice()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range v[1].([]any) {
			listed++
			kinds[e.([]any)[1].(string)]++
		}
		if cursor = v[0].(string); cursor == "0" {
			break
		}
	}
	// SCAN's cursor may give a key twice only while the table grows or
	// shrinks; nothing is added now, so each override comes once.
	if listed != n || kinds["unlimited"] != (n+2)/3 || kinds["deny"] != (n+1)/3 || kinds["limit"] != n/3 {
		t.Fatalf("RL.OVERRIDE LIST gave %d overrides %v; want %d: %d unlimited, %d deny, %d limit",
			listed, kinds, n, (n+2)/3, (n+1)/3, n/3)
	}
}

// checkQuotaSample decides 1000 rows spread over the table, and a client
// not in it, and fails where a decision is not the row's: N a minute
// admits with N-1 remaining, -1 admits with the policy's 60 remaining, 0
// refuses with retry_after -1, and an absent client gets the policy's 60.
func checkQuotaSample(t *testing.T, p *proc, n int) {
	t.Helper()
	rdb := client(t, p)
	ctx := context.Background()
	step := max(1, n/1000)
	for i := 0; i < n; i += step {
		r, err := rdb.Do(ctx, "RL.CHECK", "quota", quotaClient(i)).Int64Slice()
		if err != nil {
			t.Fatal(err)
		}
		var want []int64 // allowed, limit, remaining, retry_after
		switch q := quotaOf(i); {
		case q < 0:
			want = []int64{1, 60, 60, 0}
		case q == 0:
			want = []int64{0, 60, 0, -1}
		default:
			want = []int64{1, q, q - 1, 0}
		}
		if fmt.Sprint(r[:4]) != fmt.Sprint(want) {
			t.Fatalf("RL.CHECK quota %s (quota %d) = %v; want %v and a reset", quotaClient(i), quotaOf(i), r, want)
		}
	}
	r, err := rdb.Do(ctx, "RL.CHECK", "quota", quotaClient(n)).Int64Slice()
	if err != nil || fmt.Sprint(r[:3]) != "[1 60 59]" {
		t.Fatalf("RL.CHECK quota of a client not in the table = %v, %v; want the policy's 60 a minute", r, err)
	}
}
