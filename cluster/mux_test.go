package cluster

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/certs/certstest"
	"github.com/sluice-rl/sluice/store"
)

// Groups sharing Raft ports (mux.go): real TCP on loopback addresses, one
// port per process, raft's in-memory log stores.

// muxRaft are timings slow enough for TCP and TLS under -race on a busy
// 2-core machine.
func muxRaft(c *raft.Config) {
	c.HeartbeatTimeout = time.Second
	c.ElectionTimeout = time.Second
	c.LeaderLeaseTimeout = 500 * time.Millisecond
	c.CommitTimeout = 5 * time.Millisecond
	c.SnapshotThreshold = 1 << 30
}

// openPort opens a RaftPort on ip:0, closed at the end of the test (after
// the nodes, whose cleanups run first).
func openPort(t *testing.T, ip string, server, client *tls.Config) *RaftPort {
	t.Helper()
	p, err := OpenRaftPort(PortConfig{Bind: ip + ":0", ServerTLS: server, ClientTLS: client, Logger: quiet})
	if err != nil {
		t.Skipf("cannot listen on %s (loopback aliases are needed): %v", ip, err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// muxNode is one group's replica on a process's port; its log survives a
// restart.
type muxNode struct {
	t     *testing.T
	id    string
	group uint8
	port  *RaftPort
	logs  *raft.InmemStore
	snaps *raft.InmemSnapshotStore
	node  *Node
}

// open starts (or restarts) the replica on its port. Its RESP address is
// not served: these tests decide on the leader only.
func (m *muxNode) open() {
	m.t.Helper()
	cfg := DefaultConfig()
	cfg.ID, cfg.RESPAddr, cfg.Logger, cfg.Port, cfg.Group = m.id, "127.0.0.1:1", quiet, m.port, m.group
	cfg.Logs, cfg.Stable, cfg.Snapshots, cfg.RaftConfig = m.logs, m.logs, m.snaps, muxRaft
	n, err := Open(cfg, store.New(4))
	if err != nil {
		m.t.Fatal(err)
	}
	m.node = n
}

func (m *muxNode) close() {
	if m.node != nil {
		m.node.Close()
		m.node = nil
	}
}

// muxGroup starts group g with a replica on each port and bootstraps it.
func muxGroup(t *testing.T, g uint8, ports []*RaftPort) []*muxNode {
	t.Helper()
	var ms []*muxNode
	var servers []raft.Server
	for i, p := range ports {
		m := &muxNode{t: t, id: fmt.Sprintf("g%dn%d", g, i+1), group: g, port: p, logs: raft.NewInmemStore(),
			snaps: raft.NewInmemSnapshotStore()}
		m.open()
		t.Cleanup(m.close)
		ms = append(ms, m)
		servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(m.id), Address: raft.ServerAddress(p.Addr())})
	}
	if err := ms[0].node.raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil {
		t.Fatal(err)
	}
	return ms
}

func muxLeader(t *testing.T, ms []*muxNode) *muxNode {
	t.Helper()
	var ld *muxNode
	waitFor(t, 20*time.Second, func() bool {
		for _, m := range ms {
			if m.node != nil && m.node.Ready() {
				ld = m
				return true
			}
		}
		return false
	})
	return ld
}

var muxLimit = algorithms.Limit{Algo: algorithms.Token, Count: 100, Period: int64(time.Hour)}

// decide takes n tokens of key through the leader of ms, the test being
// key's only writer. A loaded machine can cost a leader its leadership
// mid-commit: a reply that says nothing was applied is retried, and an
// unknown outcome is settled by a peek through the next leader (the
// tokens left are the count before, or before minus n).
func decide(t *testing.T, ms []*muxNode, key string, n int64) algorithms.Result {
	t.Helper()
	before := peekThrough(t, ms, key)
	for attempt := 0; attempt < 20; attempt++ {
		out := make([]algorithms.Outcome, 1)
		m := muxLeader(t, ms)
		m.node.Decide(time.Now().UnixNano(), []algorithms.Request{{Key: []byte(key), Limit: muxLimit, N: n}}, out)
		if out[0].Err == nil {
			return out[0].Result
		}
		if strings.HasPrefix(out[0].Err.Error(), "UNKNOWN") {
			if after := peekThrough(t, ms, key); after.Remaining == before.Remaining-n {
				return after // it was applied
			}
		}
		t.Logf("a decision through %s: %v; again", m.id, out[0].Err)
	}
	t.Fatalf("no decision of %d on %s in 20 attempts", n, key)
	return algorithms.Result{}
}

// peekThrough reads key's state through the log of ms's leader.
func peekThrough(t *testing.T, ms []*muxNode, key string) algorithms.Result {
	t.Helper()
	for attempt := 0; attempt < 20; attempt++ {
		out := make([]algorithms.Outcome, 1)
		muxLeader(t, ms).node.Decide(time.Now().UnixNano(), []algorithms.Request{{Key: []byte(key), Limit: muxLimit}}, out)
		if out[0].Err == nil {
			return out[0].Result
		}
	}
	t.Fatalf("no peek of %s in 20 attempts", key)
	return algorithms.Result{}
}

// localRemaining reads key's remaining tokens from m's own replica.
func localRemaining(m *muxNode, key string) int64 {
	out := make([]algorithms.Outcome, 1)
	m.node.LocalDecide([]algorithms.Request{{Key: []byte(key), Limit: muxLimit}}, out)
	return out[0].Result.Remaining
}

// twoGroupsOnThreePorts runs groups 1 and 2 with a replica of each on
// each of three ports: both elect, decide, and a follower of each that was
// down while its leader decided catches up.
func twoGroupsOnThreePorts(t *testing.T, ports []*RaftPort) {
	g1, g2 := muxGroup(t, 1, ports), muxGroup(t, 2, ports)
	for _, ms := range [][]*muxNode{g1, g2} {
		for _, m := range ms {
			if bound, adv := m.node.RaftAddrs(); bound != m.port.Bound() || adv != m.port.Addr() {
				t.Fatalf("%s's Raft addresses are %s (advertised %s); its port's are %s (%s)", m.id, bound, adv, m.port.Bound(), m.port.Addr())
			}
		}
	}
	// The same key in each group: its state is the group's own.
	for i := 0; i < 3; i++ {
		decide(t, g1, "k", 1)
	}
	for i := 0; i < 5; i++ {
		decide(t, g2, "k", 1)
	}

	// A follower of each stops; its port keeps serving the other group.
	var down [2]*muxNode
	for i, ms := range [][]*muxNode{g1, g2} {
		ld := muxLeader(t, ms)
		for _, m := range ms {
			if m != ld {
				down[i] = m
				break
			}
		}
		down[i].close()
	}
	l1, l2 := muxLeader(t, g1), muxLeader(t, g2)
	if r := decide(t, g1, "k", 10); r.Remaining != 100-13 {
		t.Fatalf("group 1: %d remaining; want %d", r.Remaining, 100-13)
	}
	if r := decide(t, g2, "k", 10); r.Remaining != 100-15 {
		t.Fatalf("group 2: %d remaining; want %d", r.Remaining, 100-15)
	}
	for i, want := range []int64{100 - 13, 100 - 15} {
		m := down[i]
		m.open()
		ld := muxLeader(t, [][]*muxNode{g1, g2}[i])
		target := ld.node.fsm.AppliedIndex()
		waitFor(t, 20*time.Second, func() bool { return m.node.fsm.AppliedIndex() >= target })
		if got := localRemaining(m, "k"); got != want {
			t.Fatalf("%s, restarted, reads %d remaining; want %d", m.id, got, want)
		}
	}
	for _, ms := range [][]*muxNode{g1, g2} {
		ld := muxLeader(t, ms)
		for _, m := range ms {
			target := ld.node.fsm.AppliedIndex()
			waitFor(t, 20*time.Second, func() bool { return m.node.fsm.AppliedIndex() >= target })
		}
	}
	t.Logf("group 1 led by %s, group 2 by %s; %s and %s caught up", l1.id, l2.id, down[0].id, down[1].id)
}

func TestTwoGroupsShareThreeRaftPorts(t *testing.T) {
	var ports []*RaftPort
	for _, ip := range []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"} {
		ports = append(ports, openPort(t, ip, nil, nil))
	}
	twoGroupsOnThreePorts(t, ports)
}

