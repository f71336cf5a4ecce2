package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/sluice-rl/sluice/keyslot"
	"github.com/sluice-rl/sluice/store"
)

// logCacheEntries is how many of the latest log entries a node keeps in
// memory (raft.LogCache), each at most maxBytes: twice what the batcher
// keeps in flight, so that replicating and applying them reads none back.
const logCacheEntries = 2 * maxInflight

// Config configures a Node. Start from DefaultConfig and set at least ID,
// RESPAddr and one of RaftBind, Port or Transport; Open refuses a Config
// that Validate refuses.
type Config struct {
	ID            string          // this node's id, unique in the group
	RaftBind      string          // host:port the Raft transport listens on (port 0: one the kernel chooses)
	RaftAdvertise string          // the address peers dial; RaftBind's bound address if empty
	RESPAddr      string          // this node's client address, where followers forward to
	Dir           string          // the log (logstore.go) and snapshots live in Dir/raft
	Bootstrap     BootstrapMode   // whether a node with no Raft state starts a new group (bootstrap.go)
	Peers         []string        // the other members' RESP addresses, asked before bootstrapping
	Join          string          // a member's RESP address to join through (ignored if Dir holds state)
	RaftAllow     []string        // IPs and prefixes the Raft port admits besides members ("any": all; peerfilter.go)
	Fsync         bool            // fsync the log on every write (the default; false trades durability for speed)
	LogStore      LogStore        // the log's store in a Dir with none yet (logstore.go); "": LogStoreWAL
	Password      string          // requirepass of the group's nodes, for forwarding
	ACL           ACL             // the users the group replicates (acl.go); nil: none
	SeedACL       bool            // offer ACL's users as the group's first set when elected (an --aclfile)
	Policies      Policies        // the command-defined policies the group replicates (policies.go); nil: none
	RulesHash     func() [32]byte // this node's rules files' hash, which a leader publishes (policies.go); nil: none
	Logger        *slog.Logger

	// A sharded cluster (docs/cluster.md; fence.go, meta.go, shard.go).
	// Shard is this node's data group, 1 and up, whose log fences its
	// slots; 0 is an unsharded group that serves every slot. Meta makes
	// the node a replica of the meta group instead: its RESP commands are
	// META.* (the twins of RAFT.*), and its state the slot table and the
	// data groups' records. NonVoter joins through Join as a non-voter.
	// MetaNode is the process's meta replica, which a data group's node
	// reads its slots and the other groups' leaders from and reports its
	// own members to. InitialGroups, on the meta group, is the number of
	// data groups its first leader splits the slots evenly among.
	Shard         uint16
	Meta          bool
	NonVoter      bool
	MetaNode      *Node
	InitialGroups int

	// RaftServerTLS and RaftClientTLS put the Raft port under mutual TLS
	// (tlsport.go): the listener's configuration, which must require and
	// verify a client certificate (certs.Reloader.PeerServerConfig), and
	// the one for connections to peers, which must present a certificate
	// and verify the server's (certs.Reloader.ClientConfig). Both or
	// neither; neither is plaintext.
	RaftServerTLS, RaftClientTLS *tls.Config
	// RESPTLS, if set, is the client configuration for connections to the
	// other nodes' RESP ports: forwarding, RAFT.JOIN and RAFT.MEMBERS. nil
	// is plaintext. It needs the nodes to serve RESP over TLS.
	RESPTLS *tls.Config

	// Port, instead of RaftBind, puts the node on a Raft port shared with
	// the process's other groups (mux.go), as group Group. The port's
	// PortConfig then holds the bind and advertised addresses, Allow and
	// TLS, so RaftBind, RaftAdvertise, RaftAllow and the Raft TLS
	// configurations must be unset. Close leaves the port open. Group
	// needs Port.
	Port  *RaftPort
	Group uint8

	// LeaderWait bounds how long a request waits for a leader.
	LeaderWait time.Duration
	// PeerWait bounds how long --bootstrap yes waits for every peer to
	// answer.
	PeerWait time.Duration

	// For tests: raft's in-memory stores and transport, and timing.
	Transport  raft.Transport
	Logs       raft.LogStore
	Stable     raft.StableStore
	Snapshots  raft.SnapshotStore
	RaftConfig func(*raft.Config)
}

