package cluster

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/redis/go-redis/v9"
	"github.com/sluice-rl/sluice/commands"
	"github.com/sluice-rl/sluice/keyslot"
	"github.com/sluice-rl/sluice/server"
	"github.com/sluice-rl/sluice/store"
)

// An in-process sharded cluster: 2 data groups of 3 nodes, and the meta
// group over the same 6 processes (3 voters, 3 non-voters). Each process
// is one RESP server in front of its data node and its meta node, as
// package process assembles them; Raft runs over in-memory transports.

type shardProc struct {
	id, addr   string
	group      uint16
	data, meta *Node
	srv        *server.Server
	served     chan error
	closed     atomic.Bool // killed (killProc): its server and nodes are closed
}

type shardedTopology struct{ n *Node }

func (s shardedTopology) ClusterShards() []commands.Shard {
	var out []commands.Shard
	for _, sh := range s.n.ClusterShards() {
		c := commands.Shard{Self: sh.Self, Epoch: sh.Epoch, Down: sh.Down, Slots: [][2]int{}}
		for _, n := range sh.Nodes {
			c.Nodes = append(c.Nodes, commands.ShardNode{ID: n.ID, Addr: n.Addr, BusPort: n.BusPort, Primary: n.Primary, Offset: n.Offset})
		}
		for _, r := range sh.Slots {
			c.Slots = append(c.Slots, [2]int{r.Lo, r.Hi})
		}
		out = append(out, c)
	}
	return out
}

// steadyRaft is fastRaft with timeouts that 12 Raft members sharing a
// loaded 2-core machine keep: at 150 ms a starved leader lost its lease
// mid-commit (an UNKNOWN reply to an exact-count check, once under
// -race with other packages' tests beside it).
func steadyRaft(c *raft.Config) {
	fastRaft(c)
	c.HeartbeatTimeout = time.Second
	c.ElectionTimeout = time.Second
	c.LeaderLeaseTimeout = 500 * time.Millisecond
}

func newShardedCluster(t *testing.T) []*shardProc {
	t.Helper()
	return newShardedClusterProxying(t, false)
}

// newShardedClusterProxying is newShardedCluster, its nodes proxying
// (--cluster-proxy) if proxy is set.
func newShardedClusterProxying(t *testing.T, proxy bool) []*shardProc {
	t.Helper()
	var procs []*shardProc
	lns := map[string]net.Listener{}
	for g := 1; g <= 2; g++ {
		for i := 1; i <= 3; i++ {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			p := &shardProc{id: fmt.Sprintf("g%dn%d", g, i), addr: ln.Addr().String(), group: uint16(g)}
			lns[p.id] = ln
			procs = append(procs, p)
		}
	}
	metaTrans := map[string]*raft.InmemTransport{}
	dataTrans := map[string]*raft.InmemTransport{}
	for _, p := range procs {
		_, metaTrans[p.id] = raft.NewInmemTransport(raft.ServerAddress("meta-" + p.id))
		_, dataTrans[p.id] = raft.NewInmemTransport(raft.ServerAddress("data-" + p.id))
	}
	for _, a := range procs {
		for _, b := range procs {
			if a != b {
				metaTrans[a.id].Connect(metaTrans[b.id].LocalAddr(), metaTrans[b.id])
				if a.group == b.group {
					dataTrans[a.id].Connect(dataTrans[b.id].LocalAddr(), dataTrans[b.id])
				}
			}
		}
	}
	open := func(cfg Config, tr *raft.InmemTransport) *Node {
		logs := raft.NewInmemStore()
		cfg.Logger, cfg.LeaderWait = quiet, 2*time.Second
		cfg.Transport, cfg.Logs, cfg.Stable, cfg.Snapshots, cfg.RaftConfig = tr, logs, logs, raft.NewInmemSnapshotStore(), steadyRaft
		n, err := Open(cfg, store.New(2))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, p := range procs {
		mc := DefaultConfig()
		mc.ID, mc.RESPAddr, mc.Meta, mc.InitialGroups = p.id, p.addr, true, 2
		p.meta = open(mc, metaTrans[p.id])
		dc := DefaultConfig()
		dc.ID, dc.RESPAddr, dc.Shard, dc.MetaNode = p.id, p.addr, p.group, p.meta
		p.data = open(dc, dataTrans[p.id])
	}
	// The meta group: g1n1, g1n2 and g2n1 vote; the others follow.
	var metaServers []raft.Server
	for _, p := range procs {
		s := raft.Server{Suffrage: raft.Nonvoter, ID: raft.ServerID(p.id), Address: metaTrans[p.id].LocalAddr()}
		if p.id == "g1n1" || p.id == "g1n2" || p.id == "g2n1" {
			s.Suffrage = raft.Voter
		}
		metaServers = append(metaServers, s)
	}
	if err := procs[0].meta.raft.BootstrapCluster(raft.Configuration{Servers: metaServers}).Error(); err != nil {
		t.Fatal(err)
	}
	for g := 0; g < 2; g++ {
		var servers []raft.Server
		for _, p := range procs[3*g : 3*g+3] {
			servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.id), Address: dataTrans[p.id].LocalAddr()})
		}
		if err := procs[3*g].data.raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range procs {
		ccfg := commands.DefaultConfig()
		ccfg.Cluster, ccfg.Meta, ccfg.Router, ccfg.Topology, ccfg.Logger = p.data, p.meta, p.data, shardedTopology{p.data}, quiet
		if proxy {
			ccfg.Proxy = p.data
		}
		ccfg.Resharder = testResharder{p.data}
		h, err := commands.New(ccfg, p.data, commands.NewClock())
		if err != nil {
			t.Fatal(err)
		}
		scfg := server.DefaultConfig()
		scfg.Logger = quiet
		if p.srv, err = server.New(scfg, h); err != nil {
			t.Fatal(err)
		}
		h.Attach(p.srv)
		p.served = make(chan error, 1)
		go func(p *shardProc, ln net.Listener) { p.served <- p.srv.Serve(ln) }(p, lns[p.id])
	}
	t.Cleanup(func() {
		for _, p := range procs {
			if p.closed.Load() {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			p.srv.Shutdown(ctx)
			cancel()
			<-p.served
			p.data.Close()
			p.meta.Close()
		}
	})
	waitServing(t, procs)
	return procs
}

