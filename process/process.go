package process

import (
	"context"
	"errors"
	"fmt"

	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/sluice-rl/sluice/certs"
	"github.com/sluice-rl/sluice/cluster"
	"github.com/sluice-rl/sluice/commands"
	"github.com/sluice-rl/sluice/lease"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/rls"
	"github.com/sluice-rl/sluice/server"
	"github.com/sluice-rl/sluice/store"
)

// Process is one running sluice server: its store or replicated node, its
// listeners, its commands and everything they need. Open starts it, Serve
// waits until it is told to stop and stops it, and Shutdown tells it to
// stop (as SIGTERM does) and waits for the end:
//
//	p, err := process.Open(opts)
//	…
//	go p.Serve()
//	…
//	err = p.Shutdown(ctx)
//
// A Process that Serve has ended is closed: its directory unlocked, its
// listeners and files closed.
type Process struct {
	cfg   Options
	log   *slog.Logger
	level *slog.LevelVar // CONFIG SET loglevel changes it

	closers []func() // run in reverse order when the process ends or Open fails

	tlsr     *certs.Reloader // nil without TLS
	obs      *observer       // nil without --metrics-bind
	lns      []clientListener
	serving  bool // the listeners serve: Serve's end closes them, not the closers
	st       *store.Store
	rules    *policy.Registry
	ks       commands.Keyspace
	node     *cluster.Node // nil on a single node
	meta     *cluster.Node // a sharded cluster's meta replica (sharded.go); nil elsewhere
	saver    *store.Saver  // nil on a replicated node
	aof      *store.AOF    // nil unless appendonly yes
	loader   *rulesLoader
	stop     *stopper
	clock    *commands.Clock
	live     *liveConfig
	cmds     *commands.Handler
	srv      *server.Server
	front    *grpcFrontEnd // nil without --grpc-bind
	errs     chan error    // the RESP listeners' ends
	grpcErrs chan error    // the gRPC listener's end
	sig, hup chan os.Signal
	sweeps   chan struct{} // closed to stop the sweep loop

	serveOnce sync.Once
	served    chan struct{} // closed when Serve has stopped the process
	exit      error         // Serve's result
}

// ExitStatus is the error of Open or Serve when the process is to end with
// that exit code (not 0) after a start or shutdown that logged its own
// reasons (docs/configuration.md, "Start-up, shutdown and exit codes").
type ExitStatus int

func (e ExitStatus) Error() string { return "exit status " + strconv.Itoa(int(e)) }

// Open starts a server with opts: it locks the directory, loads the state,
// binds the listeners (reported by Addrs and --ports-file) and serves
// clients. On an error nothing stays open.
func Open(opts Options) (*Process, error) {
	p := &Process{cfg: opts, served: make(chan struct{})}
	if err := p.open(); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

func (p *Process) open() error {
	p.startLog()
	if err := p.cfg.Check(); err != nil {
		return err
	}
	p.onClose(startHeapFloor(p.cfg.gcHeapFloor))
	if err := p.lockDir(); err != nil {
		return err
	}
	if err := p.openFrontDoors(); err != nil {
		return err
	}
	if err := p.openState(); err != nil {
		return err
	}
	if err := p.openCommands(); err != nil {
		return err
	}
	p.catchSignals()
	if err := p.listen(); err != nil {
		return err
	}
	if err := p.openGRPC(); err != nil {
		return err
	}
	if err := writePortsFile(p.cfg.portsFile, p.Addrs()); err != nil {
		return err
	}
	p.serving = true
	p.sweeps = make(chan struct{})
	if p.live.saves != nil {
		p.live.saves.set(p.cfg.save) // CONFIG SET save restarts it
	}
	go p.cmds.Sweep(p.sweeps) // one sweep loop, whatever the number of listeners
	return nil
}

// onClose adds f to what the end of the process runs, in reverse order.
func (p *Process) onClose(f func()) { p.closers = append(p.closers, f) }

func (p *Process) close() {
	for i := len(p.closers) - 1; i >= 0; i-- {
		p.closers[i]()
	}
	p.closers = nil
	if p.sig != nil {
		signal.Stop(p.sig)
		signal.Stop(p.hup)
	}
}

func (p *Process) startLog() {
	p.level = new(slog.LevelVar)
	p.level.Set(logLevel(p.cfg.loglevel))
	out := p.cfg.LogOutput
	if out == nil {
		out = os.Stderr
	}
	p.log = slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: p.level}))
	if p.cfg.Signals {
		slog.SetDefault(p.log)
	}
}