// Node is one member of a replicated group. It implements the commands
// package's Keyspace (every decision and key operation goes through the
// log, on the leader, with the leader's clock) and its cluster commands.
//
// Concurrency: all methods are safe for concurrent use.
type Node struct {
	cfg     Config
	log     *slog.Logger
	st      *store.Store
	fsm     *stateMachine
	raft    *raft.Raft
	trans   raft.Transport
	batcher *batcher
	fwd     *forwarder
	proxies [4]*forwarder // --cluster-proxy's pools, by reply form (proxy.go)
	filter  *peerFilter   // nil unless raft's TCP transport is in use
	stream  *streamLayer  // likewise
	closers []io.Closer

	fileStores bool // the log and snapshots are files in cfg.Dir

	ready atomic.Bool // leader, and its first barrier has applied
	// membership serializes Join's read of the configuration with the
	// change it makes (raft commits one change at a time, but the read is
	// ours).
	membership sync.Mutex
	// moveHook, in tests, stops a migration step of moveOut (mover.go).
	moveHook atomic.Pointer[func(step string) bool]
	stop     chan struct{}
	stopped  sync.WaitGroup
}

// DefaultConfig returns the defaults: the log fsynced on every write, no
// bootstrap, 3 s to wait for a leader and 5 s for the peers of a
// bootstrap.
func DefaultConfig() Config {
	return Config{Fsync: true, LogStore: LogStoreWAL, Bootstrap: NoBootstrap, LeaderWait: 3 * time.Second, PeerWait: 5 * time.Second}
}

// Validate reports the first setting that cannot work.
func (c *Config) Validate() error {
	switch {
	case c.ID == "" || c.RESPAddr == "":
		return errNoIdentity
	case c.RaftBind == "" && c.Transport == nil && c.Port == nil:
		return errNoRaftBind
	case c.Port != nil && (c.RaftBind != "" || c.RaftAdvertise != "" || len(c.RaftAllow) > 0 || c.RaftServerTLS != nil || c.RaftClientTLS != nil || c.Transport != nil):
		return errors.New("cluster: with a shared Raft port, its PortConfig sets the Raft addresses, --raft-allow and TLS")
	case c.Port == nil && c.Group != 0:
		return fmt.Errorf("cluster: group %d needs a shared Raft port", c.Group)
	case c.LeaderWait <= 0 || c.PeerWait <= 0:
		return fmt.Errorf("cluster: LeaderWait %v and PeerWait %v must be positive", c.LeaderWait, c.PeerWait)
	case c.Bootstrap < NoBootstrap || c.Bootstrap > BootstrapForce:
		return fmt.Errorf("cluster: unknown Bootstrap %d", c.Bootstrap)
	}
	return nil
}

