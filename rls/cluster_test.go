package rls

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/sluice-rl/sluice/cluster"
	"github.com/sluice-rl/sluice/commands"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/server"
	"github.com/sluice-rl/sluice/store"
)

// A replicated group in one process: raft's in-memory transport and
// stores, and each node's RESP server on 127.0.0.1:0, where followers
// forward to the leader over real sockets. Every node serves gRPC.

type groupNode struct {
	id    string
	node  *cluster.Node
	trans *raft.InmemTransport
	logs  *raft.InmemStore
	resp  string // its RESP address
}

func startGroup(t *testing.T, n int) []*groupNode {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var nodes []*groupNode
	for i := 0; i < n; i++ {
		g := &groupNode{id: fmt.Sprintf("n%d", i+1), logs: raft.NewInmemStore()}
		_, g.trans = raft.NewInmemTransport(raft.ServerAddress("raft-" + g.id))
		nodes = append(nodes, g)
	}
	for _, a := range nodes {
		for _, b := range nodes {
			if a != b {
				a.trans.Connect(b.trans.LocalAddr(), b.trans)
			}
		}
	}
	for _, g := range nodes {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		cfg := cluster.DefaultConfig()
		cfg.ID, cfg.RESPAddr, cfg.Logger, cfg.LeaderWait = g.id, ln.Addr().String(), quiet, 5*time.Second
		cfg.Transport, cfg.Logs, cfg.Stable, cfg.Snapshots = g.trans, g.logs, g.logs, raft.NewInmemSnapshotStore()
		cfg.RaftConfig = func(c *raft.Config) {
			// Timeouts long enough that a loaded 2-core machine does not
			// change leaders mid-test: a new leader's no-op entry would
			// count as one of the call's entries.
			c.HeartbeatTimeout, c.ElectionTimeout = 1*time.Second, 1*time.Second
			c.LeaderLeaseTimeout, c.CommitTimeout = 500*time.Millisecond, 5*time.Millisecond
			c.Logger = hclog.NewNullLogger()
		}
		if len(nodes) > 0 && g == nodes[0] {
			cfg.Bootstrap = cluster.BootstrapForce // the others join it below
		}
		g.resp = ln.Addr().String()
		node, err := cluster.Open(cfg, store.New(4))
		if err != nil {
			t.Fatal(err)
		}
		g.node = node
		clock := commands.NewClock()
		ccfg := commands.DefaultConfig()
		ccfg.Cluster, ccfg.Logger = node, quiet
		h, err := commands.New(ccfg, node, clock)
		if err != nil {
			t.Fatal(err)
		}
		scfg := server.DefaultConfig()
		scfg.Clock, scfg.Logger = clock, quiet
		srv, err := server.New(scfg, h)
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
			node.Close()
		})
	}
	first := leaderOf(t, nodes[:1])
	for _, g := range nodes[1:] {
		if err := first.node.Join(g.id, string(g.trans.LocalAddr()), g.resp, false); err != nil {
			t.Fatal(err)
		}
	}
	return nodes
}

// leaderOf waits for a ready leader.
func leaderOf(t *testing.T, nodes []*groupNode) *groupNode {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, g := range nodes {
			if g.node.Ready() {
				return g
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no ready leader within 10 s")
	return nil
}

// replication returns a field of the node's INFO replication section.
func replication(g *groupNode, field string) int64 {
	for _, kv := range g.node.InfoReplication() {
		if kv[0] == field {
			v, _ := strconv.ParseInt(kv[1], 10, 64)
			return v
		}
	}
	return -1
}

func TestFollowerForwardsAWholeCallAsOneLogEntry(t *testing.T) {
	nodes := startGroup(t, 3)
	leader := leaderOf(t, nodes)
	var followers []*groupNode
	for _, g := range nodes {
		if g != leader {
			followers = append(followers, g)
		}
	}
	rs, err := policy.Load([]string{filepath.Join("testdata", "rules", "group.yaml")}, policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A gRPC server on each follower, deciding through its node.
	serve := func(g *groupNode, cfg Config) *fixture {
		reg := policy.NewRegistry()
		reg.SetRules(rs)
		f := &fixture{t: t, reg: reg, clock: newTestClock(time.Now())}
		f.svc = New(cfg, g.node, reg, commands.NewClock())
		f.start(ServerOptions{})
		return f
	}
	f1, f2 := serve(followers[0], Config{}), serve(followers[1], Config{Batch: BatchCall})

	req := request("group", 0, desc("remote_address", "203.0.113.7"), desc("user", "g"),
		desc("user", "g", "plan", "free"), desc("nomatch", "x"))
	index, entries := replication(leader, "last_log_index"), replication(leader, "log_entries_written")
	check(t, "through follower 1", f1.call(req), ok,
		limited(ok, 5, day, 4), limited(ok, 10, day, 9), limited(ok, 3, day, 2), unlimitedWant(ok, 0))
	// Three descriptors decide; they reached the log as one entry.
	if got := replication(leader, "last_log_index") - index; got != 1 {
		t.Fatalf("the call added %d log entries; want 1", got)
	}
	if got := replication(leader, "log_entries_written") - entries; got != 1 {
		t.Fatalf("the leader wrote %d entries; want 1", got)
	}
	if max := replication(leader, "batch_ops_max"); max < 3 {
		t.Fatalf("batch_ops_max = %d; want the call's 3 decisions in one entry", max)
	}

	// The other follower sees the same counts; as one all-or-nothing group.
	check(t, "through follower 2", f2.call(req), ok,
		limited(ok, 5, day, 3), limited(ok, 10, day, 8), limited(ok, 3, day, 1), unlimitedWant(ok, 0))
	f2.call(req)
	index = replication(leader, "last_log_index")
	check(t, "the free plan refuses the call", f2.call(req), over,
		limited(ok, 5, day, 2), limited(ok, 10, day, 7), limited(over, 3, day, 0), unlimitedWant(ok, 0))
	if got := replication(leader, "last_log_index") - index; got != 1 {
		t.Fatalf("the refused call added %d log entries; want 1", got)
	}
}
