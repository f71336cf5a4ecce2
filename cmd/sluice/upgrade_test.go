package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The rolling restart of docs/deploy.md ("Upgrades") on a three-node group
// of real processes, under load: each follower restarted in turn, then
// leadership handed over with RAFT.TRANSFER and the old leader restarted.
// No acknowledged decision is lost: the key's remaining tokens are exactly
// the burst less the admissions the clients were told of.

// member is one node of the group: its first start's ports are kept by
// every restart, as a restarted member's must be (the group knows it by
// them).
type member struct {
	id, dir, portsFile string
	resp, raft         string // host:port, once started
	p                  *proc
	rdb                *redis.Client
}

func (m *member) start(t *testing.T, extra ...string) {
	t.Helper()
	port, raft := "auto", "127.0.0.1:0"
	if m.resp != "" {
		_, port, _ = net.SplitHostPort(m.resp)
		raft = m.raft
	}
	m.p = startArgv(t, append([]string{"--port", port, "--bind", "127.0.0.1", "--node-id", m.id, "--raft-bind", raft,
		"--dir", m.dir, "--ports-file", m.portsFile}, extra...))
	a := m.p.ports(t, m.portsFile)
	if m.resp != "" && (a["resp"] != m.resp || a["raft"] != m.raft) {
		t.Fatalf("%s restarted on %v; want resp %s raft %s", m.id, a, m.resp, m.raft)
	}
	m.resp, m.raft = a["resp"], a["raft"]
	if m.rdb == nil {
		m.rdb = redis.NewClient(&redis.Options{Addr: m.resp, Protocol: 2, DisableIndentity: true, MaxRetries: -1, PoolSize: 8})
		t.Cleanup(func() { m.rdb.Close() })
	}
}

