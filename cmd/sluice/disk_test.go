package main

import (
	"context"
	"fmt"
	"github.com/sluice-rl/sluice/process"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"
)

// The final save on a disk that refuses it: a full file system, one
// remounted read-only, and a directory without write permission. Each
// needs something of the machine (mount rights, or not being root) and
// skips with the reason where it is missing.

// mountTmpfs mounts a tmpfs of size bytes on a new directory and returns
// it; it is unmounted when the test ends, after the processes it started
// later are stopped.
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("tmpfs mounts are a Linux test")
	}
	mnt := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", mnt).CombinedOutput()
	if err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s): this test needs root or CAP_SYS_ADMIN", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", mnt, err, out)
		}
	})
	return mnt
}

// fill creates n token buckets, 1000 per pipeline.
func fill(t *testing.T, rdb *redis.Client, n int) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < n; i += 1000 {
		pipe := rdb.Pipeline()
		for j := i; j < min(i+1000, n); j++ {
			pipe.Do(ctx, "RL.TOKEN", fmt.Sprintf("fill:%07d", j), "1/h", 10, 1)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func TestShutdownSaveOnABrokenDisk(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reason string // in the logged error
		// prepare returns the --dir; breakDisk makes saves into it fail.
		prepare   func(t *testing.T) string
		breakDisk func(t *testing.T, dir string, rdb *redis.Client)
	}{
		{
			// 1 MiB, and 60,000 buckets need about 2 MB of snapshot.
			name:    "full tmpfs",
			reason:  "no space left on device",
			prepare: func(t *testing.T) string { return mountTmpfs(t, 1<<20) },
			breakDisk: func(t *testing.T, dir string, rdb *redis.Client) {
				fill(t, rdb, 60_000)
			},
		},
		{
			name:    "tmpfs remounted read-only",
			reason:  "read-only file system",
			prepare: func(t *testing.T) string { return mountTmpfs(t, 1<<20) },
			breakDisk: func(t *testing.T, dir string, rdb *redis.Client) {
				if out, err := exec.Command("mount", "-o", "remount,ro", dir).CombinedOutput(); err != nil {
					t.Fatalf("remount read-only: %v %s", err, out)
				}
			},
		},
		{
			name:    "directory without write permission",
			reason:  "permission denied",
			prepare: func(t *testing.T) string { return t.TempDir() },
			breakDisk: func(t *testing.T, dir string, rdb *redis.Client) {
				os.Chmod(dir, 0o555)
				t.Cleanup(func() { os.Chmod(dir, 0o755) })
				if f, err := os.Create(filepath.Join(dir, "probe")); err == nil {
					f.Close()
					os.Remove(f.Name())
					t.Skip("mode 0555 does not stop this user's writes (root): the other cases cover a refusing disk")
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.prepare(t)
			p := start(t, "--dir", dir, "--save", "3600")
			rdb := client(t, p)
			take(t, rdb, "user:1", 1)
			if err := rdb.Do(context.Background(), "SAVE").Err(); err != nil {
				t.Fatalf("SAVE while the disk works: %v", err)
			}
			take(t, rdb, "user:1", 3)
			tc.breakDisk(t, dir, rdb)

			p.cmd.Process.Signal(syscall.SIGTERM)
			p.waitLog(t, `saving the snapshot at shutdown failed.*`+tc.reason)
			p.up(t, "after SIGTERM")
			serving(t, rdb, "user:1", 6)
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if strings.Contains(e.Name(), ".tmp-") {
					t.Fatalf("the failed save left %s behind", e.Name())
				}
			}
			p.cmd.Process.Signal(syscall.SIGTERM)
			if code := p.exitCode(t); code != process.ExitUnsaved {
				t.Fatalf("exit code %d; want %d\n%s", code, process.ExitUnsaved, p.logText())
			}

			// The next start says how old the state it serves is.
			p = start(t, "--dir", dir, "--save", "0")
			p.waitLog(t, `msg="snapshot loaded" path=\S+ keys=1 age=`)
			serving(t, client(t, p), "user:1", 9)
		})
	}
}

// CONFIG REWRITE on a full disk: the new file cannot be written, so the
// command answers an error and the config file is left as it was (a
// failed write must not be renamed over it).
func TestConfigRewriteOnAFullDiskKeepsTheFile(t *testing.T) {
	mnt := mountTmpfs(t, 64<<10)
	file := filepath.Join(mnt, "sluice.conf")
	conf := "# sluice's configuration\nslowlog-max-len 64\n"
	if err := os.WriteFile(file, []byte(conf), 0o640); err != nil {
		t.Fatal(err)
	}
	p := startArgv(t, []string{file, "--port", "auto", "--bind", "127.0.0.1", "--dir", t.TempDir(), "--save", "0"})
	rdb := client(t, p)
	ctx := context.Background()
	if err := rdb.ConfigSet(ctx, "slowlog-max-len", "7").Err(); err != nil {
		t.Fatal(err)
	}
	// Fill the file system: every block taken, inodes left (the new
	// file is created, and its write fails).
	f, err := os.Create(filepath.Join(mnt, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	for {
		if _, err := f.Write(chunk[:1]); err != nil {
			break
		}
	}
	f.Close()
	err = rdb.ConfigRewrite(ctx).Err()
	if err == nil || !strings.HasPrefix(err.Error(), "ERR ") {
		t.Fatalf("CONFIG REWRITE on a full disk: %v; want an error", err)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != conf {
		t.Fatalf("the config file after a failed CONFIG REWRITE: %q, %v; want it unchanged: %q", b, err, conf)
	}
	left, _ := filepath.Glob(filepath.Join(mnt, ".sluice.conf.rewrite-*"))
	if len(left) != 0 {
		t.Fatalf("temporary files left behind: %v", left)
	}
	t.Logf("CONFIG REWRITE answered %q", err)
}
