package cluster

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/go-redis/v9"

	"github.com/sluice-rl/sluice/internal/childproc"
	"github.com/sluice-rl/sluice/internal/testutil"
)

// Real processes on 127.0.0.1: the sluice binary built from this tree,
// three nodes, clients on all of them, and a leader that is killed, paused
// or cut off. Every history is checked with porcupine against a counter.

func buildSluice(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("process tests build and run the binary; skipped with -short")
	}
	return testutil.Binary(t)
}

type proc struct {
	t         *testing.T
	bin       string
	id        string
	port      int    // the RESP port: 0 until the first start reports it
	raftIP    string // each node's Raft traffic has its own loopback address
	raftPort  int    // 0 until the first start reports it
	advPort   int    // where peers dial this node's raft port (a proxy, or raftPort); 0: raftPort
	px        *proxy // in front of the Raft port, or nil
	dir       string
	logPath   string
	portsPath string   // the node's --ports-file
	always    []string // flags every start passes (TLS files)
	cmd       *exec.Cmd
	exited    chan struct{}
	expected  atomic.Bool // the harness ended the process (kill)
}

func (p *proc) addr() string { return fmt.Sprintf("127.0.0.1:%d", p.port) }

// args are the flags every start of p has, then extra. The first start
// lets the kernel choose the RESP and Raft ports (--port auto, --raft-bind
// ip:0) and reads them from the ports file; later starts keep them, as a
// restarted member must (its group knows it by them).
func (p *proc) args(extra ...string) []string {
	port := "auto"
	if p.port != 0 {
		port = fmt.Sprint(p.port)
	}
	args := []string{"--port", port, "--node-id", p.id, "--raft-bind", fmt.Sprintf("%s:%d", p.raftIP, p.raftPort),
		"--ports-file", p.portsPath, "--dir", p.dir, "--loglevel", "warning"}
	if p.advPort != 0 {
		args = append(args, "--raft-advertise", fmt.Sprintf("%s:%d", p.raftIP, p.advPort))
	}
	return append(args, append(append([]string(nil), p.always...), extra...)...)
}

// live are the processes started by the running tests, which waitFor
// watches: one that exits unless the harness ended it fails the test at
// once, with its log.
var live struct {
	sync.Mutex
	procs map[*proc]bool
}

func (p *proc) start(extra ...string) {
	p.t.Helper()
	// A restart binds the ports of the first start, which a short-lived
	// client connection of the test may hold as its own local port for a
	// moment (both come from the ephemeral range): try again for a while.
	for attempt := 0; ; attempt++ {
		if p.startOnce(extra, attempt < 20 && (p.port != 0 || p.raftPort != 0)) {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// startOnce starts p and waits until it serves; with retryBusy, a process
// that exits because a port is in use returns false instead of failing.
func (p *proc) startOnce(extra []string, retryBusy bool) bool {
	p.t.Helper()
	args := p.args(extra...)
	if err := os.Remove(p.portsPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		p.t.Fatal(err)
	}
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.t.Fatal(err)
	}
	p.cmd = exec.Command(p.bin, args...)
	childproc.KillWithParent(p.cmd)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.exited = make(chan struct{})
	p.expected.Store(false)
	go func(cmd *exec.Cmd, exited chan struct{}) { cmd.Wait(); logf.Close(); close(exited) }(p.cmd, p.exited)
	live.Lock()
	if live.procs == nil {
		live.procs = map[*proc]bool{}
	}
	live.procs[p] = true
	live.Unlock()
	// Wait for the ports file: written once every listener serves.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if b, err := os.ReadFile(p.portsPath); err == nil {
			p.readPorts(string(b))
			return true
		}
		select {
		case <-p.exited:
			if retryBusy && strings.Contains(p.logTail(), "address already in use") {
				p.expected.Store(true) // not a death checkAlive reports
				p.t.Logf("%s: a port of its first start is in use; starting it again", p.id)
				return false
			}
			p.t.Fatalf("%s exited before it was serving (%v):\n%s", p.id, p.cmd.ProcessState, p.logTail())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s wrote no ports file in 10 s:\n%s", p.id, p.logTail())
		}
	}
}

// readPorts takes the RESP and Raft ports from a ports file's text.
func (p *proc) readPorts(text string) {
	p.t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		name, addr, _ := strings.Cut(line, " ")
		ap, err := netip.ParseAddrPort(addr)
		if err != nil {
			p.t.Fatalf("%s: ports file line %q: %v", p.id, line, err)
		}
		switch name {
		case "resp":
			p.port = int(ap.Port())
		case "raft":
			p.raftPort = int(ap.Port())
		}
	}
	if p.port == 0 || p.raftPort == 0 {
		p.t.Fatalf("%s: the ports file names no RESP or Raft port:\n%s", p.id, text)
	}
	if p.advPort == 0 {
		p.advPort = p.raftPort
	}
	if p.px != nil {
		p.px.setTarget(fmt.Sprintf("%s:%d", p.raftIP, p.raftPort))
	}
}

