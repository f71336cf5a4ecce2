package clients

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/redis/go-redis/v9"

	"github.com/sluice-rl/sluice/cluster"
	"github.com/sluice-rl/sluice/commands"
	respserver "github.com/sluice-rl/sluice/server"
	"github.com/sluice-rl/sluice/store"
)

// An unknown outcome, produced for real: a two-node replicated group in
// this process whose leader announces a proxy as its RESP address, so that
// the follower's forwards to it pass through the proxy. Armed with a key,
// the proxy relays the first RAFT.FORWARD carrying it, waits for the leader's reply (the
// decision is committed and applied by then) and breaks the connection
// instead of relaying it: the follower answers the client UNKNOWN, the
// outcome unknown. A client that retried by itself would be forwarded
// again, through the proxy, and charged twice.

// unknownGroup is that group.
type unknownGroup struct {
	leaderAddr, followerAddr string                 // the nodes' real RESP addresses
	armed                    atomic.Pointer[string] // the key whose decision's forward breaks
	forwards                 atomic.Int32           // forwards of that key relayed
	broken                   atomic.Int32           // connections broken since armed
}

func newUnknownGroup(t *testing.T) *unknownGroup {
	t.Helper()
	g := &unknownGroup{}
	proxy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	n1, a1, t1 := startNode(t, "n1", proxy.Addr().String(), cluster.BootstrapForce)
	_, a2, t2 := startNode(t, "n2", "", cluster.NoBootstrap)
	t1.Connect(t2.LocalAddr(), t2)
	t2.Connect(t1.LocalAddr(), t1)
	g.leaderAddr, g.followerAddr = a1, a2
	go g.serveProxy(proxy)

	deadline := time.Now().Add(10 * time.Second)
	for !n1.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("n1 was not the ready leader within 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := n1.Join("n2", string(t2.LocalAddr()), a2, false); err != nil {
		t.Fatalf("adding n2: %v", err)
	}
	// A decision through the follower: it knows the leader and its
	// address once one is admitted.
	rdb := redis.NewClient(&redis.Options{Addr: a2, MaxRetries: -1, DisableIndentity: true})
	defer rdb.Close()
	for {
		err := rdb.Do(context.Background(), "RL.TOKEN", "warm", "1/s", 1000).Err()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no decision through the follower within 10 s: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return g
}

// startNode runs a node with in-memory Raft state and transport and a real
// RESP server on a listener of its own; announce is the RESP address it
// registers (its own if empty).
func startNode(t *testing.T, id, announce string, boot cluster.BootstrapMode) (*cluster.Node, string, *raft.InmemTransport) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if announce == "" {
		announce = ln.Addr().String()
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	_, trans := raft.NewInmemTransport(raft.ServerAddress("raft-" + id))
	logs := raft.NewInmemStore()
	cfg := cluster.DefaultConfig()
	cfg.ID, cfg.RESPAddr, cfg.Logger, cfg.LeaderWait, cfg.Bootstrap, cfg.Dir = id, announce, quiet, 2*time.Second, boot, t.TempDir()
	cfg.Transport, cfg.Logs, cfg.Stable, cfg.Snapshots = trans, logs, logs, raft.NewInmemSnapshotStore()
	cfg.RaftConfig = func(c *raft.Config) {
		c.CommitTimeout = 5 * time.Millisecond
		if boot == cluster.NoBootstrap {
			// The joiner never campaigns while the test runs: the leader
			// stays the node behind the proxy.
			c.HeartbeatTimeout, c.ElectionTimeout = time.Minute, time.Minute
		}
	}
	clock := commands.NewClock()
	node, err := cluster.Open(cfg, store.New(4))
	if err != nil {
		t.Fatal(err)
	}
	ccfg := commands.DefaultConfig()
	ccfg.Cluster, ccfg.Logger = node, quiet
	h, err := commands.New(ccfg, node, clock)
	if err != nil {
		t.Fatal(err)
	}
	scfg := respserver.DefaultConfig()
	scfg.Clock, scfg.Logger = clock, quiet
	srv, err := respserver.New(scfg, h)
	if err != nil {
		t.Fatal(err)
	}
	h.Attach(srv)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-served
		trans.DisconnectAll()
		node.Close()
	})
	return node, ln.Addr().String(), trans
}

// arm makes the next forward of key's decision break (see unknownGroup).
// The key, not just the command: a client's own commands on connecting
// (ioredis's INFO counts keys through the leader) are forwarded too.
func (g *unknownGroup) arm(key string) { g.armed.Store(&key) }

