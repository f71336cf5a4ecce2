package process

import (
	"io"
	"runtime"

	"github.com/sluice-rl/sluice/cluster"
	"github.com/sluice-rl/sluice/commands"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/rls"
	"github.com/sluice-rl/sluice/server"
	"github.com/sluice-rl/sluice/store"
)

// Options is the resolved configuration: defaults (Defaults), then the
// config file, then the command line, the way redis-server layers them
// (ParseArgs), or defaults and Set. The settings that a package takes live
// in that package's Config, whose DefaultConfig gives the defaults (and
// --help prints them); the rest are the process's own: where to listen,
// the files, the key space's size and limit. Every option is one row of
// the options table (options.go).
type Options struct {
	// Signals: the process catches SIGINT and SIGTERM (a shutdown) and
	// SIGHUP (reloads the TLS certificates and the rules files), and its
	// logger becomes slog's default, as sluice's main wants. A server
	// started inside a test leaves it off.
	Signals bool
	// LogOutput receives the log lines (nil: standard error).
	LogOutput io.Writer

	file            string
	port            int    // the plaintext RESP port (0: none; autoPort: the kernel's choice)
	portsFile       string // where the bound addresses are written (listen.go)
	bind            []string
	shards          int
	loglevel        string
	maxmemory       int64
	maxmemoryPolicy string
	// maxmemory-clients: bytes (server.MaxMemoryClients's default), or a
	// percentage of maxmemory when maxmemClientsPct > 0; 0 bytes: no limit.
	maxmemClients    int64
	maxmemClientsPct int
	dir              string
	dbfilename       string
	save             int // seconds between periodic snapshots; 0: none, and none at shutdown
	// appendonly, appendfilename (in dir), aof-load-corrupt; aof holds
	// appendfsync and the automatic rewrite's thresholds. appendonlySet:
	// appendonly was given, not defaulted (a replicated node refuses it).
	appendonly     bool
	appendonlySet  bool
	appendfilename string
	aofLoadCorrupt bool
	// stopWritesOnSaveError is stop-writes-on-bgsave-error: a failed
	// periodic save refuses changes until a save works.
	stopWritesOnSaveError bool
	aof                   store.AOFConfig
	announceAddr          string // cluster.RESPAddr, if set; else the first --bind and --port

	server   server.Config   // maxclients, timeout, the reader's limits, event-loops
	commands commands.Config // requirepass, enable-debug-command, log-max-limit
	cluster  cluster.Config  // node-id, raft-bind, bootstrap, peers, join, raft-fsync …

	// Rules files, and the Envoy RLS v3 gRPC front end (grpc-bind empty: off).
	policies       []string
	rulesMaxBytes  int64 // rules-max-bytes: policy.Options.MaxBytes
	grpcBind       string
	metricsBind    string // Prometheus /metrics, /healthz, /readyz (empty: off)
	grpcReflection bool
	grpcWorkers    int        // grpc-stream-workers
	grpcLimits     rls.Limits // grpc-max-connections, grpc-max-concurrent-streams, grpc-max-message-size, grpc-connection-timeout, grpc-keepalive-*, grpc-max-connection-idle
	gcHeapFloor    int64      // gc-heap-floor (gcfloor.go)
	rls            rls.Config // grpc-batch, grpc-unknown-domain, grpc-headers, grpc-count-over-limit

	// TLS, with Redis's option names (tls.go): the Raft port's mutual TLS
	// (tls-replication yes).
	tlsCertFile, tlsKeyFile             string
	tlsClientCertFile, tlsClientKeyFile string
	tlsCAFile                           string
	tlsReplication                      string
	tlsPort                             int    // the clients' TLS port (0: none; autoPort: the kernel's choice)
	tlsAuthClients                      string // yes, no or optional
	tlsProtocols, tlsCiphers            string
	tlsCiphersuites                     string
}

func defaultConfig() Options {
	srv := server.DefaultConfig()
	return Options{
		port:                  6380,
		bind:                  []string{"127.0.0.1"},
		shards:                max(4, 2*runtime.GOMAXPROCS(0)), // few shards: a pipeline's keys share locks and their lookups overlap
		loglevel:              "notice",
		maxmemoryPolicy:       "noeviction",
		maxmemClients:         srv.MaxMemoryClients,
		dir:                   ".",
		dbfilename:            "sluice.snap",
		save:                  300,
		stopWritesOnSaveError: true,
		appendfilename:        "appendonly.aof",
		aof:                   store.DefaultAOFConfig(),
		server:                srv,
		commands:              commands.DefaultConfig(),
		cluster:               cluster.DefaultConfig(),
		rls:                   rls.DefaultConfig(),
		grpcWorkers:           rls.DefaultStreamWorkers,
		grpcLimits:            rls.DefaultLimits(),
		gcHeapFloor:           defaultHeapFloor,
		rulesMaxBytes:         policy.DefaultMaxBytes,
		tlsReplication:        "no",
		tlsAuthClients:        "yes",
	}
}

// replicated reports whether the configuration asks for a replicated node.
func (c *Options) replicated() bool { return c.cluster.ID != "" || c.cluster.RaftBind != "" }