func TestTwoGroupsShareThreeRaftPortsUnderMutualTLS(t *testing.T) {
	ca := certstest.NewCA(t, "cluster CA")
	var ports []*RaftPort
	for _, ip := range []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"} {
		r := pki(t, ca, ca)
		ports = append(ports, openPort(t, ip, r.PeerServerConfig(), r.ClientConfig()))
	}
	twoGroupsOnThreePorts(t, ports)
	// The probe a leader runs before adding a voter passes (it closes
	// without a preamble).
	prober := &streamLayer{clientTLS: pki(t, ca, ca).ClientConfig()}
	if err := prober.probe(ports[1].Bound()); err != nil {
		t.Fatalf("probe of a shared port with a member's certificate: %v", err)
	}
	// A client with a certificate from another CA, announcing group 1.
	other := certstest.NewCA(t, "another CA")
	before := ports[0].RefusedConnections()
	if c, err := dialTLS(net.Dialer{}, ports[0].Bound(), pki(t, other, ca).ClientConfig(), 2*time.Second); err == nil {
		c.Write([]byte{muxMagic, 1})
		if !closedByPeer(c) {
			t.Fatal("a connection with another CA's certificate was kept")
		}
		c.Close()
	}
	waitFor(t, 5*time.Second, func() bool { return ports[0].RefusedConnections() > before })
}

