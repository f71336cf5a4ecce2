package commands

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/sluice-rl/sluice/acl"
	"github.com/sluice-rl/sluice/internal/figure"

	"github.com/sluice-rl/sluice/policy"
)

// Config is the commands' configuration. Start from DefaultConfig and
// change what differs; New refuses a Config that Validate refuses.
type Config struct {
	// Password is requirepass: clients must AUTH with it first ("": none).
	Password string
	// ACLFile is aclfile: the users, loaded at start and by ACL LOAD,
	// written by ACL SAVE ("": none).
	ACLFile string
	// Users, if set, are the users to serve, made by NewUsers from this
	// Config (a replicated node shares them with its Raft log); nil: New
	// makes them.
	Users *acl.Users
	// Renames are rename-command directives, applied in order.
	Renames []Rename
	// ProtectedMode is protected-mode: while the default user needs no
	// password, clients that do not connect over loopback are refused.
	ProtectedMode bool
	// Debug is enable-debug-command: whether DEBUG CLOCK is allowed.
	Debug DebugMode
	// LogMaxLimit is the largest limit RL.LOG and RL.ACQUIRE accept
	// (log-max-limit): their state holds one entry per unit or holder.
	LogMaxLimit int64
	// AllMaxLimits is the most limits one RL.ALL may name (all-max-limits),
	// and AllMaxLogUnits the most units its LOG limits may log together, n
	// times their number (all-max-log-units): a group holds the locks of
	// every shard it touches while it decides, and its scratch state grows
	// with its size.
	AllMaxLimits   int64
	AllMaxLogUnits int64
	// SlowlogSlowerThan is slowlog-log-slower-than: SLOWLOG logs the
	// batches that took at least this many microseconds (negative: none);
	// SlowlogMaxLen is slowlog-max-len, the entries it keeps.
	SlowlogSlowerThan int64
	SlowlogMaxLen     int64
	// TopKeys is top-keys: the counters of each heavy-hitters sketch
	// RL.TOP reads (0: none kept, RL.TOP refused).
	TopKeys int
	// Logger receives the commands' log lines. nil: slog.Default().
	Logger *slog.Logger
	// Params are the resolved settings that CONFIG GET reports, unless
	// Settings is set.
	Params []Param
	// Settings are the running configuration that CONFIG GET reads and
	// CONFIG SET and CONFIG REWRITE change; nil: CONFIG GET reads Params,
	// CONFIG SET and REWRITE are refused.
	Settings Settings
	// Info adds lines to INFO's server section (shards, config file).
	Info []Param
	// Stats reports the key space's figures for INFO memory and INFO
	// stats; nil reports none.
	Stats StatsReporter
	// Cluster is the replicated node, nil on a single node.
	Cluster Cluster
	// Meta is this process's replica of a sharded cluster's meta group
	// (META.* commands), nil elsewhere.
	Meta Cluster
	// MetaSync, on a sharded node, catches the meta replica up with the
	// meta group's leader, within a bounded wait, or returns why it did
	// not: a node calls it before it answers that a command-defined policy
	// or a user does not exist (or a password does not match), then looks
	// again, so that a change another node acknowledged is found here. nil
	// elsewhere. Safe for concurrent use; it blocks its caller only.
	MetaSync func() error
	// Router routes each keyed command of a sharded cluster to the data
	// group that owns its slot (MOVED, CROSSSLOT), nil elsewhere.
	Router Router
	// Proxy, with Router, runs each command of another group's slot on
	// that group's leader instead of answering MOVED (--cluster-proxy;
	// route.go), nil: MOVED.
	Proxy Proxy
	// Resharder moves slots between a sharded cluster's data groups
	// (SLUICE.MIGRATE, SLUICE.MIGRATIONS), nil elsewhere.
	Resharder Resharder
	// Topology is the shard the CLUSTER commands report (cmd_cluster.go):
	// the single node's or the group's. nil: CLUSTER answers that cluster
	// support is disabled, and INFO says cluster_enabled:0.
	Topology Topology
	// Persister carries out SAVE and BGSAVE; nil refuses them.
	Persister Persister
	// AppendOnly is the append-only log, which every batch syncs before
	// its replies are written; nil: none (BGREWRITEAOF is refused).
	AppendOnly AppendOnly
	// Shutdowner carries out SHUTDOWN; nil refuses it.
	Shutdowner Shutdowner
	// Policies holds the named policies RL.CHECK decides with and
	// RL.POLICY changes, and the rules files' policies (read-only here).
	// nil: New gives the Handler an empty registry of its own.
	Policies *policy.Registry
	// Rules reloads the rules files (RL.POLICY RELOAD) and reports their
	// state (INFO policies); nil: no rules files on this server.
	Rules RulesFiles
}