// checkAlive fails t at once, with the log, if a process it started has
// exited without the harness ending it.
func checkAlive(t *testing.T) {
	t.Helper()
	live.Lock()
	var dead *proc
	for p := range live.procs {
		if p.t != t {
			continue
		}
		select {
		case <-p.exited:
			if !p.expected.Load() {
				dead = p
			}
		default:
		}
	}
	live.Unlock()
	if dead != nil {
		t.Fatalf("%s exited (%v):\n%s", dead.id, dead.cmd.ProcessState, dead.logTail())
	}
}

func (p *proc) signal(s syscall.Signal) { p.cmd.Process.Signal(s) }

func (p *proc) kill() {
	if p.cmd == nil {
		return
	}
	p.expected.Store(true)
	p.cmd.Process.Signal(syscall.SIGCONT)
	p.cmd.Process.Kill()
	<-p.exited
}

func (p *proc) logTail() string {
	b, _ := os.ReadFile(p.logPath)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

func (p *proc) info(field string) string {
	rdb := redis.NewClient(&redis.Options{Addr: p.addr(), Protocol: 2, DialTimeout: 300 * time.Millisecond,
		ReadTimeout: 300 * time.Millisecond, MaxRetries: -1})
	defer rdb.Close()
	text, err := rdb.Info(context.Background(), "replication").Result()
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// startProcGroup starts three nodes: n1 bootstraps, n2 and n3 join through
// it. With proxies, peers reach each node's Raft port through a proxy that
// can cut it off; each node's Raft traffic uses its own loopback address
// (127.0.0.11, .12, .13) so that the proxies can tell who is calling.
func startProcGroup(t *testing.T, withProxies bool) ([]*proc, []*proxy) {
	return startProcGroupWith(t, withProxies, nil)
}

// startProcGroupWith is startProcGroup with flags that each node passes at
// every start (always(p), if not nil).
func startProcGroupWith(t *testing.T, withProxies bool, always func(p *proc) []string) ([]*proc, []*proxy) {
	ps := newProcs(t, 3)
	if always != nil {
		for _, p := range ps {
			p.always = always(p)
		}
	}
	var proxies []*proxy
	if withProxies {
		for _, p := range ps {
			px := startProxy(t, p.raftIP) // its target is the node's Raft port, once started
			p.px, p.advPort = px, px.port
			proxies = append(proxies, px)
		}
	}
	ps[0].start("--bootstrap", "yes")
	waitFor(t, 10*time.Second, func() bool { return ps[0].info("role") == "leader" && ps[0].info("ready") == "true" })
	for _, p := range ps[1:] {
		p.start("--join", ps[0].addr())
	}
	waitFor(t, 15*time.Second, func() bool { return ps[0].info("members") == "3" && ps[2].info("leader_id") != "" })
	return ps, proxies
}

func waitFor(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		checkAlive(t)
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func leaderOf(ps []*proc) *proc {
	for _, p := range ps {
		if p.info("role") == "leader" {
			return p
		}
	}
	return nil
}

// takeOutput is what a client saw: admitted or not with the remaining
// count, nothing applied (CLUSTERDOWN), or an unknown outcome.
type takeOutput struct {
	kind      string // "ok", "none", "unknown"
	allowed   bool
	remaining int
}

// counterModel: the state is the tokens left in a bucket that never refills;
// an operation's input is its cost (0 is a peek, which an RL.TOKEN admits
// without taking anything).
func counterModel(capacity int) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return capacity },
		Step: func(state, input, output any) (bool, any) {
			left, cost, out := state.(int), input.(int), output.(takeOutput)
			switch out.kind {
			case "none":
				return true, left
			case "unknown":
				// An unknown outcome returns at the end of time, so it can be
				// placed last, where taking a token is invisible: counting
				// it as applied is sound whether or not it was.
				if left >= cost {
					return true, left - cost
				}
				return true, left
			}
			if out.allowed {
				return left >= cost && out.remaining == left-cost, left - cost
			}
			return left < cost && out.remaining == left, left
		},
		DescribeOperation: func(input, output any) string {
			o := output.(takeOutput)
			return fmt.Sprintf("take %d -> %s %v %d", input.(int), o.kind, o.allowed, o.remaining)
		},
	}
}