// hostedPort opens a port on 127.0.0.1 whose group 1 has a member at
// 127.0.0.2 and whose group 2 one at 127.0.0.3, with their transports
// (what reaches raft arrives on their Consumer channels).
func hostedPort(t *testing.T) (*RaftPort, map[uint8]*entryTransport) {
	t.Helper()
	p := openPort(t, "127.0.0.1", nil, nil)
	ts := map[uint8]*entryTransport{}
	for g, member := range map[uint8]string{1: "127.0.0.2:7000", 2: "127.0.0.3:7000"} {
		tr, f, _, err := p.transport(g, false)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tr.Close() })
		f.arm(configOf(member))
		ts[g] = tr
	}
	return p, ts
}

// peerTransport is raft's transport of a peer at ip that dials for group.
func peerTransport(t *testing.T, ip string, group uint8) *raft.NetworkTransport {
	t.Helper()
	out := newOutsiderStream(t, ip)
	s := &streamLayer{ln: out.ln, advertise: out.ln.Addr(), dialer: out.dialer, group: group}
	tr := raft.NewNetworkTransport(s, 1, 2*time.Second, io.Discard)
	t.Cleanup(func() { tr.Close() })
	return tr
}

// answered sends a TimeoutNow from tr to the port and answers it if it
// reaches want's raft. It reports whether it was answered.
func answered(t *testing.T, tr *raft.NetworkTransport, p *RaftPort, want *entryTransport) bool {
	t.Helper()
	go func() {
		select {
		case rpc := <-want.Consumer():
			rpc.Respond(&raft.TimeoutNowResponse{}, nil)
		case <-time.After(5 * time.Second):
		}
	}()
	return sendTimeoutNow(tr, "n1", p.Addr()) == nil
}

func TestRaftPortAdmitsAGroupsOwnMembersOnly(t *testing.T) {
	p, ts := hostedPort(t)
	if !answered(t, peerTransport(t, "127.0.0.2", 1), p, ts[1]) {
		t.Fatal("a TimeoutNow from group 1's member, for group 1, was not answered")
	}
	// The same member announcing group 2: refused before group 2's raft
	// sees it.
	before := p.RefusedConnections()
	if answered(t, peerTransport(t, "127.0.0.2", 2), p, ts[2]) {
		t.Fatal("a member of group 1 only reached group 2's raft")
	}
	if got := p.RefusedConnections() - before; got != 1 {
		t.Fatalf("refused %d connections for group 2 from group 1's member; want 1", got)
	}
	if !answered(t, peerTransport(t, "127.0.0.3", 2), p, ts[2]) {
		t.Fatal("a TimeoutNow from group 2's member, for group 2, was not answered")
	}
}

func TestRaftPortRefusesGarbageAndUnknownGroupsAndKeepsServing(t *testing.T) {
	p, ts := hostedPort(t)
	before := p.RefusedConnections()
	for name, b := range map[string][]byte{
		"an unknown group": {muxMagic, 9},
		"HTTP":             []byte("GET / HTTP/1.1\r\n\r\n"),
		"RESP":             []byte("*1\r\n$4\r\nPING\r\n"),
		"a TLS hello":      {0x16, 0x03, 0x01, 0x00, 0x05},
		"an RPC for group 0, which the port does not host": {3, 0x80},
	} {
		c := dialFrom(t, "127.0.0.2", p.Bound())
		c.Write(b)
		if !closedByPeer(c) {
			t.Fatalf("a connection sending %s stayed open", name)
		}
	}
	// Closed before saying anything, as a TLS probe does: not a refusal.
	dialFrom(t, "127.0.0.2", p.Bound()).Close()
	waitFor(t, 5*time.Second, func() bool { return p.RefusedConnections()-before >= 5 })
	time.Sleep(100 * time.Millisecond)
	if got := p.RefusedConnections() - before; got != 5 {
		t.Fatalf("refused %d connections; want 5", got)
	}
	if !answered(t, peerTransport(t, "127.0.0.2", 1), p, ts[1]) {
		t.Fatal("after the refusals, a TimeoutNow for group 1 from its member was not answered")
	}
}