// Open starts a node over st (which must be empty: its state comes from the
// log and snapshots). A node with no Raft state and cfg.Bootstrap set may
// first wait for its peers, and refuses to start a group that may exist
// already (bootstrap.go).
func Open(cfg Config, st *store.Store) (*Node, error) {
	if err := checkOpen(&cfg); err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, log: cfg.Logger, st: st, fsm: newStateMachine(st, cfg.ACL, cfg.Policies), fwd: newForwarder(cfg.Password, cfg.RESPTLS), stop: make(chan struct{})}
	n.fsm.proposals = &proposals{}
	if cfg.Shard > 0 {
		n.fsm.fence, n.fsm.slots = &slotSet{}, &[keyslot.Slots]slotMig{}
		n.proxies = newProxies(cfg)
	}
	if cfg.Meta {
		n.fsm.meta = newMetaState()
	}
	rc, notify := raftConfig(cfg)
	if err := n.openStorage(); err != nil {
		n.closeAll()
		return nil, err
	}
	if n.fileStores {
		if err := checkGroupDir(cfg.Dir, cfg.groupWord()); err != nil {
			n.closeAll()
			return nil, err
		}
	}
	existing, err := raft.HasExistingState(n.cfg.Logs, n.cfg.Stable, n.cfg.Snapshots)
	if err != nil {
		n.closeAll()
		return nil, fmt.Errorf("cluster: reading %s: %w", cfg.Dir, err)
	}
	if existing {
		n.writeGroupFile()
	}
	if !existing && cfg.Bootstrap != NoBootstrap {
		if err := n.mayBootstrap(); err != nil {
			n.closeAll()
			return nil, err
		}
	}
	// Recent entries stay in memory: a follower applies, and the leader
	// sends, what it has just appended, without reading it back from the
	// log store.
	logs, err := raft.NewLogCache(logCacheEntries, n.cfg.Logs)
	if err != nil {
		n.closeAll()
		return nil, fmt.Errorf("cluster: %w", err)
	}
	r, err := raft.NewRaft(rc, n.fsm, logs, n.cfg.Stable, n.cfg.Snapshots, n.trans)
	if err != nil {
		n.closeAll()
		return nil, fmt.Errorf("cluster: %w", err)
	}
	n.raft = r
	n.batcher = newBatcher(r, n.fsm.proposals)
	if n.filter != nil {
		n.filter.arm(func() raft.Configuration { return r.GetConfiguration().Configuration() })
		n.stopped.Add(1)
		go n.vouchLoop()
	}
	if err := n.begin(existing, rc.LocalID); err != nil {
		n.Close()
		return nil, err
	}
	n.stopped.Add(1)
	go n.watchLeadership(notify)
	if cfg.RulesHash != nil {
		n.publishRules()
	}
	n.startLeaderWatch()
	n.startShardDuties()
	return n, nil
}

// checkOpen validates cfg for Open and fills in its logger.
func checkOpen(cfg *Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if (cfg.RaftServerTLS == nil) != (cfg.RaftClientTLS == nil) {
		return errors.New("cluster: the Raft port's mutual TLS needs both a server and a client configuration")
	}
	if cfg.RaftServerTLS != nil && cfg.Transport != nil {
		return errors.New("cluster: the Raft port's TLS applies to the TCP transport, not to Config.Transport")
	}
	if cfg.Join != "" && sameNode(cfg.Join, cfg.RESPAddr) {
		flag := "--join"
		if cfg.Meta {
			flag = "--cluster-seed"
		}
		return fmt.Errorf("cluster: %s %s is this node's own RESP address (%s): name another member to join through",
			flag, cfg.Join, cfg.RESPAddr)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return nil
}

// raftConfig is hashicorp/raft's configuration for a node of cfg, and the
// channel its leadership changes arrive on.
func raftConfig(cfg Config) (*raft.Config, chan bool) {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.Logger = hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Warn, Output: os.Stderr})
	rc.SnapshotThreshold = 8192
	rc.SnapshotInterval = 30 * time.Second
	rc.TrailingLogs = 10240
	notify := make(chan bool, 64)
	rc.NotifyCh = notify
	if cfg.RaftConfig != nil {
		cfg.RaftConfig(rc)
	}
	return rc, notify
}

// begin starts the node's part in its group once raft runs: it restarts on
// the state it has (existing), bootstraps a group, joins one, or waits to
// be added.
func (n *Node) begin(existing bool, id raft.ServerID) error {
	cfg, r := n.cfg, n.raft
	switch {
	case existing && len(r.GetConfiguration().Configuration().Servers) == 0 && cfg.Join != "":
		// A joiner stopped after a leader's first message set its term but
		// before any entry arrived: it has its votes and no entries, so it
		// lost nothing and asks again, even if it is a member already.
		n.stopped.Add(1)
		go n.joinLoop(false)
	case existing:
		n.log.Info("raft: restarting on existing state; --bootstrap and --join are ignored", "dir", cfg.Dir)
		if n.inConfiguration() {
			n.writeMarker()
		}
	case cfg.Bootstrap != NoBootstrap:
		f := r.BootstrapCluster(raft.Configuration{Servers: []raft.Server{
			{Suffrage: raft.Voter, ID: id, Address: n.trans.LocalAddr()},
		}})
		if err := f.Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			return fmt.Errorf("cluster: bootstrap: %w", err)
		}
		n.writeMarker()
	case cfg.Join != "":
		n.stopped.Add(1)
		go n.joinLoop(true)
	default:
		if id := n.formerMember(); id != "" {
			n.log.Warn("raft: this --dir's marker says the node was a member of a group, but it holds no Raft state; "+
				"waiting to be added. "+n.recovery(""), "marker", filepath.Join(cfg.Dir, markerFile))
		}
	}
	return nil
}