// lockDir takes the directory (one server per directory: its snapshot, or
// its Raft state) and removes a ports file from an earlier run, which would
// name ports this run may not get.
func (p *Process) lockDir() error {
	lock, err := store.LockDir(p.cfg.dir)
	if err != nil {
		return fmt.Errorf("refusing to start: %w", err)
	}
	p.onClose(func() { lock.Unlock() })
	if p.cfg.portsFile != "" {
		if err := os.Remove(p.cfg.portsFile); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("ports file: %w", err)
		}
	}
	return nil
}

// openFrontDoors loads the certificates, starts the metrics endpoint (it
// answers /healthz and /readyz from here on, while the state loads) and
// binds an auto port now: a node announces its RESP address to its group,
// and CONFIG GET port says the port. Nobody knows the port before the
// ports file is written, so nobody waits on it meanwhile.
func (p *Process) openFrontDoors() error {
	var err error
	if p.tlsr, err = loadTLS(p.log, p.cfg); err != nil {
		return err
	}
	if p.tlsr != nil {
		p.onClose(p.tlsr.Stop)
	}
	if p.obs, err = startMetrics(p.log, p.cfg); err != nil {
		return err
	}
	p.onClose(p.obs.stop)
	warnExposed(p.log, p.cfg)
	p.onClose(func() {
		if !p.serving {
			closeListeners(p.lns)
		}
	})
	if p.cfg.port == autoPort || p.cfg.tlsPort == autoPort {
		if p.lns, err = listenClients(&p.cfg); err != nil {
			return err
		}
	}
	return nil
}

// openState makes the store and loads the state into it: a replicated
// node's from the Raft log, a single node's from its files.
func (p *Process) openState() error {
	p.st = store.New(p.cfg.shards)
	p.st.SetStopWritesOnSaveError(p.cfg.stopWritesOnSaveError)
	// The policies: in a group, the command-defined ones are the group's,
	// replayed from the log into this registry (docs/policies.md).
	p.rules = policy.NewRegistry()
	p.ks = p.st
	var _ commands.SidecarRecorder = p.st // RL.POLICY SET and DEL on a single node
	if p.cfg.upstream.Upstream != "" {
		return p.openTier()
	}
	if p.cfg.replicated() {
		return p.openReplicated()
	}
	return p.openSingle()
}

// openTier makes the keyspace a lease-backed tier over --upstream
// (docs/leases.md): it keeps no state of its own but the leased stock,
// which it returns to the upstream at shutdown.
func (p *Process) openTier() error {
	cfg := &p.cfg
	if cfg.replicated() {
		return errors.New("--upstream is a tier in front of a node or group, not a member of one: drop --node-id and --raft-bind")
	}
	lc := cfg.upstream
	lc.Fallback, _ = lease.ParseFallback(cfg.upstreamFallback)
	lc.TTL = time.Duration(cfg.upstreamTTLms) * time.Millisecond
	lc.Timeout = time.Duration(cfg.upstreamTimeout) * time.Millisecond
	lc.Logger = p.log
	tier := lease.New(lc)
	p.onClose(func() { tier.Close() })
	p.ks = tier
	cfg.save, cfg.appendonly = 0, false
	p.log.Info("lease tier on", "upstream", lc.Upstream, "keys", lc.Keys, "fallback", lc.Fallback.String())
	return nil
}

