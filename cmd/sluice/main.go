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
	if cfg.nodeID != "" || cfg.raftBind != "" {
		if cfg.nodeID == "" || cfg.raftBind == "" {
			return errors.New("replication needs both --node-id and --raft-bind")
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
		log.Info("replication on", "node_id", cfg.nodeID, "raft_bind", cfg.raftBind, "dir", cfg.dir,
			"fsync", cfg.raftFsync)
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
		Info: []commands.Param{
			{Name: "config_file", Value: cfg.file},
			{Name: "shards", Value: strconv.Itoa(st.Shards())},
		},
		Cluster: clusterOf(node),
	}, ks, commands.NewClock())

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
			"shards", st.Shards(), "debug_command", cfg.debugCommand)
		go func(ln net.Listener) { errs <- srv.Serve(ln) }(ln)
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
	log.Info("bye")
	return nil
}
