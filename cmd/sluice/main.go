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

// persisterOf returns saver as the commands' Persister, or a nil interface
// in a replicated group, where SAVE and BGSAVE are refused (RAFT.SNAPSHOT
// snapshots the state machine).
func persisterOf(saver *store.Saver) commands.Persister {
	if saver == nil {
		return nil
	}
	return saver
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
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel(cfg.loglevel)}))
	slog.SetDefault(log)

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

	st := store.New(cfg.shards)
	var ks commands.Keyspace = st
	var node *cluster.Node
	var saver *store.Saver
	if cfg.nodeID != "" || cfg.raftBind != "" {
		// In a group the state comes from the Raft log and its snapshots
		// (in --dir/raft), not from the snapshot file.
		if cfg.nodeID == "" || cfg.raftBind == "" {
			return errors.New("replication needs both --node-id and --raft-bind")
		}
		if cfg.maxmemory > 0 {
			return errors.New("--maxmemory is not supported with replication: replicas that refused different keys would diverge")
		}
		announce := cfg.announceAddr
		if announce == "" {
			announce = net.JoinHostPort(cfg.bind[0], strconv.Itoa(cfg.port))
		}
		ccfg := cluster.Config{
			ID:            cfg.nodeID,
			RaftBind:      cfg.raftBind,
			RaftAdvertise: cfg.raftAdvertise,
			RESPAddr:      announce,
			Dir:           cfg.dir,
			Bootstrap:     bootstrapMode(cfg.bootstrap),
			Peers:         cfg.peers,
			Join:          cfg.join,
			RaftAllow:     cfg.raftAllow,
			Fsync:         cfg.raftFsync == "yes",
			Password:      cfg.requirepass,
			Logger:        log,
		}
		if tlsr != nil {
			// The RESP connections between nodes (forwarding, RAFT.JOIN,
			// RAFT.MEMBERS) stay plaintext until clients can use TLS.
			ccfg.RaftServerTLS, ccfg.RaftClientTLS = tlsr.PeerServerConfig(), tlsr.ClientConfig()
		}
		var err error
		node, err = cluster.Open(ccfg, st)
		if err != nil {
			return err
		}
		defer node.Close()
		ks = node
		cfg.save = 0
		log.Info("replication on", "node_id", cfg.nodeID, "raft_bind", cfg.raftBind, "dir", cfg.dir,
			"fsync", cfg.raftFsync)
	} else {
		policy, err := store.ParsePolicy(cfg.maxmemoryPolicy)
		if err != nil {
			return err
		}
		st.SetMaxMemory(cfg.maxmemory, policy)
		if saver, err = loadSnapshot(log, st, cfg); err != nil {
			return err
		}
	}
	clientMemory, err := cfg.clientMemoryCap()
	if err != nil {
		return err
	}
	stop := newStopper(log, finalSave(log, saver), probeSave(saver), cfg.save > 0)
	var params []commands.Param
	for _, s := range settings {
		params = append(params, commands.Param{Name: s.name, Value: s.get(&cfg)})
	}
	// Redis tools (redis-benchmark) ask for this; sluice has no append-only file.
	params = append(params, commands.Param{Name: "appendonly", Value: "no"})
	srv := commands.NewServer(commands.Config{
		Password:    cfg.requirepass,
		MaxClients:  cfg.maxclients,
		IdleTimeout: cfg.timeout,
		Limits: commands.ReaderLimits{
			MaxBulk:   cfg.protoMaxBulkLen,
			MaxArgs:   cfg.maxMultibulkLen,
			MaxInline: 64 << 10,
		},
		QueryBufferLimit: int(cfg.queryBufferLimit),
		MaxMemoryClients: clientMemory,
		Debug:            cfg.debugCommand,
		LogMaxLimit:      int64(cfg.logMaxLimit),
		Logger:           log,
		Params:           params,
		Persister:        persisterOf(saver),
		Shutdowner:       stop,
		Info: []commands.Param{
			{Name: "config_file", Value: cfg.file},
			{Name: "shards", Value: strconv.Itoa(st.Shards())},
		},
		Cluster:    clusterOf(node),
		EventLoops: cfg.eventLoops,
	}, ks, commands.NewClock())
	// The event loops are the store's deciders; with one, a pipeline's run
	// holds all of its shards at once (0: a goroutine per client).
	st.SetDeciders(srv.EventLoops())

	warnExposed(log, cfg)
	var lns []net.Listener
	for _, host := range cfg.bind {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(cfg.port)))
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return err
		}
		lns = append(lns, ln)
	}
	errs := make(chan error, len(lns))
	for _, ln := range lns {
		log.Info("sluice ready to accept connections", "addr", ln.Addr().String(), "version", commands.Version,
			"shards", st.Shards(), "event_loops", srv.EventLoops(), "debug_command", cfg.debugCommand)
		go func(ln net.Listener) { errs <- srv.Serve(ln) }(ln)
	}

	stopSaves := make(chan struct{})
	if cfg.save > 0 {
		go saver.Run(time.Duration(cfg.save)*time.Second, stopSaves)
	}

	// SIGTERM, SIGINT and SHUTDOWN go to the stopper, which says when and
	// how the process ends.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	hup := make(chan os.Signal, 1) // reloads the TLS certificates; as Redis, never stops the server
	signal.Notify(hup, syscall.SIGHUP)
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
		case end = <-stop.Done():
			waiting = false
		}
	}
	if !end.held {
		// Nothing was saved at exit: let the batches in hand finish.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			log.Warn("clients did not finish in time; closed them", "err", err)
		}
	}
	// Held: the final snapshot is written and the store stays held, so
	// that no decision after it is lost; the process leaves at once, as
	// Redis does after its final save.
	close(stopSaves)
	log.Info("bye", "exit_code", end.code)
	if end.code != exitOK {
		return exitStatus(end.code)
	}
	return nil
}