// waitServing waits until every process sees both groups' leaders and
// each group's log owns its half of the slots.
func waitServing(t *testing.T, procs []*shardProc) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for _, p := range procs {
		for {
			shards := p.data.ClusterShards()
			ok := len(shards) == 2
			for _, sh := range shards {
				ok = ok && !sh.Down && len(sh.Slots) == 1
			}
			rs, _, _ := p.data.fsm.owned()
			ok = ok && len(rs) == 1
			if ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: shards %+v, owns %v", p.id, shards, rs)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func TestShardedClusterRoutesAndFencesBySlot(t *testing.T) {
	procs := newShardedCluster(t)
	ctx := context.Background()
	// Every process reports the same two ranges.
	for _, p := range procs {
		owners := map[int]uint16{}
		_, table, _, _ := p.meta.SlotTable()
		for _, o := range table {
			owners[o.Lo] = o.Group
		}
		if len(table) != 2 || owners[0] != 1 || owners[8192] != 2 || table[0].Hi != 8191 || table[1].Hi != 16383 {
			t.Fatalf("%s: slot table %+v", p.id, table)
		}
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{procs[4].addr}, Protocol: 2})
	defer cc.Close()
	// Keys in both groups, each of capacity 5 taken 7 times: 5 admitted.
	groupsHit := map[uint16]int{}
	for k := 0; k < 40; k++ {
		key := fmt.Sprintf("user:%d", k)
		admitted := 0
		for i := 0; i < 7; i++ {
			v, err := cc.Do(ctx, "RL.TOKEN", key, "1/h", 5).Slice()
			if err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			if v[0] == int64(1) {
				admitted++
			}
		}
		if admitted != 5 {
			t.Fatalf("%s admitted %d of 7 at capacity 5", key, admitted)
		}
		groupsHit[uint16(1+keyslot.Of([]byte(key))/8192)]++
	}
	if groupsHit[1] == 0 || groupsHit[2] == 0 {
		t.Fatalf("keys hit groups %v", groupsHit)
	}
	// A plain client on the wrong group's node gets MOVED to the owner's leader.
	key := "user:0"
	slot := keyslot.Of([]byte(key))
	owner := uint16(1 + slot/8192)
	var wrong, leader *shardProc
	for _, p := range procs {
		if p.group != owner {
			wrong = p
		}
		if p.group == owner && p.data.Ready() {
			leader = p
		}
	}
	rdb := redis.NewClient(&redis.Options{Addr: wrong.addr, Protocol: 2, MaxRetries: -1})
	defer rdb.Close()
	err := rdb.Do(ctx, "RL.TOKEN", key, "1/h", 5).Err()
	if want := fmt.Sprintf("MOVED %d %s", slot, leader.addr); err == nil || err.Error() != want {
		t.Fatalf("wrong node: %v, want %s", err, want)
	}
	// RL.ALL across slots answers CROSSSLOT; with a hash tag it decides.
	if err := rdb.Do(ctx, "RL.ALL", 1, "TOKEN", "a", "1/h", 5, "TOKEN", "b", "1/h", 5).Err(); err == nil || !strings.HasPrefix(err.Error(), "CROSSSLOT") {
		t.Fatalf("RL.ALL across slots: %v", err)
	}
	if err := cc.Do(ctx, "RL.ALL", 1, "TOKEN", "{u42}:s", "10/s", 20, "TOKEN", "{u42}:d", "1000/d", 1000).Err(); err != nil {
		t.Fatalf("RL.ALL with a hash tag: %v", err)
	}
	// The fence: a decision for the other group's slot, put in this
	// group's log directly, is refused at apply time and answered MOVED.
	own := groupLeader(t, procs, 3-owner)
	rs, err := own.data.submit(time.Now().UnixNano(), []op{{code: opDelete, keys: [][]byte{[]byte(key)}}})
	if err != nil || len(rs) != 1 {
		t.Fatal(rs, err)
	}
	if err := rs[0].out.Err; err == nil || !strings.HasPrefix(err.Error(), "MOVED ") {
		t.Fatalf("a delete outside the group's slots: %v", err)
	}
}

func groupLeader(t *testing.T, procs []*shardProc, group uint16) *shardProc {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, p := range procs {
			if p.group == group && p.data.Ready() {
				return p
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("group %d has no leader", group)
	return nil
}
