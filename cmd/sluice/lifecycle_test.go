package main

import (
	"context"
	"fmt"
	"github.com/sluice-rl/sluice/process"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-rl/sluice/internal/childproc"
)

// Process-level tests of start-up and shutdown: what the server says about
// its snapshot, what it does when the final save fails (a directory where
// the file should go, a full disk, a read-only file system), its exit
// codes, and the lock on --dir.

// waitLog waits up to 10 s for the process to log a line matching re and
// returns the whole log.
func (p *proc) waitLog(t *testing.T, re string) string {
	t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(10 * time.Second)
	for {
		text := p.logText()
		if rx.MatchString(text) {
			return text
		}
		select {
		case <-p.done:
			t.Fatalf("exited with %d before logging %q:\n%s", p.code, re, p.logText())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line matching %q in 10 s:\n%s", re, text)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// exitCode waits up to 10 s for the process to exit and returns its code.
func (p *proc) exitCode(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(10 * time.Second):
		t.Fatalf("still running 10 s later:\n%s", p.logText())
		return 0
	}
}

// up fails if the process has exited.
func (p *proc) up(t *testing.T, when string) {
	t.Helper()
	select {
	case <-p.done:
		t.Fatalf("%s: exited with code %d; want it up\n%s", when, p.code, p.logText())
	case <-time.After(100 * time.Millisecond):
	}
}

// serving checks that p answers PING and decides on key: a peek answers
// remaining tokens (of 10) as the test left them.
func serving(t *testing.T, rdb *redis.Client, key string, remaining int64) {
	t.Helper()
	ctx := context.Background()
	if v, err := rdb.Ping(ctx).Result(); err != nil || v != "PONG" {
		t.Fatalf("PING = %q, %v", v, err)
	}
	v, err := rdb.Do(ctx, "RL.TOKEN", key, "1/h", 10, 0).Int64Slice()
	if err != nil || v[2] != remaining {
		t.Fatalf("RL.TOKEN %s peek = %v, %v; want %d remaining", key, v, err, remaining)
	}
}

// blockSnapshot puts a non-empty directory where dir's snapshot file goes,
// so that the save's rename fails, whoever runs the test (root included),
// and returns what removes it.
func blockSnapshot(t *testing.T, dir string) func() {
	t.Helper()
	path := filepath.Join(dir, "sluice.snap")
	if err := os.MkdirAll(filepath.Join(path, "in-the-way"), 0o755); err != nil {
		t.Fatal(err)
	}
	return func() { os.RemoveAll(path) }
}

func take(t *testing.T, rdb *redis.Client, key string, n int) {
	t.Helper()
	if err := rdb.Do(context.Background(), "RL.TOKEN", key, "1/h", 10, n).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestFailedShutdownSaveKeepsServingUntilASecondSignal(t *testing.T) {
	dir := t.TempDir()
	p := start(t, "--dir", dir, "--save", "3600")
	rdb := client(t, p)
	take(t, rdb, "user:1", 4)
	blockSnapshot(t, dir)

	p.cmd.Process.Signal(syscall.SIGTERM)
	log := p.waitLog(t, `saving the snapshot at shutdown failed.*sluice\.snap.*retry_in=1s`)
	if !strings.Contains(log, "sluice.snap: file exists") && !strings.Contains(log, "is a directory") {
		t.Fatalf("the failure's reason is not in the log:\n%s", log)
	}
	p.up(t, "after SIGTERM with a failing save")
	serving(t, rdb, "user:1", 6)
	take(t, rdb, "user:1", 1)
	serving(t, rdb, "user:1", 5)

	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.exitCode(t); code != process.ExitUnsaved {
		t.Fatalf("second SIGTERM: exit code %d; want %d\n%s", code, process.ExitUnsaved, p.logText())
	}
	if !strings.Contains(p.logText(), "exiting without saving the final state") {
		t.Fatalf("no word of the unsaved exit:\n%s", p.logText())
	}
}

func TestFailedShutdownSaveIsRetriedUntilItWorks(t *testing.T) {
	dir := t.TempDir()
	p := start(t, "--dir", dir, "--save", "3600")
	rdb := client(t, p)
	take(t, rdb, "user:1", 4)
	unblock := blockSnapshot(t, dir)

	p.cmd.Process.Signal(syscall.SIGTERM)
	p.waitLog(t, `saving the snapshot at shutdown failed`)
	take(t, rdb, "user:1", 3) // served after the failure: must be in the final snapshot
	unblock()
	if code := p.exitCode(t); code != process.ExitOK {
		t.Fatalf("exit code %d once the save could work; want 0\n%s", code, p.logText())
	}

	p = start(t, "--dir", dir, "--save", "0")
	serving(t, client(t, p), "user:1", 3)
}

func TestShutdownCommandWithAFailingSave(t *testing.T) {
	dir := t.TempDir()
	p := start(t, "--dir", dir, "--save", "3600")
	rdb := client(t, p)
	ctx := context.Background()
	take(t, rdb, "user:1", 2)
	blockSnapshot(t, dir)

	if err := rdb.Do(ctx, "SHUTDOWN").Err(); err == nil || err.Error() != "ERR Errors trying to SHUTDOWN. Check logs." {
		t.Fatalf("SHUTDOWN with a failing save: %v; want Redis's error", err)
	}
	p.up(t, "after a failed SHUTDOWN")
	serving(t, rdb, "user:1", 8)
	if v, err := rdb.Do(ctx, "SHUTDOWN", "ABORT").Text(); err != nil || v != "OK" {
		t.Fatalf("SHUTDOWN ABORT = %q, %v", v, err)
	}
	if err := rdb.Do(ctx, "SHUTDOWN", "ABORT").Err(); err == nil || err.Error() != "ERR No shutdown in progress." {
		t.Fatalf("second SHUTDOWN ABORT: %v", err)
	}
	time.Sleep(1500 * time.Millisecond) // past the first retry's time: aborted, it does not run
	p.up(t, "after SHUTDOWN ABORT")
	if n := strings.Count(p.logText(), "saving the snapshot at shutdown failed"); n != 1 {
		t.Fatalf("%d failed saves logged after ABORT; want 1 (no retry)\n%s", n, p.logText())
	}
	once := redis.NewClient(&redis.Options{Addr: p.addr, Protocol: 2, DisableIndentity: true, MaxRetries: -1})
	defer once.Close()
	err := once.Do(ctx, "SHUTDOWN", "NOSAVE").Err()
	if err == nil || !isClosed(err) {
		t.Fatalf("SHUTDOWN NOSAVE: %v; want the connection closed with no reply", err)
	}
	if code := p.exitCode(t); code != process.ExitUnsaved {
		t.Fatalf("SHUTDOWN NOSAVE after a failed save: exit code %d; want %d", code, process.ExitUnsaved)
	}
}

func isClosed(err error) bool {
	s := err.Error()
	return strings.Contains(s, "EOF") || strings.Contains(s, "connection reset") || strings.Contains(s, "closed")
}

func TestShutdownCommandSavesAndExitsZero(t *testing.T) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli is not installed (apt-get install redis-tools)")
	}
	dir := t.TempDir()
	p := start(t, "--dir", dir, "--save", "0")
	take(t, client(t, p), "user:1", 7)
	// NOSAVE with saves off: nothing written, exit 0.
	out, err := exec.Command(cli, "-p", portOf(p), "SHUTDOWN", "NOSAVE").CombinedOutput()
	if err != nil || len(out) != 0 {
		t.Fatalf("redis-cli SHUTDOWN NOSAVE: %v, %q; want no output", err, out)
	}
	if code := p.exitCode(t); code != process.ExitOK {
		t.Fatalf("exit code %d; want 0", code)
	}
	if _, err := os.Stat(filepath.Join(dir, "sluice.snap")); !os.IsNotExist(err) {
		t.Fatalf("SHUTDOWN NOSAVE wrote a snapshot (%v)", err)
	}

	// SAVE forces the snapshot with saves off.
	p = start(t, "--dir", dir, "--save", "0")
	take(t, client(t, p), "user:1", 7)
	out, err = exec.Command(cli, "-p", portOf(p), "SHUTDOWN", "SAVE").CombinedOutput()
	if err != nil || len(out) != 0 {
		t.Fatalf("redis-cli SHUTDOWN SAVE: %v, %q; want no output", err, out)
	}
	if code := p.exitCode(t); code != process.ExitOK {
		t.Fatalf("exit code %d; want 0", code)
	}
	p = start(t, "--dir", dir, "--save", "0")
	serving(t, client(t, p), "user:1", 3)
}

func portOf(p *proc) string { return p.addr[strings.LastIndexByte(p.addr, ':')+1:] }

// ports waits up to 10 s for the process's --ports-file at path (failing
// at once if the process exits first) and returns its addresses by name.
func (p *proc) ports(t *testing.T, path string) map[string]string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil {
			out := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				if name, addr, ok := strings.Cut(line, " "); ok {
					out[name] = addr
				}
			}
			return out
		}
		select {
		case <-p.done:
			t.Fatalf("exited with %d before writing %s:\n%s", p.code, path, p.logText())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ports file %s in 10 s:\n%s", path, p.logText())
		}
	}
}

