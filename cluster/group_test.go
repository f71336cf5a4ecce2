package cluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/redis/go-redis/v9"
	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/commands"
	"github.com/sluice-rl/sluice/server"
	"github.com/sluice-rl/sluice/store"
)

// An in-process group: real RESP servers on 127.0.0.1:0 (forwarding goes
// over real sockets) and raft's in-memory transport and stores, so that
// nodes can be stopped, cut off and restarted with their state.

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type member struct {
	id     string
	node   *Node
	srv    *server.Server
	clock  *commands.Clock
	addr   string
	trans  *raft.InmemTransport
	logs   *raft.InmemStore
	snaps  *raft.InmemSnapshotStore
	served chan error
	sweeps chan struct{} // closed to stop the member's sweep loop
}

type group struct {
	t       *testing.T
	members []*member
	acl     bool // the members replicate their ACL users through the log
	// loops, if set, is the members' event loops (else 2); setup, if set,
	// adjusts each member's configurations before it opens.
	loops int
	setup func(m *member, cfg *Config, ccfg *commands.Config)
}

func fastRaft(c *raft.Config) {
	c.HeartbeatTimeout = 150 * time.Millisecond
	c.ElectionTimeout = 150 * time.Millisecond
	c.LeaderLeaseTimeout = 100 * time.Millisecond
	c.CommitTimeout = 5 * time.Millisecond
	c.SnapshotThreshold = 1 << 30 // snapshots only when a test asks
}

func newGroup(t *testing.T, n int) *group {
	t.Helper()
	return newGroupOf(t, &group{t: t}, n)
}

// newACLGroup is newGroup whose members replicate their ACL users.
func newACLGroup(t *testing.T, n int) *group {
	t.Helper()
	return newGroupOf(t, &group{t: t, acl: true}, n)
}

func newGroupOf(t *testing.T, g *group, n int) *group {
	t.Helper()
	for i := 0; i < n; i++ {
		m := &member{id: fmt.Sprintf("n%d", i+1), logs: raft.NewInmemStore(), snaps: raft.NewInmemSnapshotStore()}
		m.clock = commands.NewClock()
		g.members = append(g.members, m)
	}
	for _, m := range g.members {
		g.start(m)
	}
	var servers []raft.Server
	for _, m := range g.members {
		servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(m.id), Address: m.trans.LocalAddr()})
	}
	if err := g.members[0].node.raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, m := range g.members {
			g.stop(m)
		}
	})
	g.leader()
	return g
}

// start opens m's node on its (kept) log and snapshot stores with a fresh
// store and a fresh transport connected to the others.
func (g *group) start(m *member) {
	g.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		g.t.Fatal(err)
	}
	m.addr = ln.Addr().String()
	_, m.trans = raft.NewInmemTransport(raft.ServerAddress("raft-" + m.id))
	for _, o := range g.members {
		if o != m && o.trans != nil && o.node != nil {
			m.trans.Connect(o.trans.LocalAddr(), o.trans)
			o.trans.Connect(m.trans.LocalAddr(), m.trans)
		}
	}
	cfg := DefaultConfig()
	cfg.ID, cfg.RESPAddr, cfg.Logger, cfg.LeaderWait = m.id, m.addr, quiet, 2*time.Second
	cfg.Transport, cfg.Logs, cfg.Stable, cfg.Snapshots, cfg.RaftConfig = m.trans, m.logs, m.logs, m.snaps, fastRaft
	ccfg := commands.DefaultConfig()
	if g.acl {
		if ccfg.Users, err = commands.NewUsers(ccfg); err != nil {
			g.t.Fatal(err)
		}
		cfg.ACL = ccfg.Users
	}
	if g.setup != nil {
		g.setup(m, &cfg, &ccfg)
	}
	node, err := Open(cfg, store.New(4))
	if err != nil {
		g.t.Fatal(err)
	}
	m.node = node
	ccfg.Cluster, ccfg.Debug, ccfg.Logger = node, commands.DebugYes, quiet
	h, err := commands.New(ccfg, node, m.clock)
	if err != nil {
		g.t.Fatal(err)
	}
	scfg := server.DefaultConfig()
	scfg.EventLoops, scfg.Clock, scfg.Logger = 2, m.clock, quiet
	if g.loops != 0 {
		scfg.EventLoops = g.loops
	}
	if m.srv, err = server.New(scfg, h); err != nil {
		g.t.Fatal(err)
	}
	h.Attach(m.srv)
	m.sweeps = make(chan struct{})
	go h.Sweep(m.sweeps)
	m.served = make(chan error, 1)
	go func() { m.served <- m.srv.Serve(ln) }()
}