// A group 0 member on a RaftPort and two members with ports of their own
// (no preamble, as before RaftPort): they elect, replicate, and hand
// leadership across.
func TestRaftPortGroupZeroInteroperatesWithPortlessPeers(t *testing.T) {
	shared := openPort(t, "127.0.0.1", nil, nil)
	muxGroup(t, 1, []*RaftPort{shared}) // the port hosts another group too
	ms := []*muxNode{{t: t, id: "n1", port: shared, logs: raft.NewInmemStore(), snaps: raft.NewInmemSnapshotStore()}}
	ms[0].open()
	t.Cleanup(ms[0].close)
	servers := []raft.Server{{Suffrage: raft.Voter, ID: "n1", Address: raft.ServerAddress(shared.Addr())}}
	for _, id := range []string{"n2", "n3"} {
		m := &muxNode{t: t, id: id, logs: raft.NewInmemStore(), snaps: raft.NewInmemSnapshotStore()}
		cfg := DefaultConfig()
		cfg.ID, cfg.RESPAddr, cfg.Logger, cfg.RaftBind = id, "127.0.0.1:1", quiet, "127.0.0.1:0"
		cfg.Logs, cfg.Stable, cfg.Snapshots, cfg.RaftConfig = m.logs, m.logs, m.snaps, muxRaft
		n, err := Open(cfg, store.New(4))
		if err != nil {
			t.Fatal(err)
		}
		m.node = n
		t.Cleanup(m.close)
		ms = append(ms, m)
		_, adv := n.RaftAddrs()
		servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(id), Address: raft.ServerAddress(adv)})
	}
	if err := ms[0].node.raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil {
		t.Fatal(err)
	}
	ld := muxLeader(t, ms)
	decide(t, ms, "k", 7)
	// Leadership moves between the shared port and a portless peer.
	to := "n1"
	if ld.id == "n1" {
		to = "n2"
	}
	waitFor(t, 30*time.Second, func() bool {
		if l := muxLeader(t, ms); l.id != to {
			l.node.Transfer(to)
			return false
		}
		return true
	})
	if r := decide(t, ms, "k", 1); r.Remaining != 100-8 {
		t.Fatalf("%d remaining; want %d", r.Remaining, 100-8)
	}
	for _, m := range ms {
		waitFor(t, 20*time.Second, func() bool { return localRemaining(m, "k") == 100-8 })
	}
	if n := shared.RefusedConnections(); n != 0 {
		t.Fatalf("the shared port refused %d connections", n)
	}
	t.Logf("led by %s, then %s", ld.id, to)
}

func TestNodeOnARaftPortRefusesItsOwnRaftSettings(t *testing.T) {
	p := openPort(t, "127.0.0.1", nil, nil)
	for name, set := range map[string]func(*Config){
		"RaftBind":  func(c *Config) { c.RaftBind = "127.0.0.1:0" },
		"RaftAllow": func(c *Config) { c.RaftAllow = []string{"any"} },
	} {
		cfg := DefaultConfig()
		cfg.ID, cfg.RESPAddr, cfg.Port, cfg.Logger = "n1", "127.0.0.1:1", p, quiet
		set(&cfg)
		if err := cfg.Validate(); err == nil {
			t.Fatalf("a Config with Port and %s validated", name)
		}
	}
	cfg := DefaultConfig()
	cfg.ID, cfg.RESPAddr, cfg.RaftBind, cfg.Group = "n1", "127.0.0.1:1", "127.0.0.1:0", 3
	if err := cfg.Validate(); err == nil {
		t.Fatal("a Config with Group 3 and no Port validated")
	}
	// Two nodes of one group on one port.
	a := &muxNode{t: t, id: "a", group: 4, port: p, logs: raft.NewInmemStore(), snaps: raft.NewInmemSnapshotStore()}
	a.open()
	defer a.close()
	cfg = DefaultConfig()
	cfg.ID, cfg.RESPAddr, cfg.Port, cfg.Group, cfg.Logger = "b", "127.0.0.1:1", p, 4, quiet
	cfg.Logs, cfg.Stable, cfg.Snapshots = raft.NewInmemStore(), raft.NewInmemStore(), raft.NewInmemSnapshotStore()
	if n, err := Open(cfg, store.New(1)); err == nil {
		n.Close()
		t.Fatal("a second node of group 4 opened on the same port")
	}
}
