package process

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
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

// Options is the resolved configuration: defaults (Defaults), then the
// config file, then the command line, the way redis-server layers them
// (ParseArgs), or defaults and Set. The settings that a package takes live
// in that package's Config, whose DefaultConfig gives the defaults (and
// --help prints them); the rest are the process's own: where to listen,
// the files, the key space's size and limit. Every option is one row of
// the options table (below).
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

	// upstream-*: a lease-backed tier over an upstream sluice (--upstream
	// empty: off); its fallback is read from upstreamFallback at start.
	upstream         lease.Config
	upstreamFallback string
	upstreamTTLms    int
	upstreamTimeout  int // ms

	server   server.Config   // maxclients, timeout, the reader's limits, event-loops
	commands commands.Config // requirepass, enable-debug-command, log-max-limit
	cluster  cluster.Config  // node-id, raft-bind, bootstrap, peers, join, raft-fsync, cluster-group …

	// timerSlackUs is --timer-slack-us (TimerSlack); 0: leave the inherited slack.
	timerSlackUs int
	// monitorAwake is --runtime-monitor-awake (MonitorAwake): yes, no or auto.
	monitorAwake string

	clusterSeed   string // --cluster-seed: a cluster node to join the meta group through
	clusterGroups int    // --cluster-groups
	clusterProxy  bool   // --cluster-proxy

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
		upstream:              lease.Config{Share: 0.25},
		upstreamFallback:      "closed",
		upstreamTTLms:         1000,
		upstreamTimeout:       1000,
		save:                  300,
		stopWritesOnSaveError: true,
		appendfilename:        "appendonly.aof",
		aof:                   store.DefaultAOFConfig(),
		server:                srv,
		commands:              commands.DefaultConfig(),
		cluster:               cluster.DefaultConfig(),
		clusterGroups:         3,
		rls:                   rls.DefaultConfig(),
		grpcWorkers:           rls.DefaultStreamWorkers,
		grpcLimits:            rls.DefaultLimits(),
		gcHeapFloor:           defaultHeapFloor,
		// The runtime's monitor thread sleeps 20 µs at a time while the
		// process switches between work and waiting, as a group's nodes do
		// at every fsync and message; 1 ms of slack lets those sleeps end
		// together, and costs the event-driven server nothing it waits on.
		timerSlackUs:   1000,
		monitorAwake:   "auto",
		rulesMaxBytes:  policy.DefaultMaxBytes,
		tlsReplication: "no",
		tlsAuthClients: "yes",
	}
}

// TimerSlack is the timer slack --timer-slack-us asks the process to run
// with (0: the inherited one). The process cannot give it to the threads
// the Go runtime started before main, sysmon among them, so sluice's main
// sets it and re-executes the binary, whose threads then all inherit it.
func (c *Options) TimerSlack() time.Duration { return time.Duration(c.timerSlackUs) * time.Microsecond }

// MonitorAwake reports whether --runtime-monitor-awake asks the process
// to keep the Go runtime's monitor thread out of its deep sleep: yes, or
// auto on a replicated or sharded node. Like the timer slack, it is set
// before the runtime starts, so sluice's main re-executes the binary with
// it (the environment's GODEBUG plus schedtrace).
func (c *Options) MonitorAwake() bool {
	switch c.monitorAwake {
	case "yes":
		return true
	case "auto":
		return c.replicated() || c.clusterSeed != ""
	}
	return false
}

// replicated reports whether the configuration asks for a replicated node.
func (c *Options) replicated() bool { return c.cluster.ID != "" || c.cluster.RaftBind != "" }

// The options table: one row per option, which drives the config file and
// the flags (ParseArgs), --help (Usage), CONFIG GET, SET and REWRITE
// (settings.go, rewrite.go), and the check that the docs' option tables
// (docs/configuration.md, docs/replication.md) match it (options_test.go).
// A new option is its field in Options (above), its default in
// defaultConfig if not the zero value, its row here, and its row in a docs'
// table: this file and the docs.

// option is one configuration directive.
type option struct {
	name string
	// doc is the one line --help prints.
	doc string
	// docDefault is the default as the docs' table writes it, for a
	// default that the value get prints does not say (one computed at
	// start, or an empty value that means something); "": the docs'
	// default is a value that set reads as the default.
	docDefault string
	// list: the value is several words (CONFIG SET splits it, CONFIG
	// REWRITE writes it as words).
	list bool
	// live applies a new value to the running server: CONFIG SET changes
	// the option. nil: the option is immutable while serving, as in Redis.
	live func(l *liveConfig, c *Options) error
	// set reads the directive's words into c; get prints c's value as
	// CONFIG GET and CONFIG REWRITE write it.
	set func(c *Options, args []string) error
	get func(c *Options) string
}

