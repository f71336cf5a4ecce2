package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"github.com/sluice-rl/sluice/process"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Process-level tests of the append-only log: real servers killed with
// SIGKILL under load, and restarted on the same directory.

// bucket is the limit the load uses: a token bucket that refills one token
// an hour, so that over a test (well under an hour) the tokens left count
// the decisions exactly.
const (
	bucketRate = "1/h"
	bucketCap  = 1_000_000
)

// killed sends SIGKILL and waits for the process to go.
func (p *proc) killed(t *testing.T) {
	t.Helper()
	p.cmd.Process.Kill()
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatal("still running 10 s after SIGKILL")
	}
}

// load is clients sending pipelines of 16 decisions, each on its own key,
// until their connection breaks. acked counts the admissions a reply
// reported; sent, the decisions sent (acknowledged or not).
type load struct {
	wg           sync.WaitGroup
	mu           sync.Mutex
	acked, sent  []int64
	err          error // a failure other than the connection breaking
	stopped, any chan struct{}
}

func startLoad(p *proc, clients int) *load {
	l := &load{acked: make([]int64, clients), sent: make([]int64, clients), stopped: make(chan struct{}),
		any: make(chan struct{})}
	var once sync.Once
	for w := 0; w < clients; w++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			rdb := redis.NewClient(&redis.Options{Addr: p.addr, Protocol: 2, DisableIndentity: true, MaxRetries: -1})
			defer rdb.Close()
			ctx := context.Background()
			key := "k" + strconv.Itoa(w)
			for {
				select {
				case <-l.stopped:
					return
				default:
				}
				pipe := rdb.Pipeline()
				cmds := make([]*redis.Cmd, 16)
				for i := range cmds {
					cmds[i] = pipe.Do(ctx, "RL.TOKEN", key, bucketRate, bucketCap, 1)
				}
				l.mu.Lock()
				l.sent[w] += int64(len(cmds))
				l.mu.Unlock()
				if _, err := pipe.Exec(ctx); err != nil {
					if !isClosed(err) && !strings.Contains(err.Error(), "connection refused") {
						l.mu.Lock()
						l.err = err
						l.mu.Unlock()
					}
					return
				}
				var n int64
				for _, c := range cmds {
					if v, err := c.Int64Slice(); err == nil && v[0] == 1 {
						n++
					}
				}
				l.mu.Lock()
				l.acked[w] += n
				l.mu.Unlock()
				once.Do(func() { close(l.any) })
			}
		}()
	}
	return l
}

// started waits up to 10 s for a first acknowledged pipeline.
func (l *load) started(t *testing.T) {
	t.Helper()
	select {
	case <-l.any:
	case <-time.After(10 * time.Second):
		l.mu.Lock()
		defer l.mu.Unlock()
		t.Fatalf("no reply in 10 s (%v)", l.err)
	}
}

// wait waits for every client to stop (its connection broke, or stop).
func (l *load) wait() { l.wg.Wait() }

// consumed returns the tokens the server says each load key has lost.
func consumed(t *testing.T, rdb *redis.Client, clients int) []int64 {
	t.Helper()
	out := make([]int64, clients)
	for w := range out {
		v, err := rdb.Do(context.Background(), "RL.TOKEN", "k"+strconv.Itoa(w), bucketRate, bucketCap, 0).Int64Slice()
		if err != nil {
			t.Fatal(err)
		}
		out[w] = bucketCap - v[2]
	}
	return out
}

// checkNothingLost fails unless each key's consumption lies between the
// admissions acknowledged and the decisions sent, and returns the
// consumption.
func checkNothingLost(t *testing.T, round int, l *load, got []int64) {
	t.Helper()
	if l.err != nil {
		t.Errorf("round %d: the load failed: %v", round, l.err)
	}
	for w := range got {
		if got[w] < l.acked[w] || got[w] > l.sent[w] {
			t.Errorf("round %d, k%d: %d tokens consumed after the restart; %d were acknowledged and %d sent "+
				"(an acknowledged decision was lost, or one never sent was counted)", round, w, got[w], l.acked[w], l.sent[w])
		}
	}
}

func TestKillNineUnderLoadLosesNoAcknowledgedDecision(t *testing.T) {
	// always: on disk before the reply. everysec: written before the
	// reply, so a SIGKILL (unlike a power cut) loses nothing either.
	for _, fsync := range []string{"always", "everysec"} {
		t.Run(fsync, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"--dir", dir, "--appendonly", "yes", "--appendfsync", fsync, "--save", "0"}
			const clients = 6
			total := make([]int64, clients) // admissions acknowledged over every round, plus what the server had
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
			for round := 1; round <= 3; round++ {
				p := start(t, args...)
				if round > 1 {
					got := consumed(t, client(t, p), clients)
					copy(total, got)
				}
				l := startLoad(p, clients)
				l.started(t)
				time.Sleep(time.Duration(50+rng.IntN(500)) * time.Millisecond) // a random point of the load
				p.killed(t)
				l.wait()
				for w := range total {
					l.acked[w] += total[w]
					l.sent[w] += total[w]
				}
				q := start(t, args...)
				q.waitLog(t, `append-only log loaded`)
				got := consumed(t, client(t, q), clients)
				checkNothingLost(t, round, l, got)
				t.Logf("round %d: k0 acknowledged %d, sent %d, consumed %d", round, l.acked[0], l.sent[0], got[0])
				q.killed(t)
				if t.Failed() {
					return
				}
			}
		})
	}
}