// replication returns m's INFO replication fields ("" on an error).
func (m *member) replication() map[string]string {
	info, err := m.rdb.Info(context.Background(), "replication").Result()
	out := map[string]string{}
	if err != nil {
		return out
	}
	for _, line := range strings.Split(info, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out
}

// waitFor polls cond for up to 20 s, failing at once if a node exits.
func waitFor(t *testing.T, group []*member, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		for _, m := range group {
			select {
			case <-m.p.done:
				t.Fatalf("%s exited with %d while waiting for %s:\n%s", m.id, m.p.code, what, m.p.logText())
			default:
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s in 20 s", what)
		}
	}
}

// leader returns the member that says it is the ready leader, or nil.
func leader(group []*member) *member {
	for _, m := range group {
		if r := m.replication(); r["role"] == "leader" && r["ready"] == "true" {
			return m
		}
	}
	return nil
}

// caughtUp reports whether m follows a leader and has applied what the
// leader had committed when asked.
func caughtUp(m, lead *member) bool {
	commit, err := strconv.ParseUint(lead.replication()["commit_index"], 10, 64)
	r := m.replication()
	applied, err2 := strconv.ParseUint(r["applied_index"], 10, 64)
	return err == nil && err2 == nil && r["leader_id"] == lead.id && r["members"] == "3" && applied >= commit
}

// nothingApplied: the errors with which a server says it applied nothing
// (a client retries them).
func nothingApplied(err error) bool {
	for _, p := range []string{"TRYAGAIN", "CLUSTERDOWN", "LOADING", "READONLY", "MOVED", "ASK"} {
		if strings.HasPrefix(err.Error(), p) {
			return true
		}
	}
	return false
}

func TestRollingRestartLosesNoAcknowledgedDecision(t *testing.T) {
	const burst = 1_000_000
	const key = "rolling:1"
	var group []*member
	for i := range 3 {
		d := t.TempDir()
		group = append(group, &member{id: fmt.Sprintf("n%d", i+1), dir: d, portsFile: filepath.Join(d, "ports")})
	}
	group[0].start(t, "--bootstrap", "yes")
	waitFor(t, group[:1], "leader n1", func() bool { return leader(group[:1]) == group[0] })
	for _, m := range group[1:] {
		m.start(t, "--join", group[0].resp)
	}
	waitFor(t, group, "three members caught up", func() bool {
		return caughtUp(group[1], group[0]) && caughtUp(group[2], group[0])
	})

	// The load: clients send RL.TOKEN to the members in service, as a
	// Service sends traffic only to ready pods. up changes under mu's
	// write lock, so that once a member is taken out nothing is in
	// flight to it.
	var (
		mu      sync.RWMutex
		up      = map[*member]bool{group[0]: true, group[1]: true, group[2]: true}
		acked   atomic.Int64
		retried atomic.Int64
		failure atomic.Value
		stop    = make(chan struct{})
		wg      sync.WaitGroup
	)
	for c := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				mu.RLock()
				var targets []*member
				for _, m := range group {
					if up[m] {
						targets = append(targets, m)
					}
				}
				m := targets[i%len(targets)]
				v, err := m.rdb.Do(context.Background(), "RL.TOKEN", key, "1/h", burst, 1).Int64Slice()
				mu.RUnlock()
				switch {
				case err == nil && v[0] == 1:
					acked.Add(1)
				case err == nil:
					failure.CompareAndSwap(nil, fmt.Errorf("%s denied with %v tokens left", m.id, v))
				case nothingApplied(err):
					retried.Add(1)
				default:
					failure.CompareAndSwap(nil, fmt.Errorf("%s: %w", m.id, err))
				}
			}
		}()
	}
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}()
	progress := func(what string, live []*member) {
		t.Helper()
		from := acked.Load()
		waitFor(t, live, "decisions "+what, func() bool { return acked.Load() >= from+50 || failure.Load() != nil })
		if err, _ := failure.Load().(error); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	restart := func(m *member) {
		t.Helper()
		mu.Lock()
		delete(up, m)
		mu.Unlock()
		m.p.cmd.Process.Signal(syscall.SIGTERM)
		if code := m.p.exitCode(t); code != 0 {
			t.Fatalf("%s exited with %d on SIGTERM:\n%s", m.id, code, m.p.logText())
		}
		var others []*member
		for _, o := range group {
			if o != m {
				others = append(others, o)
			}
		}
		progress(m.id+" down", others)
		m.start(t)
		var lead *member
		waitFor(t, group, m.id+" caught up", func() bool { lead = leader(group); return lead != nil && caughtUp(m, lead) })
		mu.Lock()
		up[m] = true
		mu.Unlock()
		progress(m.id+" back", group)
	}

	progress("before the restarts", group)
	old := leader(group)
	if old == nil {
		t.Fatal("no leader")
	}
	for _, m := range group {
		if m != old {
			restart(m)
		}
	}
	if err := old.rdb.Do(context.Background(), "RAFT.TRANSFER").Err(); err != nil {
		t.Fatalf("RAFT.TRANSFER on %s: %v", old.id, err)
	}
	waitFor(t, group, "a new leader", func() bool { l := leader(group); return l != nil && l != old })
	restart(old)

	close(stop)
	wg.Wait()
	if err, _ := failure.Load().(error); err != nil {
		t.Fatal(err)
	}
	lead := leader(group)
	v, err := lead.rdb.Do(context.Background(), "RL.TOKEN", key, "1/h", burst, 0).Int64Slice()
	if err != nil {
		t.Fatal(err)
	}
	// The refill (1/h) adds at most one token over the test's run.
	if left := burst - acked.Load(); v[2] != left && v[2] != left+1 {
		t.Fatalf("%d tokens left after %d acknowledged admissions (%d refused with TRYAGAIN and the like); want %d",
			v[2], acked.Load(), retried.Load(), left)
	}
	t.Logf("%d acknowledged admissions, %d answers that applied nothing; leader %s → %s", acked.Load(), retried.Load(), old.id, lead.id)
}