var options = []option{
	{name: "port",
		doc: "the plaintext RESP port; 0: none (serve --tls-port only); auto: a free port the kernel chooses",
		set: func(c *Options, a []string) error { return portArg(a, &c.port) },
		get: func(c *Options) string { return portString(c.port) }},
	{name: "ports-file",
		doc: "a file written once every listener serves, one \"name host:port\" line per address (resp, tls, raft, grpc, metrics)",
		set: func(c *Options, a []string) error { return stringArg(a, &c.portsFile) },
		get: func(c *Options) string { return c.portsFile }},
	{name: "bind",
		doc:  "the addresses the RESP and TLS ports listen on (several words)",
		list: true,
		set: func(c *Options, a []string) error {
			if len(a) == 0 {
				return errors.New("wrong number of arguments")
			}
			c.bind = append([]string(nil), a...)
			return nil
		},
		get: func(c *Options) string { return strings.Join(c.bind, " ") }},
	{name: "requirepass",
		doc:  "the default user's password, for AUTH and HELLO … AUTH",
		live: applyRequirepass,
		set:  func(c *Options, a []string) error { return stringArg(a, &c.commands.Password) },
		get:  func(c *Options) string { return c.commands.Password }},
	{name: "maxclients",
		doc:  "connections served at once; one more gets -ERR max number of clients reached",
		live: applyMaxClients,
		set:  func(c *Options, a []string) error { return intArg(a, 1, 1<<20, &c.server.MaxClients) },
		get:  func(c *Options) string { return strconv.Itoa(c.server.MaxClients) }},
	{name: "timeout",
		doc:  "seconds a client may be idle before it is closed (0: never)",
		live: applyTimeout,
		set:  func(c *Options, a []string) error { return secondsArg(a, &c.server.IdleTimeout) },
		get:  func(c *Options) string { return strconv.Itoa(int(c.server.IdleTimeout.Seconds())) }},
	{name: "shards",
		doc:        "lock shards of the key space (rounded up to a power of two)",
		docDefault: "2 × GOMAXPROCS, at least 4",
		set:        func(c *Options, a []string) error { return intArg(a, 1, 1<<16, &c.shards) },
		get:        func(c *Options) string { return strconv.Itoa(c.shards) }},
	{name: "timer-slack-us",
		doc: "the kernel's timer slack for the process's threads, in microseconds, set at start by re-executing the binary (Linux); 0: the slack the process inherits",
		set: func(c *Options, a []string) error { return intArg(a, 0, 100000, &c.timerSlackUs) },
		get: func(c *Options) string { return strconv.Itoa(c.timerSlackUs) }},
	{name: "runtime-monitor-awake",
		doc: "yes: keep the Go runtime's monitor thread from its deep sleep, so that it is not woken at each return from waiting (set at start, with the timer slack's re-execution); no; auto: yes on a replicated or sharded node",
		set: func(c *Options, a []string) error { return enumArg(a, &c.monitorAwake, "auto", "yes", "no") },
		get: func(c *Options) string { return c.monitorAwake }},
	{name: "event-loops",
		doc:        "epoll loops serving the clients (0: a goroutine per client)",
		docDefault: "GOMAXPROCS",
		set:        func(c *Options, a []string) error { return intArg(a, 0, 1024, &c.server.EventLoops) },
		get:        func(c *Options) string { return strconv.Itoa(c.server.EventLoops) }},
	// rename-command NAME NEWNAME, repeated; NEWNAME "" hides NAME.
	{name: "rename-command",
		doc: "NAME NEWNAME, repeatable: the command answers only as NEWNAME; \"\" hides it",
		set: func(c *Options, a []string) error {
			if len(a) != 2 {
				return fmt.Errorf("wants a command and its new name (\"\" to hide it), got %d values", len(a))
			}
			c.commands.Renames = append(c.commands.Renames, commands.Rename{From: a[0], To: a[1]})
			return nil
		},
		get: func(c *Options) string {
			var parts []string
			for _, r := range c.commands.Renames {
				parts = append(parts, r.From+" "+r.To)
			}
			return strings.Join(parts, " ")
		}},
	{name: "protected-mode",
		doc: "while the default user has no password, clients not on loopback are refused",
		set: func(c *Options, a []string) error { return boolArg(a, &c.commands.ProtectedMode) },
		get: func(c *Options) string { return yesNo(c.commands.ProtectedMode) }},
	{name: "aclfile",
		doc: "ACL users in Redis's aclfile format, loaded at start, ACL LOAD and ACL SAVE",
		set: func(c *Options, a []string) error { return stringArg(a, &c.commands.ACLFile) },
		get: func(c *Options) string { return c.commands.ACLFile }},
	{name: "enable-debug-command",
		doc: "yes, local or no: whether DEBUG (DEBUG CLOCK) is served, and to whom",
		set: func(c *Options, a []string) error {
			var v string
			err := enumArg(a, &v, string(commands.DebugYes), string(commands.DebugNo), string(commands.DebugLocal))
			if err == nil {
				c.commands.Debug = commands.DebugMode(v)
			}
			return err
		},
		get: func(c *Options) string { return string(c.commands.Debug) }},
	{name: "loglevel",
		doc:  "debug, verbose, notice, warning or nothing (structured logs on stderr)",
		live: applyLoglevel,
		set: func(c *Options, a []string) error {
			return enumArg(a, &c.loglevel, "debug", "verbose", "notice", "warning", "nothing")
		},
		get: func(c *Options) string { return c.loglevel }},
	{name: "proto-max-bulk-len",
		doc:  "the longest argument a command may have",
		live: applyMaxBulk,
		set:  func(c *Options, a []string) error { return memArg(a, 1, 1<<30, &c.server.Limits.MaxBulk) },
		get:  func(c *Options) string { return strconv.FormatInt(c.server.Limits.MaxBulk, 10) }},
	{name: "proto-max-multibulk-len",
		doc: "the most arguments one command may have",
		set: func(c *Options, a []string) error {
			return memArg(a, 1, 1<<31-1, &c.server.Limits.MaxArgs)
		},
		get: func(c *Options) string { return strconv.FormatInt(c.server.Limits.MaxArgs, 10) }},
	{name: "client-query-buffer-limit",
		doc:  "the most bytes buffered for one client's unfinished command",
		live: applyQueryBufferLimit,
		set: func(c *Options, a []string) error {
			var n int64
			err := memArg(a, 1<<10, 1<<31-1, &n)
			if err == nil {
				c.server.QueryBufferLimit = int(n)
			}
			return err
		},
		get: func(c *Options) string { return strconv.Itoa(c.server.QueryBufferLimit) }},
	{name: "maxmemory",
		doc:  "cap on the key space's bytes; past it, new and growing keys get -OOM (0: none)",
		live: applyMaxMemory,
		set:  func(c *Options, a []string) error { return memArg(a, 0, 1<<50, &c.maxmemory) },
		get:  func(c *Options) string { return strconv.FormatInt(c.maxmemory, 10) }},
	{name: "maxmemory-clients",
		doc: "the most bytes all clients' buffers hold together: a size, or a share of maxmemory (10%); 0: no limit",
		set: func(c *Options, a []string) error {
			v, err := oneArg(a)
			if err != nil {
				return err
			}
			c.maxmemClients, c.maxmemClientsPct, err = parseClientMemory(v)
			return err
		},
		get: func(c *Options) string {
			if c.maxmemClientsPct > 0 {
				return strconv.Itoa(c.maxmemClientsPct) + "%"
			}
			return strconv.FormatInt(c.maxmemClients, 10)
		}},
	{name: "maxmemory-policy",
		doc:  "noeviction, or volatile-ttl: evict the entries nearest to expiry",
		live: applyMaxMemory,
		set: func(c *Options, a []string) error {
			return enumArg(a, &c.maxmemoryPolicy, "noeviction", "volatile-ttl")
		},
		get: func(c *Options) string { return c.maxmemoryPolicy }},
	{name: "dir",
		doc: "where the snapshot, the append-only log or a replicated node's Raft state lives; one server per directory",
		set: func(c *Options, a []string) error { return stringArg(a, &c.dir) },
		get: func(c *Options) string { return c.dir }},
	{name: "dbfilename",
		doc: "the snapshot file's name, in --dir",
		set: func(c *Options, a []string) error {
			if err := stringArg(a, &c.dbfilename); err != nil {
				return err
			}
			if c.dbfilename == "" || strings.ContainsRune(c.dbfilename, '/') {
				return fmt.Errorf("%q must be a file name, without a directory (that is --dir)", c.dbfilename)
			}
			return nil
		},
		get: func(c *Options) string { return c.dbfilename }},
	{name: "save", list: true,
		doc:  "seconds between background snapshots, and a snapshot at shutdown (0: neither); Redis's \"seconds changes\" pairs too, the shortest period counting (CONFIG GET answers \"300 0\": every 300 s, changes or not)",
		live: applySave,
		set:  func(c *Options, a []string) error { return parseSave(a, &c.save) },
		get: func(c *Options) string { // Redis's "seconds changes": a save every c.save s, changes or not
			if c.save == 0 {
				return ""
			}
			return strconv.Itoa(c.save) + " 0"
		}},
	{name: "appendonly",
		doc: "yes: keep an append-only log of every change (not on a replicated node)",
		set: func(c *Options, a []string) error {
			c.appendonlySet = true
			return boolArg(a, &c.appendonly)
		},
		get: func(c *Options) string { return yesNo(c.appendonly) }},
	{name: "appendfsync",
		doc: "when the log reaches the disk: always, everysec or no",
		set: func(c *Options, a []string) error {
			var v string
			err := enumArg(a, &v, string(store.FsyncAlways), string(store.FsyncEverySec), string(store.FsyncNo))
			if err == nil {
				c.aof.Fsync, err = store.ParseFsync(v)
			}
			return err
		},
		get: func(c *Options) string { return string(c.aof.Fsync) }},
	{name: "appendfilename",
		doc: "the append-only log's file name, in --dir",
		set: func(c *Options, a []string) error {
			if err := stringArg(a, &c.appendfilename); err != nil {
				return err
			}
			if c.appendfilename == "" || strings.ContainsRune(c.appendfilename, '/') {
				return fmt.Errorf("%q must be a file name, without a directory (that is --dir)", c.appendfilename)
			}
			return nil
		},
		get: func(c *Options) string { return c.appendfilename }},
	{name: "auto-aof-rewrite-percentage",
		doc: "rewrite the log once it has grown this much (%) over its size after the last rewrite (0: never)",
		set: func(c *Options, a []string) error {
			var n int
			err := intArg(a, 0, 1<<30, &n)
			c.aof.AutoRewritePercentage = int64(n)
			return err
		},
		get: func(c *Options) string { return strconv.FormatInt(c.aof.AutoRewritePercentage, 10) }},
	{name: "auto-aof-rewrite-min-size",
		doc: "… and once it is at least this large",
		set: func(c *Options, a []string) error { return memArg(a, 0, 1<<50, &c.aof.AutoRewriteMinSize) },
		get: func(c *Options) string { return strconv.FormatInt(c.aof.AutoRewriteMinSize, 10) }},
	{name: "aof-load-corrupt",
		doc: "yes: start from a log that is corrupt before its tail, skipping what cannot be read",
		set: func(c *Options, a []string) error { return boolArg(a, &c.aofLoadCorrupt) },
		get: func(c *Options) string { return yesNo(c.aofLoadCorrupt) }},
	{name: "stop-writes-on-bgsave-error",
		doc: "a failed background save refuses every change with MISCONF until a save works",
		set: func(c *Options, a []string) error { return boolArg(a, &c.stopWritesOnSaveError) },
		get: func(c *Options) string { return yesNo(c.stopWritesOnSaveError) }},
	{name: "node-id",
		doc: "this node's id in a replicated group: unique, and kept across restarts",
		set: func(c *Options, a []string) error { return stringArg(a, &c.cluster.ID) },
		get: func(c *Options) string { return c.cluster.ID }},
	{name: "raft-bind",
		doc: "host:port of the Raft port (port 0: one the kernel chooses)",
		set: func(c *Options, a []string) error { return stringArg(a, &c.cluster.RaftBind) },
		get: func(c *Options) string { return c.cluster.RaftBind }},
	{name: "raft-advertise",
		doc:        "the Raft address the peers dial",
		docDefault: "`--raft-bind`",
		set:        func(c *Options, a []string) error { return stringArg(a, &c.cluster.RaftAdvertise) },
		get:        func(c *Options) string { return c.cluster.RaftAdvertise }},
	{name: "announce-addr",
		doc:        "the RESP address the other nodes forward clients' commands to",
		docDefault: "first `--bind`, `--port`",
		set:        func(c *Options, a []string) error { return stringArg(a, &c.announceAddr) },
		get:        func(c *Options) string { return c.announceAddr }},
	{name: "bootstrap",
		doc: "yes: start a new group if none exists; force: start one without asking; no",
		set: func(c *Options, a []string) error {
			var v string
			if err := enumArg(a, &v, "yes", "no", "force"); err != nil {
				return err
			}
			c.cluster.Bootstrap = bootstrapModes[v]
			return nil
		},
		get: func(c *Options) string {
			for name, m := range bootstrapModes {
				if m == c.cluster.Bootstrap {
					return name
				}
			}
			return ""
		}},
	{name: "peers",
		doc:  "the other members' RESP addresses, asked first by --bootstrap yes (several words)",
		list: true,
		set:  func(c *Options, a []string) error { return listArg(a, &c.cluster.Peers) },
		get:  func(c *Options) string { return strings.Join(c.cluster.Peers, " ") }},
	{name: "join",
		doc: "a member's RESP address: a node with no Raft state asks it to add this node",
		set: func(c *Options, a []string) error { return stringArg(a, &c.cluster.Join) },
		get: func(c *Options) string { return c.cluster.Join }},
	{name: "raft-allow",
		doc:  "addresses and prefixes the Raft port admits besides the members' (any: no check)",
		list: true,
		set:  func(c *Options, a []string) error { return listArg(a, &c.cluster.RaftAllow) },
		get:  func(c *Options) string { return strings.Join(c.cluster.RaftAllow, " ") }},
	{name: "cluster-group",
		doc: "this node's data group in a sharded cluster, 1 and up (0: a single node or group that serves every slot)",
		set: func(c *Options, a []string) error {
			var g int
			err := intArg(a, 0, 65535, &g)
			c.cluster.Shard = uint16(g)
			return err
		},
		get: func(c *Options) string { return strconv.Itoa(int(c.cluster.Shard)) }},
	{name: "cluster-seed",
		doc: "a sharded cluster node's RESP address, through which this node joins the meta group (all but group 1's bootstrapping node)",
		set: func(c *Options, a []string) error { return stringArg(a, &c.clusterSeed) },
		get: func(c *Options) string { return c.clusterSeed }},
	{name: "cluster-groups",
		doc: "the number of data groups a new sharded cluster splits the 16384 slots among, evenly",
		set: func(c *Options, a []string) error { return intArg(a, 1, 1024, &c.clusterGroups) },
		get: func(c *Options) string { return strconv.Itoa(c.clusterGroups) }},
	{name: "cluster-proxy",
		doc: "a sharded cluster node runs a command of another group's slot on that group's leader and relays the reply, instead of answering MOVED (for clients that cannot follow redirects)",
		set: func(c *Options, a []string) error { return boolArg(a, &c.clusterProxy) },
		get: func(c *Options) string { return yesNo(c.clusterProxy) }},
	{name: "raft-fsync",
		doc: "fsync the Raft log on every write",
		set: func(c *Options, a []string) error { return boolArg(a, &c.cluster.Fsync) },
		get: func(c *Options) string { return yesNo(c.cluster.Fsync) }},
	{name: "raft-log-store",
		doc: "the Raft log's store in a --dir with none yet: wal (one fsync per append) or bolt; an existing log keeps its own",
		set: func(c *Options, a []string) error {
			var v string
			err := enumArg(a, &v, string(cluster.LogStoreWAL), string(cluster.LogStoreBolt))
			if err == nil {
				c.cluster.LogStore = cluster.LogStore(v)
			}
			return err
		},
		get: func(c *Options) string { return string(c.cluster.LogStore) }},
	{name: "tls-port",
		doc: "the TLS port, beside --port on every --bind address (0: none; auto: as --port auto)",
		set: func(c *Options, a []string) error { return portArg(a, &c.tlsPort) },
		get: func(c *Options) string { return portString(c.tlsPort) }},
	{name: "tls-auth-clients",
		doc: "yes: TLS clients must present a certificate from --tls-ca-cert-file; optional; no",
		set: func(c *Options, a []string) error { return enumArg(a, &c.tlsAuthClients, "yes", "no", "optional") },
		get: func(c *Options) string { return c.tlsAuthClients }},
	{name: "tls-cert-file",
		doc: "this server's PEM certificate",
		set: func(c *Options, a []string) error { return stringArg(a, &c.tlsCertFile) },
		get: func(c *Options) string { return c.tlsCertFile }},
	{name: "tls-key-file",
		doc: "this server's PEM private key",
		set: func(c *Options, a []string) error { return stringArg(a, &c.tlsKeyFile) },
		get: func(c *Options) string { return c.tlsKeyFile }},
	{name: "tls-client-cert-file",
		doc: "a separate certificate for the connections this node opens",
		set: func(c *Options, a []string) error { return stringArg(a, &c.tlsClientCertFile) },
		get: func(c *Options) string { return c.tlsClientCertFile }},
	{name: "tls-client-key-file",
		doc: "the private key of --tls-client-cert-file",
		set: func(c *Options, a []string) error { return stringArg(a, &c.tlsClientKeyFile) },
		get: func(c *Options) string { return c.tlsClientKeyFile }},
	{name: "tls-ca-cert-file",
		doc: "the CA bundle clients' and peers' certificates must chain to",
		set: func(c *Options, a []string) error { return stringArg(a, &c.tlsCAFile) },
		get: func(c *Options) string { return c.tlsCAFile }},
	{name: "tls-replication",
		doc: "yes: every connection to and from the Raft port is mutual TLS",
		set: func(c *Options, a []string) error { return enumArg(a, &c.tlsReplication, "yes", "no") },
		get: func(c *Options) string { return c.tlsReplication }},
	{name: "tls-protocols",
		doc:        "the TLS versions, as a range (TLSv1.2 TLSv1.3)",
		docDefault: "`TLSv1.2 TLSv1.3`",
		set: func(c *Options, a []string) error {
			if len(a) == 0 {
				return errors.New("wrong number of arguments")
			}
			v := strings.Join(a, " ") // tls-protocols TLSv1.2 TLSv1.3, quoted or not
			if _, _, err := certs.ParseProtocols(v); err != nil {
				return err
			}
			c.tlsProtocols = v
			return nil
		},
		get: func(c *Options) string { return c.tlsProtocols }},
	{name: "tls-ciphers",
		doc:        "TLS ≤ 1.2 ciphers in OpenSSL's list syntax",
		docDefault: "crypto/tls's",
		set: func(c *Options, a []string) error {
			if err := stringArg(a, &c.tlsCiphers); err != nil {
				return err
			}
			_, err := certs.ParseCiphers(c.tlsCiphers)
			return err
		},
		get: func(c *Options) string { return c.tlsCiphers }},
	{name: "tls-ciphersuites",
		doc:        "TLS 1.3 suites (a list must name all three)",
		docDefault: "all three",
		set: func(c *Options, a []string) error {
			if err := stringArg(a, &c.tlsCiphersuites); err != nil {
				return err
			}
			return certs.CheckCiphersuites(c.tlsCiphersuites)
		},
		get: func(c *Options) string { return c.tlsCiphersuites }},
	// The largest limit RL.LOG and RL.ACQUIRE accept: their state holds 8
	// bytes per logged unit, 16 per lease holder.
	// SLOWLOG: batches at least this slow (µs; -1: none), and the entries kept.
	{name: "slowlog-log-slower-than",
		doc:  "SLOWLOG logs the batches that take at least this many microseconds (-1: none, 0: all)",
		live: applySlowlog,
		set: func(c *Options, a []string) error {
			var n int
			err := intArg(a, -1, 1<<31-1, &n)
			c.commands.SlowlogSlowerThan = int64(n)
			return err
		},
		get: func(c *Options) string { return strconv.FormatInt(c.commands.SlowlogSlowerThan, 10) }},
	{name: "slowlog-max-len",
		doc:  "the entries SLOWLOG keeps",
		live: applySlowlog,
		set: func(c *Options, a []string) error {
			var n int
			err := intArg(a, 0, 1<<31-1, &n)
			c.commands.SlowlogMaxLen = int64(n)
			return err
		},
		get: func(c *Options) string { return strconv.FormatInt(c.commands.SlowlogMaxLen, 10) }},
	// The counters of each heavy-hitters sketch RL.TOP reads (0: off).
	{name: "top-keys",
		doc: "counters of each heavy-hitters sketch behind RL.TOP (0: off)",
		set: func(c *Options, a []string) error {
			return intArg(a, 0, commands.MaxTopKeys, &c.commands.TopKeys)
		},
		get: func(c *Options) string { return strconv.Itoa(c.commands.TopKeys) }},
	{name: "log-max-limit",
		doc: "the largest limit RL.LOG and RL.ACQUIRE accept",
		set: func(c *Options, a []string) error {
			var n int
			err := intArg(a, 1, 100_000_000, &n)
			if err == nil {
				c.commands.LogMaxLimit = int64(n)
			}
			return err
		},
		get: func(c *Options) string { return strconv.FormatInt(c.commands.LogMaxLimit, 10) }},
	// The most limits one RL.ALL may name, and the most units its LOG
	// limits may log together (n times their number): a group holds the
	// locks of every shard it touches while it decides.
	{name: "all-max-limits",
		doc: "the most limits one RL.ALL may name",
		set: func(c *Options, a []string) error {
			var n int
			err := intArg(a, 1, 1<<20, &n)
			if err == nil {
				c.commands.AllMaxLimits = int64(n)
			}
			return err
		},
		get: func(c *Options) string { return strconv.FormatInt(c.commands.AllMaxLimits, 10) }},
	{name: "all-max-log-units",
		doc: "the most units one RL.ALL's LOG limits may log together",
		set: func(c *Options, a []string) error {
			var n int
			err := intArg(a, 1, 1<<40, &n)
			if err == nil {
				c.commands.AllMaxLogUnits = int64(n)
			}
			return err
		},
		get: func(c *Options) string { return strconv.FormatInt(c.commands.AllMaxLogUnits, 10) }},
	// Rules files (envoyproxy/ratelimit's YAML) and directories of them.
	{name: "policies",
		doc:  "rules files (envoyproxy/ratelimit's YAML) and directories of them; reloaded on change and on SIGHUP",
		list: true,
		set:  func(c *Options, a []string) error { return listArg(a, &c.policies) },
		get:  func(c *Options) string { return strings.Join(c.policies, " ") }},
	// The most bytes the rules files may hold together: a set past it is
	// refused unparsed.
	{name: "rules-max-bytes",
		doc: "the most bytes the --policies files may hold together",
		set: func(c *Options, a []string) error { return memArg(a, 1, 1<<30, &c.rulesMaxBytes) },
		get: func(c *Options) string { return strconv.FormatInt(c.rulesMaxBytes, 10) }},
	// A lease-backed tier over an upstream (docs/leases.md).
	{name: "upstream",
		doc: "host:port of an upstream sluice: serve leased keys from tokens taken ahead (RL.TAKE), forward the rest (empty: off)",
		set: func(c *Options, a []string) error { return addrArg(a, &c.upstream.Upstream) },
		get: func(c *Options) string { return c.upstream.Upstream }},
	{name: "upstream-lease-keys",
		doc:        "glob pattern of the keys served from leased stock; the others are forwarded",
		docDefault: "`*` (every key)",
		set:        func(c *Options, a []string) error { return stringArg(a, &c.upstream.Keys) },
		get:        func(c *Options) string { return c.upstream.Keys }},
	{name: "upstream-lease-hot",
		doc: "lease only the N keys (of those --upstream-lease-keys matches) with the most requests over the last 1-2 s, as RL.TOP counts them, and forward the rest (0: every matching key)",
		set: func(c *Options, a []string) error { return intArg(a, 0, 1<<20, &c.upstream.Hot) },
		get: func(c *Options) string { return strconv.Itoa(c.upstream.Hot) }},
	{name: "upstream-user",
		doc:        "the ACL user the tier authenticates to the upstream as (with --upstream-password)",
		docDefault: "(none: the default user)",
		set:        func(c *Options, a []string) error { return stringArg(a, &c.upstream.User) },
		get:        func(c *Options) string { return c.upstream.User }},
	{name: "upstream-password",
		doc:        "the password the tier sends with AUTH on each connection to the upstream (empty: no AUTH)",
		docDefault: "(none)",
		set:        func(c *Options, a []string) error { return stringArg(a, &c.upstream.Password) },
		get:        func(c *Options) string { return c.upstream.Password }},
	{name: "upstream-fallback",
		doc: "while the upstream is unreachable and the stock is spent: closed (deny) or local-share",
		set: func(c *Options, a []string) error { return enumArg(a, &c.upstreamFallback, "closed", "local-share") },
		get: func(c *Options) string { return c.upstreamFallback }},
	{name: "upstream-local-share",
		doc: "local-share's fraction of each limit, from 0.001 to 1",
		set: func(c *Options, a []string) error {
			v, err := oneArg(a)
			if err != nil {
				return err
			}
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || !(f >= 0.001 && f <= 1) {
				return fmt.Errorf("%q is not a fraction from 0.001 to 1", v)
			}
			c.upstream.Share = f
			return nil
		},
		get: func(c *Options) string { return strconv.FormatFloat(c.upstream.Share, 'g', -1, 64) }},
	{name: "upstream-lease-ttl",
		doc: "milliseconds a leased key may go unused before its unspent tokens go back to the upstream",
		set: func(c *Options, a []string) error { return intArg(a, 10, 1<<31-1, &c.upstreamTTLms) },
		get: func(c *Options) string { return strconv.Itoa(c.upstreamTTLms) }},
	{name: "upstream-timeout",
		doc: "milliseconds an upstream round trip may take before the upstream counts as unreachable",
		set: func(c *Options, a []string) error { return intArg(a, 1, 1<<31-1, &c.upstreamTimeout) },
		get: func(c *Options) string { return strconv.Itoa(c.upstreamTimeout) }},
	// Prometheus's scrape endpoint and the probes (observe.go).
	{name: "metrics-bind",
		doc: "host:port of the Prometheus endpoint: /metrics, /healthz, /readyz (empty: off)",
		set: func(c *Options, a []string) error { return addrArg(a, &c.metricsBind) },
		get: func(c *Options) string { return c.metricsBind }},
	// The Envoy RLS v3 gRPC front end (policies.go).
	{name: "grpc-bind",
		doc: "host:port of the Envoy rate limit service, RLS v3 gRPC (empty: off)",
		set: func(c *Options, a []string) error { return addrArg(a, &c.grpcBind) },
		get: func(c *Options) string { return c.grpcBind }},
	{name: "grpc-reflection",
		doc: "yes: serve gRPC reflection",
		set: func(c *Options, a []string) error { return boolArg(a, &c.grpcReflection) },
		get: func(c *Options) string { return yesNo(c.grpcReflection) }},
	{name: "grpc-stream-workers",
		doc: "goroutines that wait to serve gRPC calls (0: a goroutine per call)",
		set: func(c *Options, a []string) error { return intArg(a, 0, 1<<16, &c.grpcWorkers) },
		get: func(c *Options) string { return strconv.Itoa(c.grpcWorkers) }},
	// What the gRPC front end holds for its clients (rls.Limits).
	{name: "grpc-max-connections",
		doc: "gRPC connections served at once",
		set: func(c *Options, a []string) error { return intArg(a, 1, 1<<20, &c.grpcLimits.MaxConnections) },
		get: func(c *Options) string { return strconv.Itoa(c.grpcLimits.MaxConnections) }},
	{name: "grpc-max-concurrent-streams",
		doc: "calls in progress on one gRPC connection",
		set: func(c *Options, a []string) error {
			var n int
			err := intArg(a, 1, 1<<20, &n)
			c.grpcLimits.MaxConcurrentStreams = uint32(n)
			return err
		},
		get: func(c *Options) string { return strconv.FormatUint(uint64(c.grpcLimits.MaxConcurrentStreams), 10) }},
	{name: "grpc-max-message-size",
		doc: "the largest gRPC request and reply",
		set: func(c *Options, a []string) error {
			var n int64
			err := memArg(a, 1<<10, 1<<30, &n)
			if err == nil {
				c.grpcLimits.MaxMessageSize = int(n)
			}
			return err
		},
		get: func(c *Options) string { return strconv.Itoa(c.grpcLimits.MaxMessageSize) }},
	{name: "grpc-connection-timeout",
		doc: "seconds a new gRPC connection has to complete the HTTP/2 handshake",
		set: func(c *Options, a []string) error { return positiveSeconds(a, &c.grpcLimits.ConnectionTimeout) },
		get: func(c *Options) string { return strconv.Itoa(int(c.grpcLimits.ConnectionTimeout.Seconds())) }},
	{name: "grpc-keepalive-time",
		doc: "seconds a gRPC connection may be silent before the server pings it",
		set: func(c *Options, a []string) error { return positiveSeconds(a, &c.grpcLimits.KeepaliveTime) },
		get: func(c *Options) string { return strconv.Itoa(int(c.grpcLimits.KeepaliveTime.Seconds())) }},
	{name: "grpc-keepalive-timeout",
		doc: "seconds the server waits for the ping's answer before it closes the connection",
		set: func(c *Options, a []string) error { return positiveSeconds(a, &c.grpcLimits.KeepaliveTimeout) },
		get: func(c *Options) string { return strconv.Itoa(int(c.grpcLimits.KeepaliveTimeout.Seconds())) }},
	{name: "grpc-max-connection-idle",
		doc: "seconds without a call before a gRPC connection is sent GOAWAY (0: never)",
		set: func(c *Options, a []string) error { return secondsArg(a, &c.grpcLimits.MaxConnectionIdle) },
		get: func(c *Options) string { return strconv.Itoa(int(c.grpcLimits.MaxConnectionIdle.Seconds())) }},
	// The collector's heap floor (gcfloor.go).
	{name: "gc-heap-floor",
		doc: "keep the Go collector's goal at least this far above the live heap (0: GOGC alone)",
		set: func(c *Options, a []string) error { return memArg(a, 0, 1<<40, &c.gcHeapFloor) },
		get: func(c *Options) string { return strconv.FormatInt(c.gcHeapFloor, 10) }},
	{name: "grpc-headers",
		doc: "headers the RLS answer asks Envoy to add: no, ietf, x-ratelimit or ratelimit-limit",
		set: func(c *Options, a []string) error { return namedArg(a, &c.rls.Headers, rlsHeaders) },
		get: func(c *Options) string { return nameOf(c.rls.Headers, rlsHeaders) }},
	{name: "grpc-unknown-domain",
		doc: "a domain without rules: ok, over-limit or error",
		set: func(c *Options, a []string) error { return namedArg(a, &c.rls.UnknownDomain, rlsUnknownDomains) },
		get: func(c *Options) string { return nameOf(c.rls.UnknownDomain, rlsUnknownDomains) }},
	{name: "grpc-batch",
		doc: "descriptor: each descriptor decided on its own; call: one all-or-nothing decision per call",
		set: func(c *Options, a []string) error { return namedArg(a, &c.rls.Batch, rlsBatches) },
		get: func(c *Options) string { return nameOf(c.rls.Batch, rlsBatches) }},
	{name: "grpc-count-over-limit",
		doc: "yes: a descriptor over its limit takes what it has left",
		set: func(c *Options, a []string) error { return boolArg(a, &c.rls.CountOverLimit) },
		get: func(c *Options) string { return yesNo(c.rls.CountOverLimit) }},
}