// openReplicated opens the node: in a group the state comes from the Raft
// log and its snapshots (in --dir/raft), not from the snapshot file.
func (p *Process) openReplicated() error {
	cfg := &p.cfg // Check has refused what a replicated node cannot run
	cfg.appendonly = false
	ccfg := cfg.cluster
	ccfg.Dir, ccfg.Password, ccfg.Logger = cfg.dir, cfg.commands.Password, p.log
	// The users are the group's: made here, before the log replays
	// into them, and served by the commands (docs/security.md).
	var err error
	if cfg.commands.Users, err = commands.NewUsers(cfg.commands); err != nil {
		return err
	}
	ccfg.ACL, ccfg.SeedACL = cfg.commands.Users, cfg.commands.ACLFile != ""
	ccfg.Policies = p.rules
	ccfg.RulesHash = func() [32]byte { return p.rules.Rules().Hash() }
	respPort, err := clusterTLS(*cfg, p.tlsr, &ccfg)
	if err != nil {
		return err
	}
	ccfg.RESPAddr = cfg.announceAddr
	if ccfg.RESPAddr == "" {
		ccfg.RESPAddr = net.JoinHostPort(cfg.bind[0], strconv.Itoa(respPort))
	}
	if ccfg.Shard > 0 {
		err = p.openSharded(ccfg)
	} else if p.node, err = cluster.Open(ccfg, p.st); err == nil {
		p.onClose(func() { p.node.Close() })
	}
	if err != nil {
		return err
	}
	p.ks = p.node
	cfg.save = 0
	bound, _ := p.node.RaftAddrs()
	p.log.Info("replication on", "node_id", ccfg.ID, "raft_bind", bound, "dir", cfg.dir,
		"fsync", yesNo(ccfg.Fsync))
	return nil
}

// openSingle loads a single node's snapshot or append-only log. It keeps
// its command-defined policies in its snapshot file and append-only log,
// beside the entries.
func (p *Process) openSingle() error {
	evict, err := store.ParsePolicy(p.cfg.maxmemoryPolicy)
	if err != nil {
		return err
	}
	p.st.SetMaxMemory(p.cfg.maxmemory, evict)
	p.st.SetSidecar(p.rules)
	if p.saver, p.aof, err = loadState(p.log, p.st, p.cfg); err != nil {
		return err
	}
	p.onClose(func() { closeAppendOnly(p.log, p.aof) }) // nil once Serve has closed it
	return nil
}

// openCommands loads the rules files and makes the stopper, the commands
// and the RESP server over the state.
func (p *Process) openCommands() error {
	cfg := &p.cfg
	clientMemory, err := cfg.clientMemoryCap()
	if err != nil {
		return err
	}
	// The rules files: a broken set stops the start (exit 2, a bad
	// configuration file); later reloads keep the rules in force.
	if p.loader, err = loadPolicies(p.log, *cfg, p.rules); err != nil {
		p.log.Error("refusing to start", "err", err)
		return ExitStatus(ExitUsage)
	}
	p.onClose(p.loader.close)
	p.stop = newStopper(p.log, finalSave(p.log, p.saver), probeSave(p.saver), cfg.save > 0)
	p.clock = commands.NewClock()
	ccfg := cfg.commands
	p.live = &liveConfig{cfg: *cfg, base: defaultConfig(), log: p.log, level: p.level, stop: p.stop}
	ccfg.Params, ccfg.Settings = params(cfg), p.live
	ccfg.Info = []commands.Param{
		{Name: "config_file", Value: cfg.file},
		{Name: "shards", Value: strconv.Itoa(p.st.Shards())},
	}
	ccfg.Logger, ccfg.Stats = p.log, p.st
	ccfg.Cluster, ccfg.Persister, ccfg.Shutdowner = clusterOf(p.node, p.meta), persisterOf(p.saver), p.stop
	if p.meta != nil {
		ccfg.Meta, ccfg.Router, ccfg.Resharder = p.meta, p.node, resharder{p.node}
		meta := p.meta
		ccfg.MetaSync = func() error { return meta.CatchUp(metaSyncWait) }
		if cfg.clusterProxy {
			ccfg.Proxy = p.node
		}
	}
	if ccfg.Topology, err = p.topology(); err != nil {
		return err
	}
	ccfg.AppendOnly = appendOnlyOf(p.aof, p.log)
	ccfg.Policies = p.rules
	if p.loader != nil {
		ccfg.Rules = p.loader.w
	}
	if p.cmds, err = commands.New(ccfg, p.ks, p.clock); err != nil {
		return err
	}
	scfg := cfg.server
	scfg.MaxMemoryClients, scfg.Clock, scfg.Logger = clientMemory, p.clock, p.log
	if p.srv, err = server.New(scfg, p.cmds); err != nil {
		return err
	}
	p.cmds.Attach(p.srv)
	p.live.srv, p.live.cmds = p.srv, p.cmds
	if p.node == nil {
		p.live.st, p.live.saves = p.st, &saveLoop{saver: p.saver}
	}
	if err := p.obs.attach(p.cmds, p.node); err != nil {
		return err
	}
	// The event loops are the store's deciders; with one, a pipeline's run
	// holds all of its shards at once (0: a goroutine per client).
	p.st.SetDeciders(p.srv.EventLoops())
	return nil
}

