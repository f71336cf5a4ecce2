package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
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
		os.Exit(2)
	}
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "sluice:", err)
		os.Exit(1)
	}
}

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
		var err error
		node, err = cluster.Open(cluster.Config{
			ID:            cfg.nodeID,
			RaftBind:      cfg.raftBind,
			RaftAdvertise: cfg.raftAdvertise,
			RESPAddr:      announce,
			Dir:           cfg.dir,
			Bootstrap:     cfg.bootstrap == "yes",
			Join:          cfg.join,
			Fsync:         cfg.raftFsync == "yes",
			Password:      cfg.requirepass,
			Logger:        log,
		}, st)
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
		Debug:            cfg.debugCommand,
		LogMaxLimit:      int64(cfg.logMaxLimit),
		Logger:           log,
		Params:           params,
		Persister:        persisterOf(saver),
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

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case s := <-sig:
		log.Info("shutting down", "signal", s.String())
	case err := <-errs:
		if err != nil && !errors.Is(err, net.ErrClosed) {
			log.Error("listener failed; shutting down", "err", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		log.Warn("clients did not finish in time; closed them", "err", err)
	}
	close(stopSaves)
	if saver != nil {
		saver.Wait()
	}
	if saver != nil && cfg.save > 0 {
		start := time.Now()
		if err := saver.Save(); err != nil {
			log.Error("saving the snapshot at shutdown failed", "path", saver.Path(), "err", err)
		} else {
			log.Info("snapshot saved", "path", saver.Path(), "keys", st.Stats().Keys, "took", time.Since(start))
		}
	}
	log.Info("bye")
	return nil
}

// loadSnapshot makes the snapshot directory if it is missing and loads the
// snapshot file if there is one. A file that cannot be read whole stops the
// start: starting empty would hand every client a fresh burst.
func loadSnapshot(log *slog.Logger, st *store.Store, cfg config) (*store.Saver, error) {
	if err := os.MkdirAll(cfg.dir, 0o755); err != nil {
		return nil, fmt.Errorf("--dir %s: %w", cfg.dir, err)
	}
	path := filepath.Join(cfg.dir, cfg.dbfilename)
	start := time.Now()
	lf, err := st.LoadFile(path)
	if err != nil {
		return nil, fmt.Errorf("refusing to start: %w (move the file away to start with no state)", err)
	}
	if lf.Loaded {
		log.Info("snapshot loaded", "path", path, "keys", st.Stats().Keys, "took", time.Since(start))
	}
	return store.NewSaver(st, path), nil
}