// The values of the --grpc-* settings that name an rls constant.
var (
	rlsHeaders = []named[rls.Headers]{{"no", rls.HeadersOff}, {"ietf", rls.HeadersIETF},
		{"x-ratelimit", rls.HeadersXRateLimit}, {"ratelimit-limit", rls.HeadersRateLimitTrio}}
	rlsUnknownDomains = []named[rls.UnknownDomain]{{"ok", rls.UnknownDomainOK},
		{"over-limit", rls.UnknownDomainOverLimit}, {"error", rls.UnknownDomainError}}
	rlsBatches = []named[rls.Batch]{{"descriptor", rls.BatchDescriptor}, {"call", rls.BatchCall}}
)

// bootstrapModes are --bootstrap's values.
var bootstrapModes = map[string]cluster.BootstrapMode{
	"no": cluster.NoBootstrap, "yes": cluster.BootstrapIfNew, "force": cluster.BootstrapForce,
}

// findOption is the row of the option name (in lower case), or nil.
func findOption(name string) *option {
	for i := range options {
		if options[i].name == name {
			return &options[i]
		}
	}
	return nil
}

// Defaults returns every option at its default, as a server started with
// no arguments runs.
func Defaults() Options { return defaultConfig() }

// ParseArgs reads redis-server style arguments: an optional config file
// first, then "--name value…" pairs that override it.
func ParseArgs(argv []string) (Options, error) { return parseArgs(argv) }

