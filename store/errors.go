package store

import (
	"errors"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/internal/replyerr"
)

// The store's errors. Those a client sees are reply errors of the one
// vocabulary (internal/replyerr): with a code of their own (WRONGTYPE,
// MISCONF), or Generic, whose "ERR " the one rule adds. The others wrap the
// details with %w.
var (
	// ErrWrongType is the outcome of using a key with an algorithm other
	// than the one whose state it holds.
	ErrWrongType = replyerr.New(replyerr.WRONGTYPE, "Operation against a key holding the wrong kind of value")
	// ErrSaveInProgress is the reply to SAVE or BGSAVE while a background
	// save runs, in Redis's words.
	ErrSaveInProgress = replyerr.Generic("Background save already in progress")
	// ErrDirLocked is LockDir's error when another process holds the
	// directory.
	ErrDirLocked = errors.New("in use by another sluice process")
	// errUnknownAlgo is the outcome of a request naming no algorithm the
	// store knows: a bug at the edge, never a client's mistake.
	errUnknownAlgo = replyerr.Generic("unknown algorithm")
	// errNotLeasable is the outcome of a take (Request.Min > 0) on an
	// algorithm that cannot be leased; the edge refuses those first.
	errNotLeasable = replyerr.Generic(algorithms.ErrNotLeasable)
	// errBadOverride is SetOverride's answer to words no valid override
	// has, or an expiry already past.
	errBadOverride = replyerr.Generic("invalid override")
	// errShort is a snapshot entry that runs past its block.
	errShort = errors.New("entry runs past its block")
	// ErrRewriteInProgress is the reply to BGREWRITEAOF while a rewrite of
	// the append-only log runs, in Redis's words.
	ErrRewriteInProgress = replyerr.Generic("Background append only file rewriting already in progress")
	// errAOFClosed is the append-only log's error after Close.
	errAOFClosed = errors.New("the append-only log is closed")
	// errBadFsync is an appendfsync value other than always, everysec, no.
	errBadFsync = errors.New("want always, everysec or no")
	// errBadAutoRewrite is a negative automatic rewrite threshold.
	errBadAutoRewrite = errors.New("auto-aof-rewrite-percentage and auto-aof-rewrite-min-size must not be negative")
	// errSnapshotMisconf is the refusal of changes while the last snapshot
	// save failed (refusal.go), in Redis's words with sluice's names.
	errSnapshotMisconf = replyerr.New(replyerr.MISCONF, "sluice is configured to save snapshots, but it's currently "+
		"unable to persist to disk. Commands that may modify the data set are disabled, because this instance "+
		"is configured to report errors during writes if snapshotting fails (stop-writes-on-bgsave-error option). "+
		"Please check the sluice logs for details about the snapshot error.")
)