// catchSignals sends SIGTERM and SIGINT to the stopper, which says when
// and how the process ends, and SIGHUP to the TLS certificates' reload
// (as Redis, SIGHUP never stops the server): caught from before the first
// client can be served, so that a signal never finds the default action.
// Only with Options.Signals; otherwise the channels stay nil.
func (p *Process) catchSignals() {
	if !p.cfg.Signals {
		return
	}
	p.sig = make(chan os.Signal, 1)
	signal.Notify(p.sig, syscall.SIGINT, syscall.SIGTERM)
	p.hup = make(chan os.Signal, 1)
	signal.Notify(p.hup, syscall.SIGHUP)
}

// listen binds the plaintext port and the TLS port side by side, on every
// --bind address, as Redis (--port 0 closes the plaintext one), and serves
// RESP on them.
func (p *Process) listen() error {
	cfg := &p.cfg
	if cfg.port == 0 && cfg.tlsPort == 0 { // with --grpc-bind: Check refuses it otherwise
		p.log.Warn("--port 0 and no --tls-port: the RESP protocol is not served, only gRPC on --grpc-bind")
	}
	if p.lns == nil {
		var err error
		if p.lns, err = listenClients(cfg); err != nil {
			return err
		}
	}
	p.errs = make(chan error, len(p.lns))
	for _, l := range p.lns {
		p.log.Info("sluice ready to accept connections", "addr", l.ln.Addr().String(), "tls", yesNo(l.tls), "version", commands.Version,
			"shards", p.st.Shards(), "event_loops", p.srv.EventLoops(), "debug_command", cfg.commands.Debug)
		if l.tls {
			go func(ln net.Listener) { p.errs <- p.srv.ServeTLS(ln, p.tlsr.ServerConfig()) }(l.ln)
		} else {
			go func(ln net.Listener) { p.errs <- p.srv.Serve(ln) }(l.ln)
		}
	}
	return nil
}

// openGRPC starts the Envoy rate limit service, if --grpc-bind asks for it.
func (p *Process) openGRPC() error {
	p.grpcErrs = make(chan error, 1)
	var dec rls.Decider = p.ks
	if p.meta != nil { // a sharded node: each key to the group owning its slot
		dec = cluster.NewSlotDecider(p.node)
	}
	front, err := startGRPC(p.log, p.cfg, dec, p.rules, p.clock, p.grpcErrs)
	if err != nil {
		return err
	}
	p.front = front
	p.live.mu.Lock()
	p.live.grpc = front
	if front != nil { // a CONFIG SET proto-max-bulk-len since cfg was read
		front.svc.SetMaxKey(int(p.live.cfg.server.Limits.MaxBulk))
	}
	p.live.mu.Unlock()
	return nil
}

// Addrs are the addresses the server listens on, with the ports the kernel
// chose, as the ports file lists them: name ("resp", "tls", "raft",
// "grpc", "metrics") and host:port.
func (p *Process) Addrs() [][2]string { return boundAddrs(p.lns, p.node, p.obs, p.front) }

// Addr is the first RESP address (plaintext, else TLS); "" if none.
func (p *Process) Addr() string {
	for _, a := range p.Addrs() {
		if a[0] == "resp" || a[0] == "tls" {
			return a[1]
		}
	}
	return ""
}

// Serve waits until the process is told to stop (SIGTERM or SIGINT with
// Options.Signals, SHUTDOWN, Shutdown, or a listener's failure), stops
// it and closes it. It returns nil after a clean stop, or an ExitStatus.
// Every call returns the same result once the process has stopped.
func (p *Process) Serve() error {
	p.serveOnce.Do(func() {
		p.exit = p.wait()
		close(p.served)
	})
	<-p.served
	return p.exit
}