// A group on ports the kernel chooses: --port auto and --raft-bind
// 127.0.0.1:0. Each node reports its bound addresses in its ports file,
// advertises them to the group, and a second node joins through the
// first's reported RESP address.
func TestAutoPortsAreReportedAndAdvertised(t *testing.T) {
	var nodes []*proc
	var addrs []map[string]string
	for i, extra := range [][]string{{"--bootstrap", "yes", "--metrics-bind", "127.0.0.1:0", "--grpc-bind", "127.0.0.1:0"}, {"--join", ""}} {
		dir := t.TempDir()
		file := filepath.Join(dir, "ports")
		if extra[0] == "--join" {
			extra[1] = addrs[0]["resp"]
		}
		p := start(t, append([]string{"--dir", dir, "--node-id", fmt.Sprintf("n%d", i+1), "--raft-bind", "127.0.0.1:0",
			"--ports-file", file}, extra...)...)
		a := p.ports(t, file)
		if a["resp"] != p.addr {
			t.Fatalf("n%d: ports file resp %q; it said it was ready on %q", i+1, a["resp"], p.addr)
		}
		for _, name := range []string{"resp", "raft"} {
			if _, port, _ := net.SplitHostPort(a[name]); port == "" || port == "0" {
				t.Fatalf("n%d: ports file %v: no bound %s port", i+1, a, name)
			}
		}
		nodes, addrs = append(nodes, p), append(addrs, a)
	}
	for _, name := range []string{"grpc", "metrics"} {
		if c, err := net.Dial("tcp", addrs[0][name]); err != nil {
			t.Fatalf("the %s address in the ports file, %s: %v", name, addrs[0][name], err)
		} else {
			c.Close()
		}
	}
	rdb := client(t, nodes[0])
	if got := configGet(t, rdb, "port"); "127.0.0.1:"+got != addrs[0]["resp"] {
		t.Fatalf("CONFIG GET port = %s; the node listens on %s", got, addrs[0]["resp"])
	}
	want := fmt.Sprintf("n1 %s %s\nn2 %s %s", addrs[0]["raft"], addrs[0]["resp"], addrs[1]["raft"], addrs[1]["resp"])
	var got string
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		nodes[1].up(t, "while joining")
		if v, err := rdb.Do(context.Background(), "RAFT.MEMBERS").Slice(); err == nil {
			var lines []string
			for _, m := range v {
				f := map[string]string{}
				kv := m.([]any)
				for i := 0; i+1 < len(kv); i += 2 {
					f[fmt.Sprint(kv[i])] = fmt.Sprint(kv[i+1])
				}
				lines = append(lines, f["id"]+" "+f["raft_addr"]+" "+f["resp_addr"])
			}
			sort.Strings(lines)
			if got = strings.Join(lines, "\n"); got == want {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("RAFT.MEMBERS:\n%s\nwant\n%s", got, want)
		}
	}
}