// inConfiguration reports whether raft's latest configuration names this node.
func (n *Node) inConfiguration() bool {
	for _, s := range n.raft.GetConfiguration().Configuration().Servers {
		if string(s.ID) == n.cfg.ID {
			return true
		}
	}
	return false
}

func (n *Node) openStorage() error {
	cfg := &n.cfg
	if cfg.Logs == nil || cfg.Stable == nil || cfg.Snapshots == nil {
		dir := filepath.Join(cfg.Dir, "raft")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		logs, kind, err := openLogStore(dir, cfg.LogStore, cfg.Fsync)
		if err != nil {
			return err
		}
		if cfg.LogStore != "" && kind != cfg.LogStore {
			n.log.Warn("raft: the log in --dir is kept in the store it was written in, not in --raft-log-store", "dir", dir, "store", kind, "raft-log-store", cfg.LogStore)
		}
		cfg.LogStore = kind
		n.closers = append(n.closers, logs)
		snaps, err := raft.NewFileSnapshotStore(dir, 2, os.Stderr)
		if err != nil {
			return err
		}
		cfg.Logs, cfg.Stable, cfg.Snapshots = logs, logs, snaps
		n.fileStores = true
	}
	if cfg.Transport != nil {
		n.trans = cfg.Transport
		return nil
	}
	standby := cfg.Join == "" && cfg.Bootstrap == NoBootstrap && n.formerMember() == ""
	if cfg.Port != nil {
		t, filter, stream, err := cfg.Port.transport(cfg.Group, standby)
		if err != nil {
			return err
		}
		n.trans, n.filter, n.stream = t, filter, stream
		n.closers = append(n.closers, t) // detaches the group, not the port
		return nil
	}
	filter, err := newPeerFilter(n.log, cfg.RaftAllow, standby)
	if err != nil {
		return err
	}
	// Port 0 in RaftBind lets the kernel choose; without RaftAdvertise the
	// node then advertises the address it is bound to.
	adv := cfg.RaftAdvertise
	if adv == "" {
		adv = cfg.RaftBind
	}
	if err := checkAdvertise(cfg.RaftAdvertise); err != nil {
		return err
	}
	var sec *raftTLS
	if cfg.RaftServerTLS != nil {
		sec = &raftTLS{server: cfg.RaftServerTLS, client: cfg.RaftClientTLS}
	}
	t, stream, err := newTCPTransport(cfg.RaftBind, adv, filter, sec, n.log)
	if err != nil {
		return err
	}
	n.trans, n.filter, n.stream = t, filter, stream
	n.closers = append(n.closers, t)
	return nil
}

// watchLeadership keeps ready true exactly while this node is a leader
// whose first barrier has applied: a new leader decides nothing before it
// has applied every entry of its predecessors. It also records the
// leader's RESP address in the replicated member table.
func (n *Node) watchLeadership(notify <-chan bool) {
	defer n.stopped.Done()
	for {
		select {
		case <-n.stop:
			return
		case leader := <-notify:
			n.ready.Store(false)
			if !leader {
				n.log.Info("raft: no longer the leader")
				continue
			}
			if err := n.raft.Barrier(10 * time.Second).Error(); err != nil {
				n.log.Warn("raft: barrier after election failed", "err", err)
				continue
			}
			if n.raft.State() != raft.Leader {
				continue
			}
			n.ready.Store(true)
			n.log.Info("raft: leader, serving decisions", "term", n.raft.Stats()["term"])
			if n.fsm.Member(n.cfg.ID) != n.cfg.RESPAddr {
				go n.batcher.submit(0, []op{{code: opMember, id: n.cfg.ID, addr: n.cfg.RESPAddr}})
			}
			go n.seedACL()
		}
	}
}

