package cluster

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/redis/go-redis/v9"
	"github.com/sluice-rl/sluice/certs"
	"github.com/sluice-rl/sluice/certs/certstest"
	"github.com/sluice-rl/sluice/commands"
	"github.com/sluice-rl/sluice/server"
	"github.com/sluice-rl/sluice/store"
)

// Mutual TLS on the Raft port and TLS on the RESP dialers, with
// certificates made by certstest for each test.

// pki makes a party's certificate (from issuer) trusting the given CAs.
func pki(t *testing.T, issuer *certstest.CA, trusted ...*certstest.CA) *certs.Reloader {
	t.Helper()
	f := certstest.WriteFiles(t, t.TempDir(), "node", issuer, trusted...)
	r, err := certs.New(certs.Options{CertFile: f.Cert, KeyFile: f.Key, CAFile: f.CA})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func tlsOf(r *certs.Reloader) *raftTLS {
	return &raftTLS{server: r.PeerServerConfig(), client: r.ClientConfig()}
}

// tlsPort opens a Raft stream layer under mutual TLS on 127.0.0.1 whose
// filter admits every address, and hands what it accepts to the channel.
func tlsPort(t *testing.T, r *certs.Reloader) (*streamLayer, *peerFilter, <-chan net.Conn) {
	t.Helper()
	f, err := newPeerFilter(quiet, []string{"any"}, false)
	if err != nil {
		t.Fatal(err)
	}
	s, err := newStreamLayer("127.0.0.1:0", "127.0.0.1:0", f, tlsOf(r))
	if err != nil {
		t.Fatal(err)
	}
	f.arm(configOf())
	t.Cleanup(func() { s.Close() })
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := s.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	return s, f, accepted
}

func TestRaftPortUnderTLSAcceptsOnlyTheGroupsCertificates(t *testing.T) {
	ca, other := certstest.NewCA(t, "group CA"), certstest.NewCA(t, "another CA")
	port, f, accepted := tlsPort(t, pki(t, ca, ca))
	addr := port.ln.Addr().String()

	// Plaintext, as raft's own transport speaks: refused before raft sees it.
	plain, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	plain.Write([]byte{byte(8)}) // rpcTimeoutNow's type byte, and then some
	plain.Write([]byte("not a TLS record"))
	if !closedByPeer(plain) {
		t.Fatal("a plaintext connection stayed open")
	}
	// A certificate from another CA, and none at all.
	for name, cfg := range map[string]*tls.Config{
		"a certificate from another CA": pki(t, other, ca).ClientConfig(),
		"no certificate":                {InsecureSkipVerify: true},
	} {
		c, err := dialTLS(net.Dialer{}, addr, cfg, time.Second)
		if err == nil {
			if !closedByPeer(c) {
				t.Fatalf("a client with %s was kept", name)
			}
			c.Close()
		}
	}
	select {
	case c := <-accepted:
		t.Fatalf("raft was handed a connection from %s", c.RemoteAddr())
	default:
	}
	// A dial that gave up under load may leave its handshake to fail
	// after the client stopped looking: wait for the count, boundedly.
	waitFor(t, 5*time.Second, func() bool { return f.refused.Load() >= 3 })
	if n := f.refused.Load(); n != 3 {
		t.Fatalf("refused %d connections; want 3", n)
	}

	// A member's certificate: raft gets the connection, and the probe a
	// leader runs before adding a voter passes.
	member := pki(t, ca, ca)
	c, err := dialTLS(net.Dialer{}, addr, member.ClientConfig(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case <-accepted:
	case <-time.After(5 * time.Second):
		t.Fatal("a member's connection was not handed to raft")
	}
	prober := &streamLayer{clientTLS: member.ClientConfig()}
	if err := prober.probe(addr); err != nil {
		t.Fatalf("probe with a member's certificate: %v", err)
	}
	stranger := &streamLayer{clientTLS: pki(t, other, ca).ClientConfig()}
	if err := stranger.probe(addr); !errors.Is(err, errProbe) || !strings.Contains(err.Error(), "refused this node's certificate") {
		t.Fatalf("probe with another CA's certificate: %v", err)
	}
}

// respTLSServer answers AUTH, RAFT.MEMBERS and any other command (with
// "ok") over TLS.
func respTLSServer(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
					var args []string
					for i := 0; i < n; i++ {
						br.ReadString('\n')
						a, _ := br.ReadString('\n')
						args = append(args, strings.TrimSpace(a))
					}
					switch strings.ToUpper(args[0]) {
					case "AUTH":
						c.Write([]byte("+OK\r\n"))
					case "RAFT.MEMBERS":
						c.Write(encodeMembers([]peerMember{{ID: "n1", RaftAddr: "127.0.0.1:7001", Role: "leader"}}))
					default:
						c.Write([]byte("$2\r\nok\r\n"))
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func TestRESPDialersSpeakTLS(t *testing.T) {
	ca, other := certstest.NewCA(t, "group CA"), certstest.NewCA(t, "another CA")
	srv := pki(t, ca, ca)
	addr := respTLSServer(t, srv.ServerConfig())
	cli := pki(t, ca, ca).ClientConfig()

	members, err := askMembers(addr, "RAFT.MEMBERS", "secret", cli)
	if err != nil || len(members) != 1 || members[0].ID != "n1" {
		t.Fatalf("askMembers over TLS = %v, %v", members, err)
	}
	fwd := newForwarder("secret", cli)
	defer fwd.close()
	if reply, err := fwd.call(addr, []byte("RAFT.FORWARD"), []byte("x")); err != nil || string(reply) != "ok" {
		t.Fatalf("forwarding over TLS = %q, %v", reply, err)
	}
	if _, err := askMembers(addr, "RAFT.MEMBERS", "", nil); err == nil {
		t.Fatal("askMembers in plaintext to a TLS port succeeded")
	}
	if _, err := askMembers(addr, "RAFT.MEMBERS", "", pki(t, other, ca).ClientConfig()); err == nil {
		t.Fatal("askMembers with another CA's certificate succeeded")
	}
	other2 := newForwarder("", pki(t, ca, other).ClientConfig()) // trusts another CA only
	defer other2.close()
	if _, err := other2.call(addr, []byte("PING")); !errors.Is(err, errNotApplied) {
		t.Fatalf("forwarding to a server whose CA is not trusted: %v; want errNotApplied", err)
	}
}

// tlsNode is a node of an in-process group over real TCP under mutual TLS.
type tlsNode struct {
	id, addr, raftAddr string
	node               *Node
	srv                *server.Server
}

func startTLSNode(t *testing.T, id string, r *certs.Reloader, bootstrap BootstrapMode, join string) *tlsNode {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tn := &tlsNode{id: id, addr: ln.Addr().String()}
	node, err := Open(Config{
		ID: id, RESPAddr: tn.addr, RaftBind: "127.0.0.1:0", Dir: t.TempDir(), Bootstrap: bootstrap, Join: join,
		Logger: quiet, LeaderWait: 2 * time.Second, PeerWait: 5 * time.Second, RaftServerTLS: r.PeerServerConfig(), RaftClientTLS: r.ClientConfig(),
		Logs: raft.NewInmemStore(), Stable: raft.NewInmemStore(), Snapshots: raft.NewInmemSnapshotStore(),
		RaftConfig: func(c *raft.Config) {
			// Slower than fastRaft: TLS handshakes under -race on a busy
			// 2-core machine can take longer than its 150 ms timeouts.
			c.HeartbeatTimeout = time.Second
			c.ElectionTimeout = time.Second
			c.LeaderLeaseTimeout = 500 * time.Millisecond
			c.CommitTimeout = 5 * time.Millisecond
			c.SnapshotThreshold = 1 << 30 // snapshots only when the test asks
			c.TrailingLogs = 1            // a snapshot leaves one entry: a joiner needs InstallSnapshot
		},
	}, store.New(4))
	if err != nil {
		t.Fatal(err)
	}
	tn.node = node
	_, tn.raftAddr = node.RaftAddrs() // the port the kernel chose
	ccfg := commands.DefaultConfig()
	ccfg.Cluster, ccfg.Logger = node, quiet
	clock := commands.NewClock()
	h, err := commands.New(ccfg, node, clock)
	if err != nil {
		t.Fatal(err)
	}
	scfg := server.DefaultConfig()
	scfg.EventLoops, scfg.Clock, scfg.Logger = 0, clock, quiet
	if tn.srv, err = server.New(scfg, h); err != nil {
		t.Fatal(err)
	}
	h.Attach(tn.srv)
	served := make(chan error, 1)
	go func() { served <- tn.srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		tn.srv.Shutdown(ctx)
		<-served
		node.Close()
	})
	return tn
}

func (tn *tlsNode) client(t *testing.T) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: tn.addr, Protocol: 2, MaxRetries: -1, ReadTimeout: 10 * time.Second})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func (tn *tlsNode) stat(name string) uint64 {
	v, _ := strconv.ParseUint(tn.node.raft.Stats()[name], 10, 64)
	return v
}

// A group whose Raft port speaks only mutual TLS elects, appends, installs
// a snapshot on a joiner and hands leadership over; a node without the
// group's certificates is not added.
func TestMutualTLSGroupElectsAppendsAndInstallsSnapshots(t *testing.T) {
	ca, other := certstest.NewCA(t, "group CA"), certstest.NewCA(t, "another CA")
	n1 := startTLSNode(t, "n1", pki(t, ca, ca), BootstrapForce, "")
	waitFor(t, 10*time.Second, n1.node.Ready)
	rdb := n1.client(t)
	for i := 0; i < 20; i++ {
		if _, err := take(rdb, "k", 100); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.Do(context.Background(), "RAFT.SNAPSHOT").Err(); err != nil {
		t.Fatal(err)
	}
	if first, _ := n1.node.cfg.Logs.FirstIndex(); first <= 2 {
		t.Fatalf("the leader's log starts at %d after the snapshot; a joiner would not need the snapshot", first)
	}

	n2 := startTLSNode(t, "n2", pki(t, ca, ca), NoBootstrap, n1.addr)
	waitFor(t, 15*time.Second, func() bool { return n2.stat("last_snapshot_index") > 0 && n2.node.fsm.AppliedIndex() > 0 })
	n3 := startTLSNode(t, "n3", pki(t, ca, ca), NoBootstrap, n1.addr)
	waitFor(t, 15*time.Second, func() bool { return len(n1.node.raft.GetConfiguration().Configuration().Servers) == 3 })

	// Leadership moves by a TimeoutNow RPC over mutual TLS.
	nodes := []*tlsNode{n1, n2, n3}
	readyLeader := func() *tlsNode {
		var ld *tlsNode
		waitFor(t, 15*time.Second, func() bool {
			for _, tn := range nodes {
				if tn.node.Ready() {
					ld = tn
					return true
				}
			}
			return false
		})
		return ld
	}
	ld := readyLeader()
	var moved error
	var term uint64
	// A busy machine may elect another leader meanwhile, or time a transfer
	// out; raft then refuses the next one as in progress until the timed-out
	// one's TimeoutNow returns, so the retries go on for a while.
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		term = ld.stat("term")
		if moved = ld.node.Transfer(""); moved == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
		ld = readyLeader()
	}
	if moved != nil {
		t.Fatalf("leadership transfer: %v", moved)
	}
	// The transfer returns once another node won a later term; a busy
	// machine may hand leadership back to ld since, so the proof is a ready
	// leader of a later term, whoever it is.
	waitFor(t, 15*time.Second, func() bool {
		for _, tn := range nodes {
			if tn.node.Ready() && tn.stat("term") > term {
				return true
			}
		}
		return false
	})
	for _, tn := range nodes {
		if _, err := take(tn.client(t), "k", 100); err != nil {
			t.Fatalf("a decision through %s: %v", tn.id, err)
		}
	}
	v, err := n3.client(t).Do(context.Background(), "RL.TOKEN", "k", "1/h", 100, 0).Slice()
	if err != nil || v[2] != int64(100-23) {
		t.Fatalf("a peek through n3 = %v, %v; want remaining %d", v, err, 100-23)
	}
	for _, kv := range ld.node.InfoReplication() {
		if kv[0] == "raft_tls" && kv[1] != "yes" {
			t.Fatalf("INFO replication raft_tls:%s", kv[1])
		}
	}

	// Would-be members without the group's certificates: one whose
	// certificate comes from another CA, one that trusts another CA only.
	for _, bad := range []struct {
		id string
		r  *certs.Reloader
	}{{"n4", pki(t, other, ca)}, {"n5", pki(t, ca, other)}} {
		tn := startTLSNode(t, bad.id, bad.r, NoBootstrap, "")
		err := readyLeader().node.Join(tn.id, tn.raftAddr, tn.addr, false)
		if err == nil || !strings.Contains(err.Error(), "mutual TLS") {
			t.Fatalf("RAFT.JOIN of %s (no valid certificate): %v; want a refusal", tn.id, err)
		}
		if got := len(readyLeader().node.raft.GetConfiguration().Configuration().Servers); got != 3 {
			t.Fatalf("after refusing %s the configuration has %d servers", tn.id, got)
		}
		if tn.node.raft.State() == raft.Leader || tn.stat("term") != 0 {
			t.Fatalf("%s moved to term %d without a valid certificate", tn.id, tn.stat("term"))
		}
	}
	t.Logf("n2 installed the snapshot at index %d; term %d", n2.stat("last_snapshot_index"), n2.stat("term"))
}