func TestStartupSaysWhatSnapshotItFound(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sluice.snap")
	p := start(t, "--dir", dir, "--save", "3600")
	p.waitLog(t, regexp.QuoteMeta(`msg="no snapshot at `+path+`, starting empty"`))
	rdb := client(t, p)
	for i := 0; i < 5; i++ {
		take(t, rdb, fmt.Sprintf("user:%d", i), 1)
	}
	p.stop()

	p = start(t, "--dir", dir, "--save", "0")
	p.waitLog(t, regexp.QuoteMeta(`msg="snapshot loaded" path=`+path+` keys=5 age=`)+`\d+s saved_at=`)
	p.stop()

	// A symbolic link to a file that does not exist (a volume not mounted).
	os.Remove(path)
	target := filepath.Join(dir, "volume", "sluice.snap")
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	p = start(t, "--dir", dir, "--save", "0")
	p.waitLog(t, `level=WARN msg="no snapshot at `+regexp.QuoteMeta(path)+`, starting empty".*`+regexp.QuoteMeta(target))
}

func TestStaleTemporaryFilesAreRemovedAtStart(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "sluice.snap.tmp-3141592653") // what kill -9 during BGSAVE leaves
	if err := os.WriteFile(stale, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	kept := []string{filepath.Join(dir, "other.snap.tmp-1"), filepath.Join(dir, "sluice.snap.tmp-mine")}
	for _, k := range kept {
		os.WriteFile(k, []byte("x"), 0o644)
	}
	p := start(t, "--dir", dir, "--save", "0")
	p.waitLog(t, `removed the temporary file of a save that did not finish" path=`+regexp.QuoteMeta(stale)+` bytes=1048576`)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("%s is still there (%v)", stale, err)
	}
	for _, k := range kept {
		if _, err := os.Stat(k); err != nil {
			t.Fatalf("%s, not a temporary file of this snapshot, was removed: %v", k, err)
		}
	}
}