// RulesFiles is the rules files' loader (--policies), as the commands see
// it. Safe for concurrent use.
type RulesFiles interface {
	// ReloadWithin reads the files again at instant now (unix ns) and
	// installs them, or keeps the rules in force and returns why they were
	// refused; force lets a set that defines no domain replace one that
	// defines some. It returns within about wait, whatever the files do
	// (policy.Watcher.ReloadWithin).
	ReloadWithin(now int64, force bool, wait time.Duration) error
	// Status returns what INFO policies shows of the files.
	Status() policy.WatchStatus
}

// DebugMode is enable-debug-command, with Redis's values.
type DebugMode string

// The values of enable-debug-command.
const (
	DebugNo    DebugMode = "no"    // DEBUG refused
	DebugYes   DebugMode = "yes"   // DEBUG allowed
	DebugLocal DebugMode = "local" // DEBUG allowed from loopback connections only
)

// Param is one name/value pair of configuration.
type Param struct{ Name, Value string }

// DefaultConfig returns the defaults: no password, no DEBUG, RL.LOG's and
// RL.ACQUIRE's limits at most 10000, RL.ALL at most 10000 limits and
// 1,000,000 logged units, Redis's slow log (10000 µs, 128 entries) and
// sketches of 64 counters for RL.TOP.
func DefaultConfig() Config {
	return Config{ProtectedMode: true, Debug: DebugNo, LogMaxLimit: 10000, AllMaxLimits: 10000, AllMaxLogUnits: 1_000_000,
		SlowlogSlowerThan: 10000, SlowlogMaxLen: 128, TopKeys: 64}
}

// Validate reports the first setting that cannot work.
func (c *Config) Validate() error {
	switch {
	case c.Debug != DebugNo && c.Debug != DebugYes && c.Debug != DebugLocal:
		return fmt.Errorf("commands: Debug %q: want no, yes or local", c.Debug)
	case c.LogMaxLimit < 1:
		return fmt.Errorf("commands: LogMaxLimit %d: want at least 1", c.LogMaxLimit)
	case c.AllMaxLimits < 1:
		return fmt.Errorf("commands: AllMaxLimits %d: want at least 1", c.AllMaxLimits)
	case c.AllMaxLogUnits < 1:
		return fmt.Errorf("commands: AllMaxLogUnits %d: want at least 1", c.AllMaxLogUnits)
	case c.TopKeys < 0 || c.TopKeys > MaxTopKeys:
		return fmt.Errorf("commands: TopKeys %d: want 0 to %d", c.TopKeys, MaxTopKeys)
	case c.SlowlogMaxLen < 0:
		return fmt.Errorf("commands: SlowlogMaxLen %d: want at least 0", c.SlowlogMaxLen)
	}
	return nil
}

// AppendOnly is the append-only log (appendonly yes): BGREWRITEAOF and
// INFO persistence, and Sync, which the end of every batch calls before
// its replies are written.
type AppendOnly interface {
	// Sync makes the changes of the batches so far as durable as
	// appendfsync says; it may wait for a disk write. An error is a reply
	// error (Redis's MISCONF): the changes stay pending, and the replies
	// that acknowledged them are taken back (durable.go).
	Sync() error
	// BackgroundRewrite starts a rewrite; an error is a reply error.
	BackgroundRewrite() error
	// AppendOnlyStats returns what INFO persistence reports.
	AppendOnlyStats() AppendOnlyStats
}

// AppendOnlyStats are INFO persistence's figures of the append-only log,
// with Redis's names.
type AppendOnlyStats struct {
	RewriteInProgress bool  // aof_rewrite_in_progress
	LastRewriteOK     bool  // aof_last_rewrite_status
	Rewrites          int64 // aof_rewrites
	CurrentSize       int64 // aof_current_size
	BaseSize          int64 // aof_base_size
	LastWriteOK       bool  // aof_last_write_status
	DelayedFsync      int64 // aof_delayed_fsync
	PendingBytes      int64 // aof_buffer_length: appended, not yet written
}

// Persister writes the keyspace's snapshot: SAVE, BGSAVE, LASTSAVE and
// INFO persistence. Errors are reply errors in Redis's words.
type Persister interface {
	Save() error
	BackgroundSave() error
	// LastSave returns the unix time of the last successful save.
	LastSave() int64
	// PersistenceStats returns what INFO persistence reports.
	PersistenceStats() PersistenceStats
	// Figures returns INFO persistence's other figures, as rows.
	Figures() []figure.Figure
}