// joinLoop asks the member at cfg.Join to add this node, retrying until it
// is a member or the node stops. Before each attempt it asks for the
// group's members: the Raft port must admit the leader, which connects to
// this node as soon as it adds it. Until an attempt has been sent, finding
// this node's id among them means its Raft state was lost (this node has
// none): rejoining as the same voter would forget the votes and entries it
// acknowledged, so it waits, logging why, until the id is removed, and its
// Raft port admits no one meanwhile. fresh says that this node has no Raft
// state at all (not even a term), which makes that check meaningful.
func (n *Node) joinLoop(fresh bool) {
	defer n.stopped.Done()
	delay := 100 * time.Millisecond
	start := time.Now()
	sent := false // an attempt was sent: its outcome may have been "added"
	for {
		members, err := askMembers(n.cfg.Join, n.command("MEMBERS"), n.cfg.Password, n.cfg.RESPTLS)
		switch {
		case err != nil:
			err = fmt.Errorf("asking for the members: %w", err)
		case fresh && !sent && hasMember(members, n.cfg.ID):
			// Not vouched for either: the leader still replicates to this
			// id, and admitting it would make this node that voter again.
			err = fmt.Errorf("%w: %s is still a member of the group (%s) but this node's --dir (%s) holds no Raft state; "+
				"run RAFT.REMOVE %s on a live member and this node joins as a new one", errStillMember, n.cfg.ID,
				describeMembers(members), n.cfg.Dir, n.cfg.ID)
		default:
			if n.filter != nil {
				n.filter.vouch(members)
			}
			sent = true
			args := [][]byte{[]byte(n.command("JOIN")), []byte(n.cfg.ID), []byte(n.trans.LocalAddr()), []byte(n.cfg.RESPAddr)}
			if n.cfg.NonVoter {
				args = append(args, []byte("NONVOTER"))
			}
			_, err = n.fwd.call(n.cfg.Join, args...)
			if err == nil {
				n.log.Info("raft: joined the group", "through", n.cfg.Join)
				n.writeMarker()
				return
			}
		}
		level := slog.LevelInfo // a group that is still electing its first leader is normal
		if time.Since(start) > 5*time.Second || errors.Is(err, errStillMember) {
			level = slog.LevelWarn
		}
		n.log.Log(context.Background(), level, "raft: join failed; retrying", "through", n.cfg.Join, "err", err, "in", delay)
		select {
		case <-n.stop:
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// Close stops the node: it leaves leadership as is (the others elect a new
// leader after their timeout) and closes the log.
func (n *Node) Close() error {
	select {
	case <-n.stop:
		return nil
	default:
	}
	close(n.stop)
	var err error
	if n.raft != nil {
		err = n.raft.Shutdown().Error()
		n.batcher.close()
	}
	n.stopped.Wait()
	n.fwd.close()
	for _, f := range n.proxies {
		if f != nil {
			f.close()
		}
	}
	n.closeAll()
	return err
}

func (n *Node) closeAll() {
	for i := len(n.closers) - 1; i >= 0; i-- {
		n.closers[i].Close()
	}
	n.closers = nil
}

// command is the RESP name of this node's group's command sub (MEMBERS,
// JOIN, FORWARD …): RAFT.sub, or META.sub on the meta group.
func (n *Node) command(sub string) string {
	if n.cfg.Meta {
		return "META." + sub
	}
	return "RAFT." + sub
}

// Ready reports whether this node is a leader that serves decisions.
func (n *Node) Ready() bool { return n.ready.Load() }
