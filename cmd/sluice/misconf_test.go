package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A full disk under the append-only log: writes are refused with Redis's
// MISCONF error while the log cannot be written, reads and peeks go on,
// no acknowledged decision is lost to a SIGKILL, and writes resume by
// themselves once the disk has room.

const (
	fullLimit  = 1_000_000_000
	misconfAOF = "MISCONF Errors writing to the AOF file: No space left on device"
)

// fillDisk writes a file into dir until the file system is full, then
// frees room bytes of it, and returns its path.
func fillDisk(t *testing.T, dir string, room int64) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	var size int64
	for {
		n, err := f.Write(chunk)
		size += int64(n)
		if errors.Is(err, syscall.ENOSPC) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Truncate(max(size-room, 0)); err != nil {
		t.Fatal(err)
	}
	return path
}

// used returns the units of the fixed window k that the server holds as
// consumed, with a peek.
func used(t *testing.T, p *proc, rdb *redis.Client) int64 {
	t.Helper()
	v, err := rdb.Do(context.Background(), "RL.FIXED", "k", fullLimit, "1d", 0).Int64Slice()
	if err != nil {
		t.Fatalf("peek: %v\n%s", err, p.logText())
	}
	return fullLimit - v[2]
}

// decide sends pipelines of 100 decisions of one unit on k until one is
// refused, at most max pipelines, and returns the admissions and refusals.
// Every refusal must be the AOF's MISCONF error.
func decide(t *testing.T, p *proc, rdb *redis.Client, max int) (admitted, refused int64) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < max && refused == 0; i++ {
		pipe := rdb.Pipeline()
		cmds := make([]*redis.Cmd, 100)
		for j := range cmds {
			cmds[j] = pipe.Do(ctx, "RL.FIXED", "k", fullLimit, "1d", 1)
		}
		pipe.Exec(ctx)
		for _, c := range cmds {
			v, err := c.Int64Slice()
			switch {
			case err == nil && v[0] == 1:
				admitted++
			case err != nil && strings.HasPrefix(err.Error(), misconfAOF):
				refused++
			default:
				t.Fatalf("RL.FIXED k %d 1d 1 = %v, %v; want admitted or %q\n%s", fullLimit, v, err, misconfAOF, p.logText())
			}
		}
	}
	return admitted, refused
}

func TestFullDiskRefusesWritesWithMisconfAndLosesNothing(t *testing.T) {
	dir := mountTmpfs(t, 1<<20)
	args := []string{"--dir", dir, "--appendonly", "yes", "--appendfsync", "always", "--save", "0"}
	p := start(t, args...)
	rdb := client(t, p)
	ctx := context.Background()
	filler := fillDisk(t, dir, 64<<10)

	acked, refused := decide(t, p, rdb, 1000)
	if refused == 0 {
		t.Fatalf("%d decisions admitted and none refused: the disk never filled", acked)
	}
	t.Logf("full disk: %d admitted, then refused", acked)

	// Writes are refused; peeks, reads and INFO answer.
	if err := rdb.Do(ctx, "RL.FIXED", "k", fullLimit, "1d", 1).Err(); err == nil || !strings.HasPrefix(err.Error(), misconfAOF) {
		t.Fatalf("RL.FIXED k … 1 on a full disk = %v; want %q", err, misconfAOF)
	}
	if err := rdb.Do(ctx, "DEL", "k").Err(); err == nil || !strings.HasPrefix(err.Error(), "MISCONF ") {
		t.Fatalf("DEL k on a full disk = %v; want MISCONF", err)
	}
	if u := used(t, p, rdb); u < acked {
		t.Fatalf("peek on a full disk: %d units used; %d were acknowledged", u, acked)
	}
	if n, err := rdb.Exists(ctx, "k").Result(); err != nil || n != 1 {
		t.Fatalf("EXISTS k on a full disk = %d, %v; want 1", n, err)
	}
	if got := infoField(t, rdb, "persistence", "aof_last_write_status"); got != "err" {
		t.Fatalf("aof_last_write_status = %q on a full disk; want err", got)
	}
	// Refused writes append nothing: the pending buffer stays as it is.
	pending := infoField(t, rdb, "persistence", "aof_buffer_length")
	if _, r := decide(t, p, rdb, 1); r != 100 {
		t.Fatalf("%d of 100 decisions refused on a full disk; want all", r)
	}
	if got := infoField(t, rdb, "persistence", "aof_buffer_length"); got != pending {
		t.Fatalf("aof_buffer_length went from %s to %s while every write was refused", pending, got)
	}

	// SIGKILL, and a restart on the still full disk: every acknowledged
	// decision is there.
	p.killed(t)
	q := start(t, args...)
	q.waitLog(t, `append-only log loaded`)
	rdb = client(t, q)
	restored := used(t, q, rdb)
	if restored < acked {
		t.Fatalf("after SIGKILL and a restart %d units are used; %d were acknowledged: %d would be handed out twice",
			restored, acked, acked-restored)
	}

	// Room again: writes resume without any command.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	var resumed int64
	deadline := time.Now().Add(10 * time.Second)
	for {
		a, r := decide(t, q, rdb, 1)
		resumed += a
		if r == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("writes still refused 10 s after the disk has room\n%s", q.logText())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := infoField(t, rdb, "persistence", "aof_last_write_status"); got != "ok" {
		t.Fatalf("aof_last_write_status = %q once writes resumed; want ok", got)
	}
	q.killed(t)
	r := start(t, args...)
	if u := used(t, r, client(t, r)); u < restored+resumed {
		t.Fatalf("after writes resumed and a second SIGKILL %d units are used; %d were held at the restart and %d "+
			"acknowledged since", u, restored, resumed)
	}
}

const misconfSnapshot = "MISCONF sluice is configured to save snapshots, but it's currently unable to persist to disk."

func TestFailedPeriodicSaveRefusesWritesUntilASaveWorks(t *testing.T) {
	dir := mountTmpfs(t, 1<<20)
	p := start(t, "--dir", dir, "--appendonly", "no", "--save", "1")
	rdb := client(t, p)
	ctx := context.Background()
	if err := rdb.Do(ctx, "RL.FIXED", "k", fullLimit, "1d", 1).Err(); err != nil {
		t.Fatal(err)
	}
	filler := fillDisk(t, dir, 0)
	deadline := time.Now().Add(10 * time.Second)
	var err error
	for {
		if err = rdb.Do(ctx, "RL.FIXED", "k", fullLimit, "1d", 1).Err(); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("writes still accepted 10 s after the disk filled\n%s", p.logText())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.HasPrefix(err.Error(), misconfSnapshot) {
		t.Fatalf("RL.FIXED k … 1 after a failed save = %v; want %q…", err, misconfSnapshot)
	}
	if err := rdb.Set(ctx, "s", "1", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), misconfSnapshot) {
		t.Fatalf("SET after a failed save = %v; want %q…", err, misconfSnapshot)
	}
	if u := used(t, p, rdb); u < 1 {
		t.Fatalf("peek after a failed save: %d units used; want at least 1", u)
	}
	if got := infoField(t, rdb, "persistence", "rdb_last_bgsave_status"); got != "err" {
		t.Fatalf("rdb_last_bgsave_status = %q after a failed save; want err", got)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(15 * time.Second)
	for rdb.Do(ctx, "RL.FIXED", "k", fullLimit, "1d", 1).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("writes still refused 15 s after the disk has room\n%s", p.logText())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := infoField(t, rdb, "persistence", "rdb_last_bgsave_status"); got != "ok" {
		t.Fatalf("rdb_last_bgsave_status = %q once writes resumed; want ok", got)
	}
}