// history records clients' operations on one key.
type history struct {
	mu    sync.Mutex
	start time.Time
	ops   []porcupine.Operation
	acked int // admissions acknowledged to clients
}

func (h *history) record(client int, call time.Time, out takeOutput, ret time.Time) {
	h.take(client, 1, call, out, ret)
}

// take records a call of the given cost.
func (h *history) take(client, cost int, call time.Time, out takeOutput, ret time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := int64(ret.Sub(h.start))
	if out.kind == "unknown" {
		r = math.MaxInt64 // it may take effect at any point from now on
	}
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: cost, Call: int64(call.Sub(h.start)), Output: out, Return: r})
	if out.kind == "ok" && out.allowed && cost > 0 {
		h.acked++
	}
}

// pace spaces each client's calls, so that a 3000-token bucket lasts
// through the faults instead of being empty before they happen.
const pace = 8 * time.Millisecond

func isDialError(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
}

// drive runs clients on every node until stop closes.
func drive(t *testing.T, ps []*proc, perNode int, key string, capacity int, h *history, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	client := 0
	for _, p := range ps {
		for i := 0; i < perNode; i++ {
			wg.Add(1)
			go func(id int, addr string) {
				defer wg.Done()
				rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, PoolSize: 1, MaxRetries: -1,
					DialTimeout: 300 * time.Millisecond, ReadTimeout: 4 * time.Second, WriteTimeout: time.Second})
				defer rdb.Close()
				for {
					select {
					case <-stop:
						return
					default:
					}
					call := time.Now()
					v, err := rdb.Do(context.Background(), "RL.TOKEN", key, "1/h", capacity).Slice()
					ret := time.Now()
					out, ok := takeOutputOf(v, err)
					if !ok {
						t.Errorf("client %d: unexpected error %v", id, err)
						return
					}
					if out.kind != "ok" && (err == nil || !strings.HasPrefix(err.Error(), "UNKNOWN ")) {
						time.Sleep(100 * time.Millisecond) // the node is down: don't spin
					}
					h.record(id, call, out, ret)
					time.Sleep(pace)
				}
			}(client, p.addr())
			client++
		}
	}
	return &wg
}

// takeOutputOf is what an RL.TOKEN reply says happened, for the history:
// a decision; none, for the replies that mean nothing was applied
// (CLUSTERDOWN, MOVED, TRYAGAIN) and a dial that failed; unknown for the
// rest (UNKNOWN, timeouts, broken connections). ok is false for an ERR
// reply, which no client of these tests should get.
func takeOutputOf(v []any, err error) (out takeOutput, ok bool) {
	var re redis.Error
	switch {
	case err == nil && len(v) == 5:
		return takeOutput{kind: "ok", allowed: v[0] == int64(1), remaining: int(v[2].(int64))}, true
	case errors.As(err, &re) && (strings.HasPrefix(err.Error(), "CLUSTERDOWN") || strings.HasPrefix(err.Error(), "MOVED") ||
		strings.HasPrefix(err.Error(), "TRYAGAIN")):
		return takeOutput{kind: "none"}, true
	case isDialError(err):
		return takeOutput{kind: "none"}, true // nothing was sent
	case err != nil && strings.HasPrefix(err.Error(), "ERR"):
		return takeOutput{}, false
	default:
		return takeOutput{kind: "unknown"}, true
	}
}

func checkHistory(t *testing.T, h *history, capacity int) {
	t.Helper()
	if h.acked > capacity {
		t.Fatalf("%d admissions were acknowledged; capacity is %d", h.acked, capacity)
	}
	kinds := map[string]int{}
	for _, op := range h.ops {
		kinds[op.Output.(takeOutput).kind]++
	}
	t.Logf("history: %d operations %v, %d acknowledged admissions", len(h.ops), kinds, h.acked)
	res := porcupine.CheckOperationsTimeout(counterModel(capacity), h.ops, 20*time.Second)
	if res == porcupine.Illegal {
		t.Fatal("the history is not linearizable against a counter")
	}
	if res == porcupine.Unknown {
		t.Log("porcupine timed out: linearizability not decided (acknowledged admissions are within capacity)")
	}
}

// sameState asks every node for the key's state from its own replica
// (READONLY) once they have converged.
func sameState(t *testing.T, ps []*proc, key string, capacity int) {
	t.Helper()
	var got []string
	waitFor(t, 15*time.Second, func() bool {
		got = got[:0]
		for _, p := range ps {
			rdb := redis.NewClient(&redis.Options{Addr: p.addr(), Protocol: 2, PoolSize: 1, MaxRetries: -1,
				OnConnect: func(ctx context.Context, cn *redis.Conn) error { return cn.Process(ctx, redis.NewCmd(ctx, "READONLY")) }})
			v, err := rdb.Do(context.Background(), "RL.TOKEN", key, "1/h", capacity, 0).Slice()
			rdb.Close()
			if err != nil {
				return false
			}
			got = append(got, fmt.Sprint(v[2]))
		}
		return got[0] == got[1] && got[1] == got[2]
	})
	t.Logf("every node reports remaining=%s", got[0])
}

