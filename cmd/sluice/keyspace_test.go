package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-rl/sluice/internal/childproc"
	"github.com/sluice-rl/sluice/internal/testutil"
)

// End-to-end tests of the keyspace features through the real binary: the
// memory limit, snapshots across a restart, and refusal of a corrupt file.

var binPath string

func TestMain(m *testing.M) {
	var err error
	if binPath, err = testutil.BinaryPath(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

type proc struct {
	cmd  *exec.Cmd
	addr string
	done chan struct{}
	code int // the exit code, once done is closed

	mu  sync.Mutex // guards log
	log strings.Builder
}

// logText returns what the process has logged so far.
func (p *proc) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

var readyRE = regexp.MustCompile(`addr=(127\.0\.0\.1:\d+)`)

// start runs the server on a free loopback port and waits until it is
// ready; it is stopped when the test ends.
func start(t *testing.T, args ...string) *proc {
	t.Helper()
	return startArgv(t, append([]string{"--port", "auto", "--bind", "127.0.0.1"}, args...))
}

// startArgv runs the server with exactly argv, as start does.
func startArgv(t *testing.T, argv []string) *proc {
	t.Helper()
	return startBin(t, binPath, argv)
}

// startBin runs the binary at path (the server's, perhaps by another
// name) with exactly argv, as startArgv does.
func startBin(t *testing.T, path string, argv []string) *proc {
	t.Helper()
	p := &proc{done: make(chan struct{})}
	p.cmd = exec.Command(path, argv...)
	childproc.KillWithParent(p.cmd)
	stderr, _ := p.cmd.StderrPipe()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.log.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if m := readyRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case ready <- m[1]: // the first line with an address, and later ones never block the log
				default:
				}
			}
		}
		p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	t.Cleanup(func() { p.stop() })
	select {
	case p.addr = <-ready:
		return p
	case <-p.done:
		t.Fatalf("server exited before it was ready:\n%s", p.logText())
	case <-time.After(10 * time.Second):
		t.Fatal("server not ready in 10s")
	}
	return nil
}

// stop sends SIGTERM and waits for the process to exit; one that stays up
// (its save failed) gets a second SIGTERM after 10 s, then SIGKILL.
func (p *proc) stop() {
	for _, s := range []os.Signal{syscall.SIGTERM, syscall.SIGTERM, os.Kill} {
		select {
		case <-p.done:
			return
		default:
		}
		p.cmd.Process.Signal(s)
		select {
		case <-p.done:
			return
		case <-time.After(10 * time.Second):
		}
	}
	<-p.done
}

func client(t *testing.T, p *proc) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: p.addr, Protocol: 2, DisableIndentity: true})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func infoField(t *testing.T, rdb *redis.Client, section, name string) string {
	t.Helper()
	info, err := rdb.Info(context.Background(), section).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	t.Fatalf("INFO %s has no %s:\n%s", section, name, info)
	return ""
}

func TestMaxmemoryRefusesNewKeysAndKeepsOldOnes(t *testing.T) {
	p := start(t, "--maxmemory", "2mb", "--shards", "4", "--save", "0", "--dir", t.TempDir())
	rdb := client(t, p)
	ctx := context.Background()
	if v, err := rdb.Do(ctx, "RL.TOKEN", "early", "1/h", 100, 1).Int64Slice(); err != nil || v[2] != 99 {
		t.Fatalf("first key: %v %v", v, err)
	}
	const batch = 1000
	var oom error
	for i := 0; oom == nil && i < 200; i++ {
		pipe := rdb.Pipeline()
		cmds := make([]*redis.Cmd, batch)
		for j := range cmds {
			cmds[j] = pipe.Do(ctx, "RL.TOKEN", fmt.Sprintf("user:%07d", i*batch+j), "1/h", 100, 1)
		}
		pipe.Exec(ctx)
		for _, c := range cmds {
			if err := c.Err(); err != nil {
				oom = err
				break
			}
		}
	}
	if oom == nil || oom.Error() != "OOM command not allowed when used memory > 'maxmemory'." {
		t.Fatalf("filling past 2mb: err = %v; want Redis's OOM error", oom)
	}
	// The key created before the cap still counts down.
	for want := int64(98); want > 95; want-- {
		v, err := rdb.Do(ctx, "RL.TOKEN", "early", "1/h", 100, 1).Int64Slice()
		if err != nil || v[2] != want {
			t.Fatalf("existing key at the cap: %v %v; want remaining %d", v, err, want)
		}
	}
	if used, _ := strconv.Atoi(infoField(t, rdb, "memory", "keyspace_used_memory")); used == 0 || used > 2<<20 {
		t.Fatalf("keyspace_used_memory %d: want some, under 2mb", used)
	}
	if n := infoField(t, rdb, "memory", "oom_refused_keys"); n == "0" {
		t.Fatal("INFO memory reports no refusal")
	}
	if v := infoField(t, rdb, "memory", "maxmemory"); v != "2097152" {
		t.Fatalf("INFO maxmemory = %s", v)
	}
}

func TestSnapshotSurvivesRestartAndCorruptionStopsStart(t *testing.T) {
	dir := t.TempDir()
	p := start(t, "--dir", dir, "--save", "3600", "--enable-debug-command", "yes")
	rdb := client(t, p)
	ctx := context.Background()
	if err := rdb.Do(ctx, "RL.TOKEN", "user:42", "1/h", 10, 7).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := rdb.Do(ctx, "BGSAVE").Text(); err != nil || v != "Background saving started" {
		t.Fatalf("BGSAVE = %q, %v", v, err)
	}
	if v, err := rdb.Do(ctx, "SAVE").Result(); err != nil && err.Error() != "ERR Background save already in progress" || err == nil && v != "OK" {
		t.Fatalf("SAVE = %v, %v", v, err)
	}
	if ts, err := rdb.Do(ctx, "LASTSAVE").Int64(); err != nil || ts < time.Now().Add(-time.Minute).Unix() {
		t.Fatalf("LASTSAVE = %d, %v", ts, err)
	}
	p.stop() // a clean shutdown writes the snapshot
	if !strings.Contains(p.logText(), "snapshot saved") {
		t.Fatalf("no save at shutdown:\n%s", p.logText())
	}

	p = start(t, "--dir", dir, "--save", "0")
	v, err := client(t, p).Do(ctx, "RL.TOKEN", "user:42", "1/h", 10, 0).Int64Slice()
	if err != nil || v[2] != 3 {
		t.Fatalf("after restart: %v %v; want 3 tokens left, not a fresh bucket", v, err)
	}
	p.stop()

	path := filepath.Join(dir, "sluice.snap")
	b, _ := os.ReadFile(path)
	os.WriteFile(path, b[:len(b)-5], 0o600)
	out, err := exec.Command(binPath, "--port", "auto", "--dir", dir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "refusing to start") || !strings.Contains(string(out), "truncated") {
		t.Fatalf("truncated snapshot: err %v, output %s; want a refusal", err, out)
	}
}