// stop shuts m down: its clients, its node and its transport.
func (g *group) stop(m *member) {
	if m.node == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m.srv.Shutdown(ctx)
	<-m.served
	close(m.sweeps)
	for _, o := range g.members {
		if o.trans != nil {
			o.trans.Disconnect(m.trans.LocalAddr())
		}
	}
	m.trans.DisconnectAll()
	m.node.Close()
	m.node = nil
}

// leader waits for a ready leader among the running members.
func (g *group) leader() *member {
	g.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, m := range g.members {
			if m.node != nil && m.node.Ready() {
				return m
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	g.t.Fatal("no ready leader within 10s")
	return nil
}

func (m *member) client(t *testing.T) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: m.addr, Protocol: 2, PoolSize: 4, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// take runs RL.TOKEN key 1/h capacity through m and reports whether it was
// admitted; err is an UNKNOWN/CLUSTERDOWN reply.
func take(rdb *redis.Client, key string, capacity int) (bool, error) {
	v, err := rdb.Do(context.Background(), "RL.TOKEN", key, "1/h", capacity).Slice()
	if err != nil {
		return false, err
	}
	return v[0] == int64(1), nil
}

// converged waits until every running member has applied the leader's last
// index, then returns their FSM snapshots.
func (g *group) converged() map[string][]byte {
	g.t.Helper()
	ld := g.leader()
	// The leader records its own address again: an entry every FSM carries
	// out, changing nothing. The wait is on the FSMs' own applied index, not
	// raft's AppliedIndex, which moves when entries are handed to the FSM's
	// goroutine, before they are applied (a restarted replica reported as
	// caught up while its FSM was still empty, 1 run in about 50 under
	// -race); and not after a barrier, which no FSM applies.
	if _, err := ld.node.batcher.submit(0, []op{{code: opMember, id: ld.id, addr: ld.addr}}); err != nil {
		g.t.Fatal(err)
	}
	want := ld.node.fsm.AppliedIndex()
	deadline := time.Now().Add(10 * time.Second)
	for _, m := range g.members {
		for m.node != nil && m.node.fsm.AppliedIndex() < want {
			if time.Now().After(deadline) {
				g.t.Fatalf("%s's FSM applied %d; the leader's applied %d", m.id, m.node.fsm.AppliedIndex(), want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	snaps := map[string][]byte{}
	for _, m := range g.members {
		if m.node == nil {
			continue
		}
		s, err := m.node.fsm.Snapshot()
		if err != nil {
			g.t.Fatal(err)
		}
		data, err := s.(*fsmSnapshot).bytes()
		if err != nil {
			g.t.Fatal(err)
		}
		snaps[m.id] = data
	}
	return snaps
}

func (g *group) assertSameState() {
	g.t.Helper()
	var ref []byte
	var refID string
	for id, b := range g.converged() {
		if ref == nil {
			ref, refID = b, id
			continue
		}
		if !bytes.Equal(ref, b) {
			g.t.Fatalf("snapshots differ: %s has %d bytes, %s has %d", refID, len(ref), id, len(b))
		}
	}
}

func TestEveryNodeServesAndAdmitsExactlyCapacity(t *testing.T) {
	g := newGroup(t, 3)
	const capacity = 90
	var mu sync.Mutex
	admitted := 0
	var wg sync.WaitGroup
	for _, m := range g.members {
		rdb := m.client(t)
		for w := 0; w < 3; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 20; i++ {
					ok, err := take(rdb, "k", capacity)
					if err != nil {
						t.Error(err)
						return
					}
					if ok {
						mu.Lock()
						admitted++
						mu.Unlock()
					}
				}
			}()
		}
	}
	wg.Wait()
	if admitted != capacity {
		t.Fatalf("3 nodes × 3 clients × 20 calls admitted %d; want exactly %d", admitted, capacity)
	}
	g.assertSameState()
	// Followers' key reads go through the leader too.
	for _, m := range g.members {
		if n := m.client(t).Exists(context.Background(), "k").Val(); n != 1 {
			t.Fatalf("EXISTS k on %s = %d; want 1", m.id, n)
		}
	}
}

func TestLeaderLossKeepsTheCount(t *testing.T) {
	g := newGroup(t, 3)
	const capacity = 50
	ld := g.leader()
	var follower *member
	for _, m := range g.members {
		if m != ld {
			follower = m
			break
		}
	}
	rdb := follower.client(t)
	admitted := 0
	for i := 0; i < 30; i++ {
		if ok, err := take(rdb, "k", capacity); err != nil {
			t.Fatal(err)
		} else if ok {
			admitted++
		}
	}
	g.stop(ld)
	unknown := 0
	for i := 0; i < 40; i++ {
		ok, err := take(rdb, "k", capacity)
		switch {
		case err != nil:
			unknown++ // CLUSTERDOWN or UNKNOWN while the group elects; never an admission
		case ok:
			admitted++
		}
	}
	if admitted > capacity {
		t.Fatalf("admitted %d across a leader loss; capacity is %d", admitted, capacity)
	}
	if admitted < capacity-unknown {
		t.Fatalf("admitted %d with %d unknown outcomes; the new leader lost admissions (capacity %d)", admitted, unknown, capacity)
	}
	nl := g.leader()
	if nl == ld {
		t.Fatal("the stopped leader is still the leader")
	}
	// The stopped node comes back with its log and catches up.
	g.start(ld)
	g.assertSameState()
}

func TestSnapshotAndRestart(t *testing.T) {
	g := newGroup(t, 3)
	rdb := g.leader().client(t)
	for i := 0; i < 200; i++ {
		if _, err := take(rdb, fmt.Sprintf("user:%d", i%50), 10); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range g.members {
		if err := m.client(t).Do(context.Background(), "RAFT.SNAPSHOT").Err(); err != nil {
			t.Fatalf("RAFT.SNAPSHOT on %s: %v", m.id, err)
		}
	}
	before := g.converged()
	// Restart a follower: it restores from its snapshot, not a fresh burst.
	var f *member
	for _, m := range g.members {
		if !m.node.Ready() {
			f = m
			break
		}
	}
	g.stop(f)
	g.start(f)
	after := g.converged()
	if !bytes.Equal(before[f.id], after[f.id]) {
		t.Fatalf("%s after restart differs from before (%d vs %d bytes)", f.id, len(after[f.id]), len(before[f.id]))
	}
	if v, _ := f.client(t).Do(context.Background(), "RL.TOKEN", "user:7", "1/h", 10, 0).Slice(); v[2] != int64(6) {
		t.Fatalf("after restart, user:7 remaining = %v; want 6", v)
	}
}

func TestClockSkewNeverMovesTimeBack(t *testing.T) {
	g := newGroup(t, 3)
	ld := g.leader()
	base := time.Now().UnixNano()
	for _, m := range g.members {
		if m == ld {
			m.clock.Set(base)
		} else {
			m.clock.Set(base - int64(time.Hour)) // the others are an hour behind
		}
	}
	rdb := ld.client(t)
	// 10/s, capacity 10: drain it at the leader's time.
	for i := 0; i < 10; i++ {
		if ok, err := take10(rdb); err != nil || !ok {
			t.Fatalf("take %d: %v %v", i, ok, err)
		}
	}
	if err := rdb.Do(context.Background(), "RAFT.TRANSFER").Err(); err != nil {
		t.Fatal(err)
	}
	nl := g.leader()
	for nl == ld {
		time.Sleep(10 * time.Millisecond)
		nl = g.leader()
	}
	// The new leader's clock is an hour behind: applied time stays at base,
	// so the bucket is still empty rather than an hour "in the future".
	v, err := nl.client(t).Do(context.Background(), "RL.TOKEN", "k10", "10/s", 10).Slice()
	if err != nil {
		t.Fatal(err)
	}
	if v[0] != int64(0) || v[3] != int64(100) {
		t.Fatalf("after a failover to a node an hour behind: %v; want denied with retry 100 ms", v)
	}
	if at := nl.node.fsm.AppliedTime(); at < base {
		t.Fatalf("applied time went back by %v", time.Duration(base-at))
	}
}

func take10(rdb *redis.Client) (bool, error) {
	v, err := rdb.Do(context.Background(), "RL.TOKEN", "k10", "10/s", 10).Slice()
	if err != nil {
		return false, err
	}
	return v[0] == int64(1), nil
}

func TestReadonlyPeeksLocally(t *testing.T) {
	g := newGroup(t, 3)
	ld := g.leader()
	take(ld.client(t), "k", 5)
	g.converged()
	var f *member
	for _, m := range g.members {
		if m != ld {
			f = m
		}
	}
	ctx := context.Background()
	conn := f.client(t).Conn()
	defer conn.Close()
	if err := connDo(ctx, conn, "READONLY").Err(); err != nil {
		t.Fatal(err)
	}
	v, err := connDo(ctx, conn, "RL.TOKEN", "k", "1/h", 5, 0).Slice()
	if err != nil || v[2] != int64(4) {
		t.Fatalf("READONLY peek on a follower = %v, %v; want remaining 4", v, err)
	}
	// A write on a READONLY connection still goes through the leader.
	if v, err := connDo(ctx, conn, "RL.TOKEN", "k", "1/h", 5).Slice(); err != nil || v[2] != int64(3) {
		t.Fatalf("write on a READONLY connection = %v, %v", v, err)
	}
	info := f.client(t).Info(ctx, "replication").Val()
	for _, field := range []string{"role:follower", "leader_id:" + ld.id, "members:3", "commit_index:", "applied_index:", "last_contact_ms:"} {
		if !bytes.Contains([]byte(info), []byte(field)) {
			t.Fatalf("INFO replication lacks %q:\n%s", field, info)
		}
	}
	// A replicated node serves its clients from the event loops it is
	// configured with: its decisions wait for Raft without blocking them.
	if srv := f.client(t).Info(ctx, "server").Val(); !strings.Contains(srv, "event_loops:2\r\n") {
		t.Fatalf("INFO server of a replicated node with two event loops does not say event_loops:2:\n%s", srv)
	}
}

// connDo runs a command on one dedicated connection (READONLY is a
// connection's mode).
func connDo(ctx context.Context, conn *redis.Conn, args ...any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, args...)
	conn.Process(ctx, cmd)
	return cmd
}

// TestAllIsAtomicThroughTheLog: RL.ALL from clients on every node, whose
// groups the batcher packs side by side into shared entries, stays all or
// nothing: the two buckets always hold the same count.
func TestAllIsAtomicThroughTheLog(t *testing.T) {
	g := newGroup(t, 3)
	const capacity = 40
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	for _, m := range g.members {
		rdb := m.client(t)
		for w := 0; w < 2; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 15; i++ {
					v, err := rdb.Do(context.Background(), "RL.ALL", 1, "TOKEN", "a", "1/h", capacity,
						"TOKEN", "b", "1/h", capacity).Slice()
					if err != nil {
						t.Error(err)
						return
					}
					if v[0] == int64(1) {
						mu.Lock()
						admitted++
						mu.Unlock()
					}
				}
			}()
		}
	}
	wg.Wait()
	if admitted != capacity {
		t.Fatalf("RL.ALL admitted %d times; want exactly %d", admitted, capacity)
	}
	rdb := g.leader().client(t)
	for _, k := range []string{"a", "b"} {
		v, _ := rdb.Do(context.Background(), "RL.TOKEN", k, "1/h", capacity, 0).Slice()
		if v[2] != int64(0) {
			t.Fatalf("%s remaining = %v; want 0 (both consumed together)", k, v[2])
		}
	}
	g.assertSameState()
}

func TestBatcherRenumbersGroups(t *testing.T) {
	req := func(group int32) algorithms.Request {
		return algorithms.Request{Key: []byte("k"), Group: group, N: 1,
			Limit: algorithms.Limit{Algo: algorithms.Token, Count: 1, Period: 1}}
	}
	dec := func(group int32) op { return op{code: opDecide, req: req(group)} }
	decided := []algorithms.Request{req(1), req(1), req(0), req(5)}
	subs := []*submission{
		{ops: []op{dec(1), dec(1), dec(0)}},
		{ops: []op{dec(1), dec(1)}}, // the same group number as the first submission's
		{ops: []op{dec(2), dec(3), dec(3)}},
		{reqs: decided}, // decisions alone (submitDecisions), renumbered the same way
		{ops: []op{{code: opDelete, keys: [][]byte{[]byte("k")}}, dec(7)}},
	}
	var b batcher
	_, ops, err := decodeBatch(b.encode(nil, subs))
	if err != nil {
		t.Fatal(err)
	}
	var got []int32
	for _, o := range ops {
		got = append(got, o.req.Group)
	}
	want := []int32{1, 1, 0, 2, 2, 3, 4, 4, 5, 5, 0, 6, 0, 7}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("groups in the entry = %v; want %v", got, want)
	}
	if ops[12].code != opDelete || string(ops[8].req.Key) != "k" || ops[8].req.Limit.Count != 1 {
		t.Fatalf("ops decoded as %+v", ops)
	}
	for i, g := range []int32{1, 1, 0, 5} {
		if decided[i].Group != g {
			t.Fatalf("the caller's decision %d now has group %d; encoding must leave it %d", i, decided[i].Group, g)
		}
	}
}

func TestDecisionsEncodeAsTheirDecideOps(t *testing.T) {
	reqs := []algorithms.Request{
		{Key: []byte("a"), ID: []byte("id"), N: 2, Group: 3, Limit: algorithms.Limit{Algo: algorithms.Token, Count: 10, Period: 1000}},
		{Key: []byte("b"), N: 1, Min: 4, Limit: algorithms.Limit{Algo: algorithms.Token, Count: 10, Period: 1000}},
		{Key: []byte("c"), N: 1, Override: []byte("ovr:c"), Limit: algorithms.Limit{Algo: algorithms.Token, Count: 10, Period: 1000}},
	}
	ops := make([]op, len(reqs))
	for i := range reqs {
		ops[i] = op{code: opDecide, req: reqs[i]}
	}
	if a, b := appendDecisions(nil, 42, reqs), appendBatch(nil, 42, ops); !bytes.Equal(a, b) {
		t.Fatalf("appendDecisions = %x; appendBatch of the same decide ops = %x", a, b)
	}
}