// Set sets the option name (a config file's directive, a flag without its
// "--") to the words of values, as the config file and the flags do.
func (c *Options) Set(name string, values ...string) error {
	if err := apply(c, name, values); err != nil {
		return fmt.Errorf("--%s: %w", name, err)
	}
	return nil
}

// Get returns the value of the option name as CONFIG GET prints it, and
// whether there is such an option.
func (c *Options) Get(name string) (string, bool) {
	o := findOption(strings.ToLower(name))
	if o == nil {
		return "", false
	}
	return o.get(c), true
}

// Usage writes --help: every option with its default, whether CONFIG SET
// changes it while the server runs, and its one-line description.
func Usage(w io.Writer) {
	fmt.Fprintln(w, "usage: sluice [/path/to/sluice.conf] [--option value ...]")
	fmt.Fprintln(w, "options (redis-server names; the config file takes the same directives without --;")
	fmt.Fprintln(w, "\"CONFIG SET\": CONFIG SET changes the option while the server runs):")
	d := defaultConfig()
	for _, o := range options {
		def := fmt.Sprintf("default %q", o.get(&d))
		if o.docDefault != "" {
			def += " (" + strings.ReplaceAll(o.docDefault, "`", "") + ")"
		}
		if o.live != nil {
			def += "  CONFIG SET"
		}
		fmt.Fprintf(w, "  --%-28s %s\n      %s\n", o.name, def, o.doc)
	}
}