// serveProxy relays connections to the leader; see unknownGroup.
func (g *unknownGroup) serveProxy(ln net.Listener) {
	for {
		down, err := ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", g.leaderAddr)
		if err != nil {
			down.Close()
			continue
		}
		var sent atomic.Bool // a forward of the armed key went up
		var once sync.Once
		cut := func() { once.Do(func() { down.Close(); up.Close() }) }
		go func() {
			defer cut()
			buf := make([]byte, 64<<10)
			for {
				n, err := down.Read(buf)
				if key := g.armed.Load(); n > 0 && key != nil && bytes.Contains(buf[:n], []byte("RAFT.FORWARD")) &&
					bytes.Contains(buf[:n], []byte(*key)) {
					g.forwards.Add(1)
					sent.Store(true)
				}
				if n > 0 {
					if _, err := up.Write(buf[:n]); err != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
		go func() {
			defer cut()
			buf := make([]byte, 64<<10)
			for {
				n, err := up.Read(buf)
				if n > 0 && sent.Load() && g.broken.Load() == 0 {
					g.broken.Add(1)
					return // the reply is dropped: the follower's connection breaks
				}
				if n > 0 {
					if _, err := down.Write(buf[:n]); err != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

// remaining peeks at key on the leader: its bucket's remaining tokens.
func (g *unknownGroup) remaining(t *testing.T, key string) int64 {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: g.leaderAddr, MaxRetries: -1, DisableIndentity: true})
	defer rdb.Close()
	v, err := rdb.Do(context.Background(), "RL.TOKEN", key, "1/h", 5, 0).Int64Slice()
	if err != nil || len(v) < 3 {
		t.Fatalf("peek at %s on the leader = %v, %v", key, v, err)
	}
	return v[2]
}

// check asserts what one client's call did: it got the unknown outcome
// (got is the error text it surfaced, or its reply), the follower
// forwarded it once, and the leader charged it once.
func (g *unknownGroup) check(t *testing.T, key, got string) {
	t.Helper()
	const want = "UNKNOWN outcome unknown: the connection to the leader broke after the request was sent"
	if !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "; the decision may or may not have been applied") {
		t.Errorf("the client surfaced %q; want %q…", got, want)
	}
	if n := g.forwards.Load(); n != 1 {
		t.Errorf("the follower forwarded the decision %d times; want 1 (the client retried)", n)
	}
	if n := g.broken.Load(); n != 1 {
		t.Errorf("the proxy broke %d connections; want 1", n)
	}
	if r := g.remaining(t, key); r != 4 {
		t.Errorf("remaining on the leader = %d; want 4 (one charge of 5)", r)
	}
}

// TestGoRedisDefaultsDoNotRetryAnUnknownOutcome: go-redis with its default
// options (MaxRetries 3, which retries TRYAGAIN and CLUSTERDOWN) surfaces
// an unknown outcome at once, charged once.
func TestGoRedisDefaultsDoNotRetryAnUnknownOutcome(t *testing.T) {
	g := newUnknownGroup(t)
	rdb := redis.NewClient(&redis.Options{Addr: g.followerAddr})
	defer rdb.Close()
	g.arm("unknown:go-redis")
	v, err := rdb.Do(context.Background(), "RL.TOKEN", "unknown:go-redis", "1/h", 5).Result()
	got := fmt.Sprintf("reply=%v", v)
	if err != nil {
		got = err.Error()
	}
	g.check(t, "unknown:go-redis", got)
}

// TestNodeClientsDoNotRetryAnUnknownOutcome: ioredis and node-redis with
// their defaults.
func TestNodeClientsDoNotRetryAnUnknownOutcome(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		missing(t, "node")
	}
	if _, err := os.Stat("node_modules"); err != nil {
		missing(t, "compat/clients/node_modules (npm ci)")
	}
	for _, client := range []string{"ioredis5", "ioredis6", "redis4", "redis5", "redis6"} {
		t.Run(client, func(t *testing.T) {
			g := newUnknownGroup(t)
			key := "unknown:" + client
			g.arm(key)
			g.check(t, key, runOnce(t, g.followerAddr, node, "node/unknown.mjs", client, key))
		})
	}
}

// TestRedisPyDoesNotRetryAnUnknownOutcome: redis-py with its defaults.
func TestRedisPyDoesNotRetryAnUnknownOutcome(t *testing.T) {
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import redis").Run(); err != nil {
		missing(t, "python3-redis (Debian's, for /usr/bin/python3)")
	}
	g := newUnknownGroup(t)
	g.arm("unknown:redis-py")
	g.check(t, "unknown:redis-py", runOnce(t, g.followerAddr, py, "python/unknown.py", "unknown:redis-py"))
}

// runOnce runs a script that makes one decision at addr and prints
// "RESULT error=<text>" or "RESULT reply=<reply>"; it returns the text
// after "error=" (or the whole result).
func runOnce(t *testing.T, addr, name string, args ...string) string {
	t.Helper()
	_, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "SLUICE_PORT="+port)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, stderr.String())
	}
	for _, line := range strings.Split(string(out), "\n") {
		if r, ok := strings.CutPrefix(line, "RESULT "); ok {
			return strings.TrimPrefix(r, "error=")
		}
	}
	t.Fatalf("%s %v printed no result\n%s%s", name, args, out, stderr.String())
	return ""
}
