package main

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
)

// End-to-end tests, through the real binary, of the memory that existing
// keys take as they grow, and of RL.ALL's.

// pipelined sends the commands args(0) … args(n-1) in pipelines of 1000 and
// returns how many were refused with Redis's OOM error; any other error
// fails the test.
func pipelined(t *testing.T, rdb *redis.Client, n int, args func(i int) []any) (oom int) {
	t.Helper()
	ctx := context.Background()
	for from := 0; from < n; from += 1000 {
		pipe := rdb.Pipeline()
		cmds := make([]*redis.Cmd, 0, 1000)
		for i := from; i < min(from+1000, n); i++ {
			cmds = append(cmds, pipe.Do(ctx, args(i)...))
		}
		pipe.Exec(ctx)
		for _, c := range cmds {
			switch err := c.Err(); {
			case err == nil:
			case err.Error() == "OOM command not allowed when used memory > 'maxmemory'.":
				oom++
			default:
				t.Fatalf("%v: %v", c.Args(), err)
			}
		}
	}
	return oom
}

// TestMaxmemoryBoundsLogsThatGrow: with --maxmemory 8mb, 10,000
// RL.LOG log:$i 10000 1h 1, then the same keys with n = 9999, which used to
// take 1,028,681,304 bytes (123 times the cap): the logs that would grow
// past the cap are refused with OOM, INFO memory's keyspace_used_memory
// (records, free ones included, and index: the arena and index bytes it
// reports) stays within maxmemory, and so does what the process holds.
func TestMaxmemoryBoundsLogsThatGrow(t *testing.T) {
	p := start(t, "--maxmemory", "8mb", "--save", "0", "--dir", t.TempDir())
	rdb := client(t, p)
	startKB := residentKB(p.cmd.Process.Pid, "VmRSS")
	if oom := pipelined(t, rdb, 10_000, func(i int) []any { return []any{"RL.LOG", fmt.Sprint("log:", i), 10000, "1h", 1} }); oom != 0 {
		t.Fatalf("%d of 10,000 new logs of one unit refused at 8mb", oom)
	}
	oom := pipelined(t, rdb, 10_000, func(i int) []any { return []any{"RL.LOG", fmt.Sprint("log:", i), 10000, "1h", 9999} })
	mem := func(name string) int64 {
		v, err := strconv.ParseInt(infoField(t, rdb, "memory", name), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	used, arena, index := mem("keyspace_used_memory"), mem("keyspace_arena_bytes"), mem("keyspace_index_bytes")
	peakKB := residentKB(p.cmd.Process.Pid, "VmHWM")
	t.Logf("%d of 10,000 growths refused; keyspace_used_memory %d (arena %d, index %d); resident %d kB → peak %d kB",
		oom, used, arena, index, startKB, peakKB)
	if used > 8<<20 || used != arena+index {
		t.Fatalf("keyspace_used_memory %d (arena %d + index %d); want their sum, within the 8mb cap", used, arena, index)
	}
	if oom < 9000 || mem("oom_refused_keys") < int64(oom) {
		t.Fatalf("%d growths refused, oom_refused_keys %d: want all but the 80 or so full logs that fit", oom, mem("oom_refused_keys"))
	}
	if startKB > 0 && peakKB-startKB > 64<<10 {
		t.Fatalf("the process grew from %d kB to a peak of %d kB; want under 64 MB more", startKB, peakKB)
	}
	// A refused log kept its unit, and takes more units within its room.
	v, err := rdb.Do(context.Background(), "RL.LOG", "log:9999", 10000, "1h", 1).Int64Slice()
	if err != nil || v[0] != 1 || v[2] != 9998 {
		t.Fatalf("log:9999 after its refused growth: %v %v; want admitted, 9998 remaining", v, err)
	}
}

// TestAllRepeatingALogKeyStaysSmall: RL.ALL 1 LOG k 10000 1h repeated
// 20,000 times, one 820 KB command that used to take a fresh server to a
// peak of 1,065 MB resident. By default it names more limits than
// all-max-limits and is refused; with --all-max-limits 20000 it is decided:
// the 10,001st limit denies, so nothing is taken, and the process's peak
// resident size (VmHWM, read from /proc, against its resident size just
// before) grows by less than 64 MB.
func TestAllRepeatingALogKeyStaysSmall(t *testing.T) {
	cmd := []any{"RL.ALL", 1}
	for i := 0; i < 20_000; i++ {
		cmd = append(cmd, "LOG", "k", 10000, "1h")
	}
	ctx := context.Background()

	p := start(t, "--save", "0", "--dir", t.TempDir())
	err := client(t, p).Do(ctx, cmd...).Err()
	if err == nil || err.Error() != "ERR too many limits in RL.ALL: at most all-max-limits (10000)" {
		t.Fatalf("20,000 limits by default: %v; want the all-max-limits error", err)
	}

	p = start(t, "--all-max-limits", "20000", "--save", "0", "--dir", t.TempDir())
	rdb := client(t, p)
	pid := p.cmd.Process.Pid
	if residentKB(pid, "VmHWM") == 0 {
		t.Skip("no /proc/PID/status here to read the peak resident size from")
	}
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	beforeKB := residentKB(pid, "VmRSS")
	v, err := rdb.Do(ctx, cmd...).Slice()
	peakKB := residentKB(pid, "VmHWM")
	t.Logf("resident %d kB before, peak %d kB after", beforeKB, peakKB)
	if err != nil || len(v) != 3 || v[0] != int64(0) || v[1] != int64(10000) {
		t.Fatalf("RL.ALL of 20,000: %v %v; want [0 10000 …]: the 10,001st denies", err, v[:min(len(v), 2)])
	}
	results := v[2].([]any)
	for i, r := range results {
		d := r.([]any)
		want := fmt.Sprint([]any{int64(1), int64(10000), int64(10000), int64(0), int64(0)}) // admitted, reported as a peek
		if i >= 10000 {
			want = fmt.Sprint([]any{int64(0), int64(10000), int64(0), int64(3_600_000), int64(3_600_000)})
		}
		if fmt.Sprint(d) != want {
			t.Fatalf("limit %d: %v; want %s", i, d, want)
		}
	}
	if len(results) != 20_000 {
		t.Fatalf("%d decisions; want 20,000", len(results))
	}
	if n, _ := rdb.DBSize(ctx).Result(); n != 0 {
		t.Fatalf("DBSIZE %d after a denied group", n)
	}
	if peakKB-beforeKB > 64<<10 {
		t.Fatalf("the command took the process from %d kB to a peak of %d kB; want under 64 MB more", beforeKB, peakKB)
	}
}