func TestSecondServerOnTheSameDirIsRefused(t *testing.T) {
	dir := t.TempDir()
	p := start(t, "--dir", dir, "--save", "3600")
	pid := p.cmd.Process.Pid
	want := fmt.Sprintf("refusing to start: --dir %s is in use by another sluice process (pid %d holds %s)",
		dir, pid, filepath.Join(dir, "sluice.lock"))
	for _, args := range [][]string{
		{"--dir", dir},
		{"--dir", dir, "--node-id", "n2", "--raft-bind", "127.0.0.1:0", "--bootstrap", "yes"},
	} {
		out, code, err := runFor(5*time.Second, append([]string{"--port", "auto", "--bind", "127.0.0.1"}, args...)...)
		if code != process.ExitFailed || !strings.Contains(string(out), want) {
			t.Fatalf("second server %v: %v\n%s\nwant exit %d and %q", args, err, out, process.ExitFailed, want)
		}
	}
	p.stop()

	// A replicated node holds its --dir too.
	raftDir := t.TempDir()
	n := start(t, "--dir", raftDir, "--node-id", "n1", "--raft-bind", "127.0.0.1:0",
		"--bootstrap", "yes")
	out, _, err := runFor(5*time.Second, "--port", "auto", "--bind", "127.0.0.1", "--dir", raftDir)
	if err == nil || !strings.Contains(string(out), "--dir "+raftDir+" is in use by another sluice process") {
		t.Fatalf("a single node on a replicated node's --dir: %v\n%s", err, out)
	}
	n.stop()
}

// runFor runs the server with args for at most d (a server that starts
// is killed then) and returns its output and exit code.
func runFor(d time.Duration, args ...string) ([]byte, int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, args...)
	childproc.KillWithParent(cmd)
	out, err := cmd.CombinedOutput()
	return out, cmd.ProcessState.ExitCode(), err
}

func TestNonLoopbackBindWithoutPasswordWarns(t *testing.T) {
	// The tests listen on loopback only: 192.0.2.1 (TEST-NET-1) is an
	// address no machine has, so the listen fails after the warning.
	const exposed = "192.0.2.1"
	for _, tc := range []struct {
		args []string
		want string // "" for no warning
	}{
		{[]string{"--bind", exposed}, `level=WARN msg="listening on 192.0.2.1 with no password: anyone who can reach this port can reset every limit`},
		{[]string{"--bind", "127.0.0.1", exposed, "--enable-debug-command", "yes"}, `level=WARN msg="DANGER: listening on 192.0.2.1 with no password and --enable-debug-command yes`},
		{[]string{"--bind", exposed, "--requirepass", "s3cret"}, ""},
	} {
		out, _, _ := runFor(5*time.Second, append([]string{"--port", "auto", "--save", "0", "--dir", t.TempDir()}, tc.args...)...)
		got := strings.Contains(string(out), "with no password")
		if tc.want == "" && got || tc.want != "" && !strings.Contains(string(out), tc.want) {
			t.Fatalf("%v:\n%s\nwant %q", tc.args, out, tc.want)
		}
		if tc.want != "" && !strings.Contains(string(out), "--requirepass") {
			t.Fatalf("%v: the warning does not say how to fix it:\n%s", tc.args, out)
		}
	}
	// Loopback only: no warning.
	p := start(t, "--dir", t.TempDir(), "--save", "0")
	p.stop()
	if strings.Contains(p.logText(), "with no password") {
		t.Fatalf("a warning on loopback:\n%s", p.logText())
	}
}
