package main

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"

	"github.com/sluice-rl/sluice/certs"
	"github.com/sluice-rl/sluice/cluster"
	"github.com/sluice-rl/sluice/commands"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/rls"
	"github.com/sluice-rl/sluice/server"
	"github.com/sluice-rl/sluice/store"
)

// config is the resolved configuration: defaults, then the config file,
// then the command line, the way redis-server layers them. The settings
// that a package takes live in that package's Config, whose DefaultConfig
// gives the defaults (and --help prints them); the rest are the process's
// own: where to listen, the files, the key space's size and limit.
type config struct {
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

func defaultConfig() config {
	srv := server.DefaultConfig()
	return config{
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
func (c *config) replicated() bool { return c.cluster.ID != "" || c.cluster.RaftBind != "" }

// setting is one configuration directive: how to read its value and how to
// print it back for CONFIG GET.
type setting struct {
	name string
	set  func(c *config, args []string) error
	get  func(c *config) string
}

var settings = []setting{
	{"port", func(c *config, a []string) error { return portArg(a, &c.port) },
		func(c *config) string { return portString(c.port) }},
	{"ports-file", func(c *config, a []string) error { return stringArg(a, &c.portsFile) },
		func(c *config) string { return c.portsFile }},
	{"bind", func(c *config, a []string) error {
		if len(a) == 0 {
			return errors.New("wrong number of arguments")
		}
		c.bind = append([]string(nil), a...)
		return nil
	}, func(c *config) string { return strings.Join(c.bind, " ") }},
	{"requirepass", func(c *config, a []string) error { return stringArg(a, &c.commands.Password) },
		func(c *config) string { return c.commands.Password }},
	{"maxclients", func(c *config, a []string) error { return intArg(a, 1, 1<<20, &c.server.MaxClients) },
		func(c *config) string { return strconv.Itoa(c.server.MaxClients) }},
	{"timeout", func(c *config, a []string) error { return secondsArg(a, &c.server.IdleTimeout) },
		func(c *config) string { return strconv.Itoa(int(c.server.IdleTimeout.Seconds())) }},
	{"shards", func(c *config, a []string) error { return intArg(a, 1, 1<<16, &c.shards) },
		func(c *config) string { return strconv.Itoa(c.shards) }},
	{"event-loops", func(c *config, a []string) error { return intArg(a, 0, 1024, &c.server.EventLoops) },
		func(c *config) string { return strconv.Itoa(c.server.EventLoops) }},
	// rename-command NAME NEWNAME, repeated; NEWNAME "" hides NAME.
	{"rename-command", func(c *config, a []string) error {
		if len(a) != 2 {
			return fmt.Errorf("wants a command and its new name (\"\" to hide it), got %d values", len(a))
		}
		c.commands.Renames = append(c.commands.Renames, commands.Rename{From: a[0], To: a[1]})
		return nil
	}, func(c *config) string {
		var parts []string
		for _, r := range c.commands.Renames {
			parts = append(parts, r.From+" "+r.To)
		}
		return strings.Join(parts, " ")
	}},
	{"protected-mode", func(c *config, a []string) error { return boolArg(a, &c.commands.ProtectedMode) },
		func(c *config) string { return yesNo(c.commands.ProtectedMode) }},
	{"aclfile", func(c *config, a []string) error { return stringArg(a, &c.commands.ACLFile) },
		func(c *config) string { return c.commands.ACLFile }},
	{"enable-debug-command", func(c *config, a []string) error {
		var v string
		err := enumArg(a, &v, string(commands.DebugYes), string(commands.DebugNo), string(commands.DebugLocal))
		if err == nil {
			c.commands.Debug = commands.DebugMode(v)
		}
		return err
	}, func(c *config) string { return string(c.commands.Debug) }},
	{"loglevel", func(c *config, a []string) error {
		return enumArg(a, &c.loglevel, "debug", "verbose", "notice", "warning", "nothing")
	}, func(c *config) string { return c.loglevel }},
	{"proto-max-bulk-len", func(c *config, a []string) error { return memArg(a, 1, 1<<30, &c.server.Limits.MaxBulk) },
		func(c *config) string { return strconv.FormatInt(c.server.Limits.MaxBulk, 10) }},
	{"proto-max-multibulk-len", func(c *config, a []string) error {
		return memArg(a, 1, 1<<31-1, &c.server.Limits.MaxArgs)
	}, func(c *config) string { return strconv.FormatInt(c.server.Limits.MaxArgs, 10) }},
	{"client-query-buffer-limit", func(c *config, a []string) error {
		var n int64
		err := memArg(a, 1<<10, 1<<31-1, &n)
		if err == nil {
			c.server.QueryBufferLimit = int(n)
		}
		return err
	}, func(c *config) string { return strconv.Itoa(c.server.QueryBufferLimit) }},
	{"maxmemory", func(c *config, a []string) error { return memArg(a, 0, 1<<50, &c.maxmemory) },
		func(c *config) string { return strconv.FormatInt(c.maxmemory, 10) }},
	{"maxmemory-clients", func(c *config, a []string) error {
		v, err := oneArg(a)
		if err != nil {
			return err
		}
		c.maxmemClients, c.maxmemClientsPct, err = parseClientMemory(v)
		return err
	}, func(c *config) string {
		if c.maxmemClientsPct > 0 {
			return strconv.Itoa(c.maxmemClientsPct) + "%"
		}
		return strconv.FormatInt(c.maxmemClients, 10)
	}},
	{"maxmemory-policy", func(c *config, a []string) error {
		return enumArg(a, &c.maxmemoryPolicy, "noeviction", "volatile-ttl")
	}, func(c *config) string { return c.maxmemoryPolicy }},
	{"dir", func(c *config, a []string) error { return stringArg(a, &c.dir) },
		func(c *config) string { return c.dir }},
	{"dbfilename", func(c *config, a []string) error {
		if err := stringArg(a, &c.dbfilename); err != nil {
			return err
		}
		if c.dbfilename == "" || strings.ContainsRune(c.dbfilename, '/') {
			return fmt.Errorf("%q must be a file name, without a directory (that is --dir)", c.dbfilename)
		}
		return nil
	}, func(c *config) string { return c.dbfilename }},
	{"save", func(c *config, a []string) error {
		if len(a) == 1 && a[0] == "" { // save "" disables, as in redis.conf
			c.save = 0
			return nil
		}
		return intArg(a, 0, 1<<31-1, &c.save)
	}, func(c *config) string { return strconv.Itoa(c.save) }},
	{"appendonly", func(c *config, a []string) error {
		c.appendonlySet = true
		return boolArg(a, &c.appendonly)
	}, func(c *config) string { return yesNo(c.appendonly) }},
	{"appendfsync", func(c *config, a []string) error {
		var v string
		err := enumArg(a, &v, string(store.FsyncAlways), string(store.FsyncEverySec), string(store.FsyncNo))
		if err == nil {
			c.aof.Fsync, err = store.ParseFsync(v)
		}
		return err
	}, func(c *config) string { return string(c.aof.Fsync) }},
	{"appendfilename", func(c *config, a []string) error {
		if err := stringArg(a, &c.appendfilename); err != nil {
			return err
		}
		if c.appendfilename == "" || strings.ContainsRune(c.appendfilename, '/') {
			return fmt.Errorf("%q must be a file name, without a directory (that is --dir)", c.appendfilename)
		}
		return nil
	}, func(c *config) string { return c.appendfilename }},
	{"auto-aof-rewrite-percentage", func(c *config, a []string) error {
		var n int
		err := intArg(a, 0, 1<<30, &n)
		c.aof.AutoRewritePercentage = int64(n)
		return err
	}, func(c *config) string { return strconv.FormatInt(c.aof.AutoRewritePercentage, 10) }},
	{"auto-aof-rewrite-min-size", func(c *config, a []string) error { return memArg(a, 0, 1<<50, &c.aof.AutoRewriteMinSize) },
		func(c *config) string { return strconv.FormatInt(c.aof.AutoRewriteMinSize, 10) }},
	{"aof-load-corrupt", func(c *config, a []string) error { return boolArg(a, &c.aofLoadCorrupt) },
		func(c *config) string { return yesNo(c.aofLoadCorrupt) }},
	{"stop-writes-on-bgsave-error", func(c *config, a []string) error { return boolArg(a, &c.stopWritesOnSaveError) },
		func(c *config) string { return yesNo(c.stopWritesOnSaveError) }},
	{"node-id", func(c *config, a []string) error { return stringArg(a, &c.cluster.ID) },
		func(c *config) string { return c.cluster.ID }},
	{"raft-bind", func(c *config, a []string) error { return stringArg(a, &c.cluster.RaftBind) },
		func(c *config) string { return c.cluster.RaftBind }},
	{"raft-advertise", func(c *config, a []string) error { return stringArg(a, &c.cluster.RaftAdvertise) },
		func(c *config) string { return c.cluster.RaftAdvertise }},
	{"announce-addr", func(c *config, a []string) error { return stringArg(a, &c.announceAddr) },
		func(c *config) string { return c.announceAddr }},
	{"bootstrap", func(c *config, a []string) error {
		var v string
		if err := enumArg(a, &v, "yes", "no", "force"); err != nil {
			return err
		}
		c.cluster.Bootstrap = bootstrapModes[v]
		return nil
	}, func(c *config) string {
		for name, m := range bootstrapModes {
			if m == c.cluster.Bootstrap {
				return name
			}
		}
		return ""
	}},
	{"peers", func(c *config, a []string) error { return listArg(a, &c.cluster.Peers) },
		func(c *config) string { return strings.Join(c.cluster.Peers, " ") }},
	{"join", func(c *config, a []string) error { return stringArg(a, &c.cluster.Join) },
		func(c *config) string { return c.cluster.Join }},
	{"raft-allow", func(c *config, a []string) error { return listArg(a, &c.cluster.RaftAllow) },
		func(c *config) string { return strings.Join(c.cluster.RaftAllow, " ") }},
	{"raft-fsync", func(c *config, a []string) error { return boolArg(a, &c.cluster.Fsync) },
		func(c *config) string { return yesNo(c.cluster.Fsync) }},
	{"tls-port", func(c *config, a []string) error { return portArg(a, &c.tlsPort) },
		func(c *config) string { return portString(c.tlsPort) }},
	{"tls-auth-clients", func(c *config, a []string) error { return enumArg(a, &c.tlsAuthClients, "yes", "no", "optional") },
		func(c *config) string { return c.tlsAuthClients }},
	{"tls-cert-file", func(c *config, a []string) error { return stringArg(a, &c.tlsCertFile) },
		func(c *config) string { return c.tlsCertFile }},
	{"tls-key-file", func(c *config, a []string) error { return stringArg(a, &c.tlsKeyFile) },
		func(c *config) string { return c.tlsKeyFile }},
	{"tls-client-cert-file", func(c *config, a []string) error { return stringArg(a, &c.tlsClientCertFile) },
		func(c *config) string { return c.tlsClientCertFile }},
	{"tls-client-key-file", func(c *config, a []string) error { return stringArg(a, &c.tlsClientKeyFile) },
		func(c *config) string { return c.tlsClientKeyFile }},
	{"tls-ca-cert-file", func(c *config, a []string) error { return stringArg(a, &c.tlsCAFile) },
		func(c *config) string { return c.tlsCAFile }},
	{"tls-replication", func(c *config, a []string) error { return enumArg(a, &c.tlsReplication, "yes", "no") },
		func(c *config) string { return c.tlsReplication }},
	{"tls-protocols", func(c *config, a []string) error {
		if len(a) == 0 {
			return errors.New("wrong number of arguments")
		}
		v := strings.Join(a, " ") // tls-protocols TLSv1.2 TLSv1.3, quoted or not
		if _, _, err := certs.ParseProtocols(v); err != nil {
			return err
		}
		c.tlsProtocols = v
		return nil
	}, func(c *config) string { return c.tlsProtocols }},
	{"tls-ciphers", func(c *config, a []string) error {
		if err := stringArg(a, &c.tlsCiphers); err != nil {
			return err
		}
		_, err := certs.ParseCiphers(c.tlsCiphers)
		return err
	}, func(c *config) string { return c.tlsCiphers }},
	{"tls-ciphersuites", func(c *config, a []string) error {
		if err := stringArg(a, &c.tlsCiphersuites); err != nil {
			return err
		}
		return certs.CheckCiphersuites(c.tlsCiphersuites)
	}, func(c *config) string { return c.tlsCiphersuites }},
	// The largest limit RL.LOG and RL.ACQUIRE accept: their state holds 8
	// bytes per logged unit, 16 per lease holder.
	// SLOWLOG: batches at least this slow (µs; -1: none), and the entries kept.
	{"slowlog-log-slower-than", func(c *config, a []string) error {
		var n int
		err := intArg(a, -1, 1<<31-1, &n)
		c.commands.SlowlogSlowerThan = int64(n)
		return err
	}, func(c *config) string { return strconv.FormatInt(c.commands.SlowlogSlowerThan, 10) }},
	{"slowlog-max-len", func(c *config, a []string) error {
		var n int
		err := intArg(a, 0, 1<<31-1, &n)
		c.commands.SlowlogMaxLen = int64(n)
		return err
	}, func(c *config) string { return strconv.FormatInt(c.commands.SlowlogMaxLen, 10) }},
	// The counters of each heavy-hitters sketch RL.TOP reads (0: off).
	{"top-keys", func(c *config, a []string) error {
		return intArg(a, 0, commands.MaxTopKeys, &c.commands.TopKeys)
	}, func(c *config) string { return strconv.Itoa(c.commands.TopKeys) }},
	{"log-max-limit", func(c *config, a []string) error {
		var n int
		err := intArg(a, 1, 100_000_000, &n)
		if err == nil {
			c.commands.LogMaxLimit = int64(n)
		}
		return err
	}, func(c *config) string { return strconv.FormatInt(c.commands.LogMaxLimit, 10) }},
	// The most limits one RL.ALL may name, and the most units its LOG
	// limits may log together (n times their number): a group holds the
	// locks of every shard it touches while it decides.
	{"all-max-limits", func(c *config, a []string) error {
		var n int
		err := intArg(a, 1, 1<<20, &n)
		if err == nil {
			c.commands.AllMaxLimits = int64(n)
		}
		return err
	}, func(c *config) string { return strconv.FormatInt(c.commands.AllMaxLimits, 10) }},
	{"all-max-log-units", func(c *config, a []string) error {
		var n int
		err := intArg(a, 1, 1<<40, &n)
		if err == nil {
			c.commands.AllMaxLogUnits = int64(n)
		}
		return err
	}, func(c *config) string { return strconv.FormatInt(c.commands.AllMaxLogUnits, 10) }},
	// Rules files (envoyproxy/ratelimit's YAML) and directories of them.
	{"policies", func(c *config, a []string) error { return listArg(a, &c.policies) },
		func(c *config) string { return strings.Join(c.policies, " ") }},
	// The most bytes the rules files may hold together: a set past it is
	// refused unparsed.
	{"rules-max-bytes", func(c *config, a []string) error { return memArg(a, 1, 1<<30, &c.rulesMaxBytes) },
		func(c *config) string { return strconv.FormatInt(c.rulesMaxBytes, 10) }},
	// Prometheus's scrape endpoint and the probes (observe.go).
	{"metrics-bind", func(c *config, a []string) error { return addrArg(a, &c.metricsBind) },
		func(c *config) string { return c.metricsBind }},
	// The Envoy RLS v3 gRPC front end (policies.go).
	{"grpc-bind", func(c *config, a []string) error { return addrArg(a, &c.grpcBind) },
		func(c *config) string { return c.grpcBind }},
	{"grpc-reflection", func(c *config, a []string) error { return boolArg(a, &c.grpcReflection) },
		func(c *config) string { return yesNo(c.grpcReflection) }},
	{"grpc-stream-workers", func(c *config, a []string) error { return intArg(a, 0, 1<<16, &c.grpcWorkers) },
		func(c *config) string { return strconv.Itoa(c.grpcWorkers) }},
	// What the gRPC front end holds for its clients (rls.Limits).
	{"grpc-max-connections", func(c *config, a []string) error { return intArg(a, 1, 1<<20, &c.grpcLimits.MaxConnections) },
		func(c *config) string { return strconv.Itoa(c.grpcLimits.MaxConnections) }},
	{"grpc-max-concurrent-streams", func(c *config, a []string) error {
		var n int
		err := intArg(a, 1, 1<<20, &n)
		c.grpcLimits.MaxConcurrentStreams = uint32(n)
		return err
	}, func(c *config) string { return strconv.FormatUint(uint64(c.grpcLimits.MaxConcurrentStreams), 10) }},
	{"grpc-max-message-size", func(c *config, a []string) error {
		var n int64
		err := memArg(a, 1<<10, 1<<30, &n)
		if err == nil {
			c.grpcLimits.MaxMessageSize = int(n)
		}
		return err
	}, func(c *config) string { return strconv.Itoa(c.grpcLimits.MaxMessageSize) }},
	{"grpc-connection-timeout", func(c *config, a []string) error { return positiveSeconds(a, &c.grpcLimits.ConnectionTimeout) },
		func(c *config) string { return strconv.Itoa(int(c.grpcLimits.ConnectionTimeout.Seconds())) }},
	{"grpc-keepalive-time", func(c *config, a []string) error { return positiveSeconds(a, &c.grpcLimits.KeepaliveTime) },
		func(c *config) string { return strconv.Itoa(int(c.grpcLimits.KeepaliveTime.Seconds())) }},
	{"grpc-keepalive-timeout", func(c *config, a []string) error { return positiveSeconds(a, &c.grpcLimits.KeepaliveTimeout) },
		func(c *config) string { return strconv.Itoa(int(c.grpcLimits.KeepaliveTimeout.Seconds())) }},
	{"grpc-max-connection-idle", func(c *config, a []string) error { return secondsArg(a, &c.grpcLimits.MaxConnectionIdle) },
		func(c *config) string { return strconv.Itoa(int(c.grpcLimits.MaxConnectionIdle.Seconds())) }},
	// The collector's heap floor (gcfloor.go).
	{"gc-heap-floor", func(c *config, a []string) error { return memArg(a, 0, 1<<40, &c.gcHeapFloor) },
		func(c *config) string { return strconv.FormatInt(c.gcHeapFloor, 10) }},
	{"grpc-headers", func(c *config, a []string) error { return namedArg(a, &c.rls.Headers, rlsHeaders) },
		func(c *config) string { return nameOf(c.rls.Headers, rlsHeaders) }},
	{"grpc-unknown-domain", func(c *config, a []string) error { return namedArg(a, &c.rls.UnknownDomain, rlsUnknownDomains) },
		func(c *config) string { return nameOf(c.rls.UnknownDomain, rlsUnknownDomains) }},
	{"grpc-batch", func(c *config, a []string) error { return namedArg(a, &c.rls.Batch, rlsBatches) },
		func(c *config) string { return nameOf(c.rls.Batch, rlsBatches) }},
	{"grpc-count-over-limit", func(c *config, a []string) error { return boolArg(a, &c.rls.CountOverLimit) },
		func(c *config) string { return yesNo(c.rls.CountOverLimit) }},
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

func findSetting(name string) *setting {
	for i := range settings {
		if settings[i].name == name {
			return &settings[i]
		}
	}
	return nil
}