// Shutdown asks the process to stop, as SIGTERM does (a final save first,
// unless --save 0), and waits until it has, or until ctx is done. It
// returns Serve's result, or ctx's error.
func (p *Process) Shutdown(ctx context.Context) error {
	p.stop.Signal("shutdown")
	go p.Serve() // stops the process if nothing serves it
	select {
	case <-p.served:
		return p.exit
	case <-ctx.Done():
		return ctx.Err()
	}
}

// wait waits for the stopper's decision, then stops the process.
func (p *Process) wait() error {
	var end stopping
	for waiting := true; waiting; {
		select {
		case s := <-p.sig:
			p.stop.Signal(s.String())
		case <-p.hup:
			reloadTLS(p.log, p.tlsr)
		case err := <-p.errs:
			if err != nil && !errors.Is(err, net.ErrClosed) {
				p.log.Error("listener failed; shutting down", "err", err)
			}
			p.errs = nil // one listener's failure is one request to stop
			p.stop.Signal("listener failure")
		case err := <-p.grpcErrs:
			if err != nil {
				p.log.Error("the gRPC listener failed; shutting down", "err", err)
			}
			p.grpcErrs = nil
			p.stop.Signal("gRPC listener failure")
		case end = <-p.stop.Done():
			waiting = false
		}
	}
	return p.end(end)
}

// end stops the process as the stopper decided.
func (p *Process) end(end stopping) error {
	defer p.close()
	if !end.held {
		// Nothing was saved at exit: let the batches and calls in hand finish.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.front.stop(ctx)
		if err := p.srv.Shutdown(ctx); err != nil {
			p.log.Warn("clients did not finish in time; closed them", "err", err)
		}
	}
	// Held: the final snapshot is written and the store stays held, so
	// that no decision after it is lost; the process leaves at once, as
	// Redis does after its final save, its listeners closed first, as
	// Redis closes its listening sockets before it exits.
	p.srv.StopListening()
	close(p.sweeps)
	if p.live.saves != nil {
		p.live.saves.close()
	}
	closeAppendOnly(p.log, p.aof)
	p.aof = nil
	p.log.Info("bye", "exit_code", end.code)
	if end.code != ExitOK {
		return ExitStatus(end.code)
	}
	return nil
}

// Both keyspaces implement the whole of commands.Keyspace, and the Raft
// node the whole of commands.Cluster: the handlers call them without type
// assertions.
var (
	_ commands.Keyspace = (*store.Store)(nil)
	_ commands.Keyspace = (*cluster.Node)(nil)
	_ commands.Keyspace = (*lease.Tier)(nil)
	_ commands.Cluster  = (*cluster.Node)(nil)
	// The local store tells RL.CHECK when no override key is needed; a
	// replicated node or a lease tier must not (TestOnlyTheLocalStoreSaysItHoldsNoOverride).
	_ commands.OverrideHolder = (*store.Store)(nil)
)

// clusterOf returns node as the commands' Cluster, or a nil interface on a
// single node (not a non-nil interface holding a nil pointer).
func clusterOf(node, meta *cluster.Node) commands.Cluster {
	switch {
	case node == nil:
		return nil
	case meta != nil:
		return shardedCluster{Node: node, meta: meta}
	}
	return node
}

func logLevel(name string) slog.Level {
	switch name {
	case "debug", "verbose":
		return slog.LevelDebug
	case "warning":
		return slog.LevelWarn
	case "nothing":
		return slog.LevelError + 4
	default:
		return slog.LevelInfo
	}
}

// topology is what the CLUSTER commands describe: one shard owning every
// slot, a group's members or this single node (docs/cluster.md).
func (p *Process) topology() (commands.Topology, error) {
	if p.meta != nil {
		return shardedTopology{p.node}, nil
	}
	if p.node != nil {
		return groupTopology{p.node}, nil
	}
	id, err := loadNodeID(p.cfg.dir)
	if err != nil {
		return nil, fmt.Errorf("the cluster node id: %w", err)
	}
	return singleNode{id: id, addr: p.cfg.announceAddr}, nil
}
