package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/sluice-rl/sluice/cluster"
	"github.com/sluice-rl/sluice/commands"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/server"
	"github.com/sluice-rl/sluice/store"
)

func main() {
	if len(os.Args) == 2 && (os.Args[1] == "--version" || os.Args[1] == "-v") {
		fmt.Println("sluice v=" + commands.Version)
		return
	}
	if len(os.Args) == 2 && (os.Args[1] == "--help" || os.Args[1] == "-h") {
		usage()
		return
	}
	cfg, err := parseArgs(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "sluice:", err)
		os.Exit(exitUsage)
	}
	if err := run(cfg); err != nil {
		var code exitStatus
		if errors.As(err, &code) {
			os.Exit(int(code))
		}
		fmt.Fprintln(os.Stderr, "sluice:", err)
		os.Exit(exitFailed)
	}
}

// exitStatus is run's error when the process is to end with that exit code
// (not 0) after a shutdown that logged its own reasons.
type exitStatus int

func (e exitStatus) Error() string { return "exit status " + strconv.Itoa(int(e)) }

func usage() {
	fmt.Println("usage: sluice [/path/to/sluice.conf] [--option value ...]")
	fmt.Println("options (redis-server names; the config file takes the same directives):")
	d := defaultConfig()
	for _, s := range settings {
		fmt.Printf("  --%-26s default %q\n", s.name, s.get(&d))
	}
}