// underLoad drives key from two clients per node, lets fault do its worst
// to the leader once the load runs, and then checks that the history is
// linearizable, that no more than capacity admissions were acknowledged,
// and that every node reports the same state.
func underLoad(t *testing.T, ps []*proc, key string, fault func(ld *proc, others []*proc)) {
	t.Helper()
	const capacity = 3000
	h := &history{start: time.Now()}
	stop := make(chan struct{})
	wg := drive(t, ps, 2, key, capacity, h, stop)
	time.Sleep(time.Second)
	// On a loaded 2-core machine a leader can miss its lease and step down
	// on its own; the group elects another within a few seconds.
	var ld *proc
	waitFor(t, 15*time.Second, func() bool { ld = leaderOf(ps); return ld != nil })
	fault(ld, othersThan(ps, ld))
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	checkHistory(t, h, capacity)
	sameState(t, ps, key, capacity)
}

func othersThan(ps []*proc, me *proc) []*proc {
	var out []*proc
	for _, p := range ps {
		if p != me {
			out = append(out, p)
		}
	}
	return out
}

// waitForNewLeader waits until one of others is a ready leader.
func waitForNewLeader(t *testing.T, others []*proc) {
	t.Helper()
	waitFor(t, 15*time.Second, func() bool { nl := leaderOf(others); return nl != nil && nl.info("ready") == "true" })
}

func TestProcessLeaderKill9(t *testing.T) {
	ps, _ := startProcGroup(t, false)
	underLoad(t, ps, "k", func(ld *proc, others []*proc) { killAndRestart(t, ps, ld, others) })
}

// killAndRestart kill -9s the leader ld, waits for a new ready leader among
// others, restarts ld on its --dir and waits until it has applied what the
// leader had committed.
func killAndRestart(t *testing.T, ps []*proc, ld *proc, others []*proc) {
	t.Helper()
	killedAt := time.Now()
	ld.kill()
	waitForNewLeader(t, others)
	t.Logf("failover after kill -9: a new ready leader in %v", time.Since(killedAt).Round(time.Millisecond))
	time.Sleep(1500 * time.Millisecond)
	restartedAt := time.Now()
	ld.start()
	// Caught up: the restarted node has applied what the leader had
	// committed when it was asked (the indexes keep moving under load).
	waitFor(t, 30*time.Second, func() bool {
		l := leaderOf(ps)
		if l == nil || ld.info("leader_id") == "" {
			return false
		}
		target, _ := strconv.ParseUint(l.info("commit_index"), 10, 64)
		got, _ := strconv.ParseUint(ld.info("applied_index"), 10, 64)
		return got >= target
	})
	t.Logf("restarted node caught up in %v", time.Since(restartedAt).Round(time.Millisecond))
}

func TestProcessPausedLeaderDecidesNothing(t *testing.T) {
	ps, _ := startProcGroup(t, false)
	underLoad(t, ps, "k", func(ld *proc, others []*proc) {
		ld.signal(syscall.SIGSTOP)
		waitForNewLeader(t, others)
		time.Sleep(time.Second)
		ld.signal(syscall.SIGCONT) // it wakes up believing it leads, with clients waiting on it
		waitFor(t, 15*time.Second, func() bool { return ld.info("role") == "follower" })
	})
}

var soak = flag.Duration("soak", 0, "run TestProcessSoak for this long: leader kills and restarts, each cycle's history checked")

// TestProcessSoak repeats the kill -9 scenario on one group until -soak has
// passed, with a fresh key per cycle so that each cycle's history is
// checked on its own. Skipped unless -soak is given:
//
//	go test ./cluster -run TestProcessSoak -soak 10m -timeout 30m
func TestProcessSoak(t *testing.T) {
	if *soak == 0 {
		t.Skip("a long run: go test ./cluster -run TestProcessSoak -soak 10m")
	}
	ps, _ := startProcGroup(t, false)
	end := time.Now().Add(*soak)
	for cycle := 0; time.Now().Before(end); cycle++ {
		underLoad(t, ps, fmt.Sprintf("soak:%d", cycle), func(ld *proc, others []*proc) { killAndRestart(t, ps, ld, others) })
	}
}
