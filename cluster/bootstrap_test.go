package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A node whose --dir was wiped, started again with --bootstrap yes: it must
// not start a second, empty group (every client would get a fresh burst).
// Real processes, as an operator would run them.

// runToExit starts p with args and waits for it to exit (within limit). It
// returns the exit code and what the process wrote.
func (p *proc) runToExit(limit time.Duration, extra ...string) (int, string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	out, err := exec.CommandContext(ctx, p.bin, p.args(extra...)...).CombinedOutput()
	if ctx.Err() != nil {
		p.t.Fatalf("%s did not exit within %v:\n%s", p.id, limit, out)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		p.t.Fatal(err)
	}
	return 0, string(out)
}

// newProcs makes n nodes on 127.0.0.11… without starting them: the
// package's fixture of real processes (startProcGroup starts a group of
// them; newGroup, in group_test.go, runs nodes in this process).
func newProcs(t *testing.T, n int) []*proc {
	bin := buildSluice(t)
	base := t.TempDir()
	var ps []*proc
	for i := 1; i <= n; i++ {
		ip := fmt.Sprintf("127.0.0.%d", 10+i)
		p := &proc{t: t, bin: bin, id: fmt.Sprintf("n%d", i), raftIP: ip,
			dir: filepath.Join(base, fmt.Sprintf("n%d", i)), logPath: filepath.Join(base, fmt.Sprintf("n%d.log", i)),
			portsPath: filepath.Join(base, fmt.Sprintf("n%d.ports", i))}
		ps = append(ps, p)
	}
	t.Cleanup(func() {
		for _, p := range ps {
			p.kill()
		}
		if t.Failed() {
			for _, p := range ps {
				t.Logf("--- %s log:\n%s", p.id, p.logTail())
			}
		}
	})
	return ps
}

func peek(t *testing.T, p *proc, key string, capacity int) int64 {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: p.addr(), Protocol: 2, PoolSize: 1, MaxRetries: -1,
		OnConnect: func(ctx context.Context, cn *redis.Conn) error { return cn.Process(ctx, redis.NewCmd(ctx, "READONLY")) }})
	defer rdb.Close()
	v, err := rdb.Do(context.Background(), "RL.TOKEN", key, "1/h", capacity, 0).Slice()
	if err != nil {
		t.Fatalf("peek through %s: %v", p.id, err)
	}
	return v[2].(int64)
}

func TestProcessWipedNodeDoesNotBootstrapASecondGroup(t *testing.T) {
	ps := newProcs(t, 3)
	n1, n2, n3 := ps[0], ps[1], ps[2]
	// The others first, waiting to be added: n1 bootstraps once both
	// answer as members of no group, and adds them.
	n2.start()
	n3.start()
	boot := []string{"--bootstrap", "yes", "--peers", n2.addr(), n3.addr()}
	n1.start(boot...)
	waitFor(t, 20*time.Second, func() bool { return n1.info("ready") == "true" })
	for _, p := range []*proc{n2, n3} {
		if _, err := n1.do("RAFT.JOIN", p.id, p.raftAddr(), p.addr()); err != nil {
			t.Fatalf("RAFT.JOIN %s: %v", p.id, err)
		}
	}
	waitFor(t, 20*time.Second, func() bool { return n1.info("members") == "3" && n3.info("leader_id") != "" })
	for i := 0; i < 3; i++ {
		if _, err := n1.do("RL.TOKEN", "k", "1/h", 10); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range ps {
		p.kill()
	}
	if err := os.RemoveAll(n1.dir); err != nil {
		t.Fatal(err)
	}

	// The other members are down: nobody can say whether n1 was a member.
	start := time.Now()
	code, out := n1.runToExit(30*time.Second, boot...)
	if code == 0 || !strings.Contains(out, "refusing to bootstrap") || !strings.Contains(out, "did not answer") ||
		!strings.Contains(out, "RAFT.REMOVE n1") {
		t.Fatalf("wiped n1 with --bootstrap yes and its peers down: exit %d, output:\n%s", code, out)
	}
	t.Logf("peers down: refused after %v", time.Since(start).Round(time.Millisecond))

	// The others are back and elect a leader: n1 is in their configuration.
	n2.start()
	n3.start()
	waitFor(t, 20*time.Second, func() bool { nl := leaderOf(ps[1:]); return nl != nil && nl.info("ready") == "true" })
	code, out = n1.runToExit(30*time.Second, boot...)
	if code == 0 || !strings.Contains(out, "is a member of a group") || !strings.Contains(out, "--join") {
		t.Fatalf("wiped n1 with --bootstrap yes and its peers up: exit %d, output:\n%s", code, out)
	}

	// The documented recovery: --join. While n1 is still a member it waits
	// (rejoining as the same voter would forget what it acknowledged)…
	n1.start("--join", n2.addr())
	waitFor(t, 15*time.Second, func() bool { return strings.Contains(n1.logTail(), "is still a member of the group") })
	// The leader still replicates to n1's id; n1's Raft port refuses it.
	waitFor(t, 15*time.Second, func() bool { n, _ := strconv.Atoi(n1.info("raft_refused_connections")); return n > 0 })
	// A refusal makes the filter ask the trusted nodes for their members
	// (at most every askEvery); their list names n1, so it must vouch for
	// no one. Give that time to go wrong before looking.
	time.Sleep(2*askEvery + time.Second)
	if got := n1.info("members"); got != "0" {
		t.Fatalf("n1 took the leader's entries while still a member: INFO members = %s", got)
	}
	// …and joins once RAFT.REMOVE n1 has run, with the group's state.
	waitFor(t, 15*time.Second, func() bool { _, err := n2.do("RAFT.REMOVE", "n1"); return err == nil })
	waitFor(t, 30*time.Second, func() bool {
		l := leaderOf(ps[1:])
		if l == nil || n1.info("members") != "3" {
			return false
		}
		target, _ := strconv.ParseUint(l.info("commit_index"), 10, 64)
		got, _ := strconv.ParseUint(n1.info("applied_index"), 10, 64)
		return got >= target
	})
	if got := peek(t, n1, "k", 10); got != 7 {
		t.Fatalf("after rejoining, n1 reports remaining=%d; want 7 (3 of 10 taken before the wipe)", got)
	}
}

// A single node whose Raft state alone was removed (its --dir kept): the
// marker in --dir says it was a member. --bootstrap force starts anyway.
func TestProcessMarkerAndForce(t *testing.T) {
	ps := newProcs(t, 1)
	n1 := ps[0]
	n1.start("--bootstrap", "yes")
	waitFor(t, 10*time.Second, func() bool { return n1.info("ready") == "true" })
	n1.kill()
	if b, err := os.ReadFile(filepath.Join(n1.dir, markerFile)); err != nil || strings.TrimSpace(string(b)) != "n1" {
		t.Fatalf("marker after bootstrap: %q, %v; want n1", b, err)
	}
	if err := os.RemoveAll(filepath.Join(n1.dir, "raft")); err != nil {
		t.Fatal(err)
	}
	code, out := n1.runToExit(30*time.Second, "--bootstrap", "yes")
	if code == 0 || !strings.Contains(out, "was a member of a group") || !strings.Contains(out, "--bootstrap force") {
		t.Fatalf("--bootstrap yes with the marker and no Raft state: exit %d, output:\n%s", code, out)
	}
	n1.start("--bootstrap", "force")
	waitFor(t, 10*time.Second, func() bool { return n1.info("role") == "leader" && n1.info("ready") == "true" })
}