// clusterOf returns node as the commands' Cluster, or a nil interface on a
// single node (not a non-nil interface holding a nil pointer).
func clusterOf(node *cluster.Node) commands.Cluster {
	if node == nil {
		return nil
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

func run(cfg config) error {
	level := new(slog.LevelVar) // CONFIG SET loglevel changes it
	level.Set(logLevel(cfg.loglevel))
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(log)
	defer startHeapFloor(cfg.gcHeapFloor)()

	// One server per directory: its snapshot, or its Raft state.
	lock, err := store.LockDir(cfg.dir)
	if err != nil {
		return fmt.Errorf("refusing to start: %w", err)
	}
	defer lock.Unlock()

	tlsr, err := loadTLS(log, cfg)
	if err != nil {
		return err
	}
	if tlsr != nil {
		defer tlsr.Stop()
	}

	// The metrics endpoint answers /healthz and /readyz from here on,
	// while the state loads.
	obs, err := startMetrics(log, cfg)
	if err != nil {
		return err
	}
	defer obs.stop()

	st := store.New(cfg.shards)
	// The policies: in a group, the command-defined ones are the group's,
	// replayed from the log into this registry (docs/policies.md).
	rules := policy.NewRegistry()
	var ks commands.Keyspace = st
	var _ commands.Transactor = st      // MULTI/EXEC need it of every keyspace
	var _ commands.SidecarRecorder = st // RL.POLICY SET and DEL on a single node
	var node *cluster.Node
	var saver *store.Saver
	var aof *store.AOF
	if cfg.replicated() {
		// In a group the state comes from the Raft log and its snapshots
		// (in --dir/raft), not from the snapshot file.
		if cfg.cluster.ID == "" || cfg.cluster.RaftBind == "" {
			return errors.New("replication needs both --node-id and --raft-bind")
		}
		if cfg.maxmemory > 0 {
			return errors.New("--maxmemory is not supported with replication: replicas that refused different keys would diverge")
		}
		if cfg.appendonly && cfg.appendonlySet {
			return errors.New("--appendonly is not supported with replication: the Raft log already persists every batch " +
				"(--raft-fsync says when it reaches the disk)")
		}
		cfg.appendonly = false
		ccfg := cfg.cluster
		ccfg.Dir, ccfg.Password, ccfg.Logger = cfg.dir, cfg.commands.Password, log
		// The users are the group's: made here, before the log replays
		// into them, and served by the commands (docs/security.md).
		if cfg.commands.Users, err = commands.NewUsers(cfg.commands); err != nil {
			return err
		}
		ccfg.ACL, ccfg.SeedACL = cfg.commands.Users, cfg.commands.ACLFile != ""
		ccfg.Policies = rules
		ccfg.RulesHash = func() [32]byte { return rules.Rules().Hash() }
		respPort, err := clusterTLS(cfg, tlsr, &ccfg)
		if err != nil {
			return err
		}
		ccfg.RESPAddr = cfg.announceAddr
		if ccfg.RESPAddr == "" {
			ccfg.RESPAddr = net.JoinHostPort(cfg.bind[0], strconv.Itoa(respPort))
		}
		if node, err = cluster.Open(ccfg, st); err != nil {
			return err
		}
		defer node.Close()
		ks = node
		cfg.save = 0
		log.Info("replication on", "node_id", ccfg.ID, "raft_bind", ccfg.RaftBind, "dir", cfg.dir,
			"fsync", yesNo(ccfg.Fsync))
	} else {
		evict, err := store.ParsePolicy(cfg.maxmemoryPolicy)
		if err != nil {
			return err
		}
		st.SetMaxMemory(cfg.maxmemory, evict)
		// A single node keeps its command-defined policies in its snapshot
		// file and append-only log, beside the entries.
		st.SetSidecar(rules)
		if saver, aof, err = loadState(log, st, cfg); err != nil {
			return err
		}
		defer func() { closeAppendOnly(log, aof) }() // on an early return
	}
	clientMemory, err := cfg.clientMemoryCap()
	if err != nil {
		return err
	}
	// The rules files: a broken set stops the start (exit 2, a bad
	// configuration file); later reloads keep the rules in force.
	loader, err := loadPolicies(log, cfg, rules)
	if err != nil {
		log.Error("refusing to start", "err", err)
		return exitStatus(exitUsage)
	}
	defer loader.close()
	stop := newStopper(log, finalSave(log, saver), probeSave(saver), cfg.save > 0)
	clock := commands.NewClock()
	ccfg := cfg.commands
	live := &liveConfig{cfg: cfg, base: defaultConfig(), log: log, level: level, stop: stop}
	ccfg.Params, ccfg.Settings = params(&cfg), live
	ccfg.Info = []commands.Param{
		{Name: "config_file", Value: cfg.file},
		{Name: "shards", Value: strconv.Itoa(st.Shards())},
	}
	ccfg.Logger, ccfg.Stats = log, storeStats{st}
	ccfg.Cluster, ccfg.Persister, ccfg.Shutdowner = clusterOf(node), persisterOf(saver), stop
	// The CLUSTER commands: one shard owning every slot (docs/cluster.md).
	if node != nil {
		ccfg.Topology = groupTopology{node}
	} else {
		id, err := loadNodeID(cfg.dir)
		if err != nil {
			return fmt.Errorf("the cluster node id: %w", err)
		}
		ccfg.Topology = singleNode{id: id, addr: cfg.announceAddr}
	}
	ccfg.AppendOnly = appendOnlyOf(aof, log)
	ccfg.Policies = rules
	if loader != nil {
		ccfg.Rules = loader.w
	}
	cmds, err := commands.New(ccfg, ks, clock)
	if err != nil {
		return err
	}
	scfg := cfg.server
	scfg.MaxMemoryClients, scfg.Clock, scfg.Logger = clientMemory, clock, log
	srv, err := server.New(scfg, cmds) // a replicated node's commands wait for Raft: a goroutine per client
	if err != nil {
		return err
	}
	cmds.Attach(srv)
	live.srv, live.cmds = srv, cmds
	if node == nil {
		live.st, live.saves = st, &saveLoop{saver: saver}
	}
	if err := obs.attach(cmds, node); err != nil {
		return err
	}
	// The event loops are the store's deciders; with one, a pipeline's run
	// holds all of its shards at once (0: a goroutine per client).
	st.SetDeciders(srv.EventLoops())

	// SIGTERM, SIGINT and SHUTDOWN go to the stopper, which says when and
	// how the process ends: caught from before the first client can be
	// served, so that a signal never finds the default action.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	hup := make(chan os.Signal, 1) // reloads the TLS certificates; as Redis, never stops the server
	signal.Notify(hup, syscall.SIGHUP)

	warnExposed(log, cfg)
	if cfg.port == 0 && cfg.tlsPort == 0 {
		if cfg.grpcBind == "" {
			return errors.New("--port 0 and no --tls-port: no port to serve clients on")
		}
		log.Warn("--port 0 and no --tls-port: the RESP protocol is not served, only gRPC on --grpc-bind")
	}
	// The plaintext port and the TLS port side by side, on every --bind
	// address, as Redis; --port 0 closes the plaintext one.
	type listener struct {
		ln  net.Listener
		tls bool
	}
	var lns []listener
	for _, host := range cfg.bind {
		for _, l := range []struct {
			port int
			tls  bool
		}{{cfg.port, false}, {cfg.tlsPort, true}} {
			if l.port == 0 {
				continue
			}
			ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(l.port)))
			if err != nil {
				for _, l := range lns {
					l.ln.Close()
				}
				return err
			}
			lns = append(lns, listener{ln, l.tls})
		}
	}
	errs := make(chan error, len(lns))
	for _, l := range lns {
		log.Info("sluice ready to accept connections", "addr", l.ln.Addr().String(), "tls", yesNo(l.tls), "version", commands.Version,
			"shards", st.Shards(), "event_loops", srv.EventLoops(), "debug_command", cfg.commands.Debug)
		if l.tls {
			go func(ln net.Listener) { errs <- srv.ServeTLS(ln, tlsr.ServerConfig()) }(l.ln)
		} else {
			go func(ln net.Listener) { errs <- srv.Serve(ln) }(l.ln)
		}
	}

	grpcErrs := make(chan error, 1)
	front, err := startGRPC(log, cfg, ks, rules, clock, grpcErrs)
	if err != nil {
		for _, l := range lns {
			l.ln.Close()
		}
		return err
	}

	stopSaves := make(chan struct{})
	if live.saves != nil {
		live.saves.set(cfg.save) // CONFIG SET save restarts it
	}
	go cmds.Sweep(stopSaves) // one sweep loop, whatever the number of listeners

	var end stopping
	for waiting := true; waiting; {
		select {
		case s := <-sig:
			stop.Signal(s.String())
		case <-hup:
			reloadTLS(log, tlsr)
		case err := <-errs:
			if err != nil && !errors.Is(err, net.ErrClosed) {
				log.Error("listener failed; shutting down", "err", err)
			}
			errs = nil // one listener's failure is one request to stop
			stop.Signal("listener failure")
		case err := <-grpcErrs:
			if err != nil {
				log.Error("the gRPC listener failed; shutting down", "err", err)
			}
			grpcErrs = nil
			stop.Signal("gRPC listener failure")
		case end = <-stop.Done():
			waiting = false
		}
	}
	if !end.held {
		// Nothing was saved at exit: let the batches and calls in hand finish.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		front.stop(ctx)
		if err := srv.Shutdown(ctx); err != nil {
			log.Warn("clients did not finish in time; closed them", "err", err)
		}
	}
	// Held: the final snapshot is written and the store stays held, so
	// that no decision after it is lost; the process leaves at once, as
	// Redis does after its final save, its listeners closed first, as
	// Redis closes its listening sockets before it exits.
	srv.StopListening()
	close(stopSaves)
	if live.saves != nil {
		live.saves.close()
	}
	closeAppendOnly(log, aof)
	aof = nil
	log.Info("bye", "exit_code", end.code)
	if end.code != exitOK {
		return exitStatus(end.code)
	}
	return nil
}