func TestRewriteDuringLoadLosesNothing(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--dir", dir, "--appendonly", "yes", "--appendfsync", "everysec", "--save", "3600"}
	p := start(t, args...)
	rdb := client(t, p)
	ctx := context.Background()
	const clients = 4
	l := startLoad(p, clients)
	l.started(t)
	for i := 0; i < 5; i++ {
		for {
			err := rdb.Do(ctx, "BGREWRITEAOF").Err()
			if err == nil {
				break
			}
			if !strings.Contains(err.Error(), "already in progress") {
				t.Fatal(err)
			}
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A snapshot save meanwhile is independent of the log.
	if err := rdb.Do(ctx, "BGSAVE").Err(); err != nil {
		t.Fatal(err)
	}
	for infoField(t, rdb, "persistence", "aof_rewrite_in_progress") != "0" ||
		infoField(t, rdb, "persistence", "rdb_bgsave_in_progress") != "0" {
		time.Sleep(5 * time.Millisecond)
	}
	if n, _ := strconv.Atoi(infoField(t, rdb, "persistence", "aof_rewrites")); n < 5 {
		t.Fatalf("aof_rewrites = %d; want 5", n)
	}
	for _, f := range []string{"aof_last_bgrewrite_status", "rdb_last_bgsave_status", "aof_last_write_status"} {
		if s := infoField(t, rdb, "persistence", f); s != "ok" {
			t.Fatalf("%s = %s", f, s)
		}
	}
	p.killed(t)
	l.wait()
	q := start(t, args...)
	checkNothingLost(t, 1, l, consumed(t, client(t, q), clients))
}

// frameEnds returns where each frame of the log at path ends.
func frameEnds(t *testing.T, path string) []int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	off := 32 + int64(binary.LittleEndian.Uint64(b[16:]))
	var ends []int64
	for off < int64(len(b)) {
		off += 8 + int64(binary.LittleEndian.Uint32(b[off:]))
		ends = append(ends, off)
	}
	return ends
}

// filledLog runs a server that takes one token from each of ten keys, and
// kills it; it returns the log's path.
func filledLog(t *testing.T, dir string) string {
	t.Helper()
	p := start(t, "--dir", dir, "--appendonly", "yes", "--appendfsync", "always", "--save", "0")
	rdb := client(t, p)
	for i := 0; i < 10; i++ {
		take(t, rdb, "key"+strconv.Itoa(i), 1)
	}
	p.killed(t)
	return filepath.Join(dir, "appendonly.aof")
}

func TestTornTailIsCutWithALogLine(t *testing.T) {
	dir := t.TempDir()
	path := filledLog(t, dir)
	whole, _ := os.ReadFile(path)
	ends := frameEnds(t, path)
	// The last write cut short: the tenth frame loses its last 5 bytes.
	if err := os.WriteFile(path, whole[:ends[9]-5], 0o644); err != nil {
		t.Fatal(err)
	}
	p := start(t, "--dir", dir, "--appendonly", "yes", "--save", "0")
	text := p.waitLog(t, `cut a torn tail`)
	want := fmt.Sprintf("offset=%d bytes_cut=%d", ends[8], ends[9]-5-ends[8])
	if !strings.Contains(text, want) {
		t.Fatalf("the log line does not say %q:\n%s", want, text)
	}
	rdb := client(t, p)
	for i := 0; i < 9; i++ {
		serving(t, rdb, "key"+strconv.Itoa(i), 9)
	}
	serving(t, rdb, "key9", 10) // its decision was in the torn frame
	take(t, rdb, "key9", 3)
	p.killed(t)
	// The file was cut where the whole frames end, so what came after
	// the cut loads.
	q := start(t, "--dir", dir, "--appendonly", "yes", "--save", "0")
	if strings.Contains(q.logText(), "torn") {
		t.Fatalf("a second start found a torn tail again:\n%s", q.logText())
	}
	serving(t, client(t, q), "key9", 7)
}

func TestCorruptionInTheMiddleRefusesToStartUnlessTold(t *testing.T) {
	dir := t.TempDir()
	path := filledLog(t, dir)
	b, _ := os.ReadFile(path)
	ends := frameEnds(t, path)
	b[ends[3]+20] ^= 0xff // inside the fifth frame
	os.WriteFile(path, b, 0o644)

	out, code, _ := runFor(10*time.Second, "--port", "auto", "--dir", dir, "--appendonly", "yes", "--save", "0")
	want := fmt.Sprintf("%s unreadable at byte %d: frame checksum mismatch", path, ends[3])
	if code != process.ExitFailed || !strings.Contains(string(out), want) || !strings.Contains(string(out), "--aof-load-corrupt yes") {
		t.Fatalf("exit code %d, output:\n%s\nwant exit code %d and %q", code, out, process.ExitFailed, want)
	}

	p := start(t, "--dir", dir, "--appendonly", "yes", "--save", "0", "--aof-load-corrupt", "yes")
	text := p.waitLog(t, `skipped a corrupt range`)
	if w := fmt.Sprintf("offset=%d bytes=%d", ends[3], ends[4]-ends[3]); !strings.Contains(text, w) {
		t.Fatalf("the log line does not say %q:\n%s", w, text)
	}
	p.waitLog(t, `rewritten without its corrupt ranges`)
	rdb := client(t, p)
	serving(t, rdb, "key4", 10) // the skipped frame's decision
	serving(t, rdb, "key5", 9)
	p.killed(t)
	q := start(t, "--dir", dir, "--appendonly", "yes", "--save", "0")
	if strings.Contains(q.logText(), "corrupt") {
		t.Fatalf("the rewritten log still has corruption:\n%s", q.logText())
	}
	serving(t, client(t, q), "key5", 9)
}

func TestTurningTheLogOnStartsFromTheSnapshot(t *testing.T) {
	dir := t.TempDir()
	p := start(t, "--dir", dir)
	take(t, client(t, p), "k", 4)
	p.stop() // saves the snapshot
	q := start(t, "--dir", dir, "--appendonly", "yes")
	q.waitLog(t, `append-only log created from the loaded state`)
	rdb := client(t, q)
	serving(t, rdb, "k", 6)
	take(t, rdb, "k", 1)
	if v := infoField(t, rdb, "persistence", "aof_enabled"); v != "1" {
		t.Fatalf("aof_enabled = %s", v)
	}
	q.killed(t) // the snapshot still says 6; the log says 5
	r := start(t, "--dir", dir, "--appendonly", "yes")
	r.waitLog(t, `append-only log loaded`)
	serving(t, client(t, r), "k", 5)
}

func TestAppendOnlyIsRefusedInARaftGroup(t *testing.T) {
	out, code, _ := runFor(10*time.Second, "--port", "0", "--dir", t.TempDir(), "--appendonly", "yes",
		"--node-id", "n1", "--raft-bind", "127.0.0.1:0")
	if code != process.ExitFailed || !strings.Contains(string(out), "--appendonly is not supported with replication") {
		t.Fatalf("exit code %d, output:\n%s", code, out)
	}
	// A replicated node's state is the Raft log's: BGREWRITEAOF says so.
	p := start(t, "--dir", t.TempDir(), "--node-id", "n1", "--raft-bind", "127.0.0.1:0",
		"--bootstrap", "force")
	err := client(t, p).Do(context.Background(), "BGREWRITEAOF").Err()
	if err == nil || !strings.Contains(err.Error(), "not available in a Raft group") {
		t.Fatalf("BGREWRITEAOF on a replicated node = %v; want the Raft group's error", err)
	}
}

func TestBgrewriteaofWithTheLogOffIsRefused(t *testing.T) {
	p := start(t, "--dir", t.TempDir(), "--save", "0")
	rdb := client(t, p)
	err := rdb.Do(context.Background(), "BGREWRITEAOF").Err()
	if err == nil || !strings.Contains(err.Error(), "--appendonly yes") {
		t.Fatalf("BGREWRITEAOF = %v; want the log-is-off error", err)
	}
	if v := infoField(t, rdb, "persistence", "aof_enabled"); v != "0" {
		t.Fatalf("aof_enabled = %s", v)
	}
	p.waitLog(t, `append-only log off: a crash`)
}

func TestShutdownWithoutSaveKeepsTheLog(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--dir", dir, "--appendonly", "yes", "--appendfsync", "no", "--save", "0"}
	p := start(t, args...)
	rdb := client(t, p)
	take(t, rdb, "k", 3)
	rdb.Do(context.Background(), "SHUTDOWN", "NOSAVE") // no reply: the server exits
	if code := p.exitCode(t); code != process.ExitOK {
		t.Fatalf("exit code %d", code)
	}
	if !strings.Contains(p.logText(), "append-only log synced") {
		t.Fatalf("no sync of the log at exit:\n%s", p.logText())
	}
	if _, err := os.Stat(filepath.Join(dir, "sluice.snap")); err == nil {
		t.Fatal("SHUTDOWN NOSAVE wrote a snapshot")
	}
	q := start(t, args...)
	serving(t, client(t, q), "k", 7)
	q.stop()
	r := start(t, "--dir", dir, "--save", "0") // the log off: its file is left alone, and said so
	r.waitLog(t, `an append-only log is here and is not read`)
}
