package commands

import (
	"time"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/compat"
	"github.com/sluice-rl/sluice/internal/figure"
)

// Keyspace is what the commands need from the state behind them: the store
// on a single node, the Raft node in a replicated group. Both implement all
// of it (cmd/sluice checks so at compile time); its parts are named below
// for the handlers that need only one. Every method takes
// the instant the edge read for the batch. Errors are reply errors: their
// text starts with a Redis error code (WRONGTYPE, OOM, CLUSTERDOWN,
// UNKNOWN …), or gets ERR (replyerr.Line, the one rule).
type Keyspace interface {
	// Decide carries out reqs in order and writes each outcome to the same
	// index of out.
	Decide(now int64, reqs []algorithms.Request, out []algorithms.Outcome)
	Delete(now int64, keys [][]byte) (int64, error)
	Exists(now int64, keys [][]byte) (int64, error)
	// Type returns the algorithm of key's state, None if absent.
	Type(now int64, key []byte) (algorithms.Algo, error)
	// TTL returns the time until key's state expires, -1 if absent, or
	// math.MaxInt64 if it never expires (a string written without a TTL).
	TTL(now int64, key []byte) (int64, error)
	// Scan visits about count entries from cursor and returns the cursor to
	// continue from, 0 when done. It calls fn with no lock held; when fn
	// returns false it stops, and the cursor it returns resumes at that key.
	Scan(now int64, cursor uint64, count int, fn func(key []byte, algo algorithms.Algo) bool) (uint64, error)
	DBSize(now int64) (int64, error)
	Flush(now int64) error
	// Info returns key's stored state (Algo None if absent), for RL.INFO.
	Info(now int64, key []byte) (algorithms.KeyInfo, error)

	Scripter
	BatchScripter
	Sweeper
	Transactor
	Overrider
}

// Scripter is the Keyspace's part that holds the keys of the known limiter
// scripts and of the plain string commands (package compat). Exec carries
// out op on keys at now, atomically across them, with the arguments after
// the keys in c.Argv, and leaves the reply in c.Reply (see
// store.Store.Exec). c is the caller's, reused.
type Scripter interface {
	Exec(now int64, op compat.Op, keys [][]byte, c *compat.Call)
}

// Sweeper is the Keyspace's active expiry; Handler.Sweep calls Sweep with
// the clock a few times a second.
type Sweeper interface {
	Sweep(now int64)
}

// StatsReporter reports the key space's figures for INFO memory and INFO
// stats, MEMORY STATS and the metrics endpoint (store.Store's table). On a
// replicated node they are the node's own replica's: its memory, and what
// its own sweep and applies expired.
type StatsReporter interface {
	KeyspaceFigures() []figure.Figure
}

// PersistenceStats are INFO persistence's figures.
type PersistenceStats struct {
	BackgroundSaveRunning bool
	LastSave              int64 // unix seconds of the last successful save
	LastSaveOK            bool  // the last save's status
	LastSaveTook          time.Duration
	Saves                 int64
	Path                  string // the snapshot file
}

// Transactor is the Keyspace's part that carries out transactions
// (MULTI/EXEC, WATCH, MGET).
type Transactor interface {
	// Version returns key's state version: 0 when absent, and a new value
	// after every write that changes its state (WATCH).
	Version(now int64, key []byte) (uint64, error)
	// Transact carries out reqs and ops as one atomic unit at now, in
	// order (an op before the request at its Before index), writing each
	// outcome to the same index of out and each op's reply to its Reply,
	// if every watched key's version is still the one given; otherwise it
	// changes nothing and returns false.
	// An error is the reply to EXEC: nothing was carried out, or, in a
	// replicated group, the outcome is unknown (UNKNOWN).
	Transact(now int64, watches []algorithms.Watch, reqs []algorithms.Request, out []algorithms.Outcome, ops []compat.TxOp) (bool, error)
}

// OverrideHolder is a Keyspace that can tell that it holds no override
// (store.Store.MayHoldOverrides): RL.CHECKs resolved and decided in one
// go then build no override key. A keyspace that does not implement it
// (a replicated node, whose decisions are applied later from its log) is
// given every override key.
type OverrideHolder interface {
	// MayHoldOverrides reports whether an override may be held: false
	// until one is first stored, never false again.
	MayHoldOverrides() bool
}

// Overrider is the Keyspace's part that keeps overrides (RL.OVERRIDE). An
// override is an entry under the key
// policy.AppendOverrideKey derives, holding policy.Override's packed words.
type Overrider interface {
	// SetOverride stores the packed words w under key (through the log on
	// a replicated node) and returns whether no live override was there.
	SetOverride(now int64, key []byte, w [3]int64) (bool, error)
	// LocalOverride reads key's override words from this node's own state,
	// without the log (RL.OVERRIDE LIST, the named reply of RL.CHECK); ok
	// is false if there is none.
	LocalOverride(now int64, key []byte) (w [3]int64, ok bool)
}

// AsyncDecider is a Keyspace whose decisions wait for something else (a
// replicated node's log). DecideAsync starts carrying out reqs as Decide
// does and returns without waiting; done is called once, from any
// goroutine, after every outcome is in out. Until then the caller leaves
// reqs, the bytes they point to, and out alone. client is the connection's
// CLIENT ID (nonzero), which tells the keyspace that a client it answered
// has come back. With it, a replicated node's decisions run on the event
// loops without blocking them (server.Conn.Suspend).
type AsyncDecider interface {
	DecideAsync(now, client int64, reqs []algorithms.Request, out []algorithms.Outcome, done func())
}
