package store

import (
	"errors"

	"github.com/sluice-rl/sluice/algorithms"
)

// The store's errors. Those a client sees are reply errors: their text
// starts with a Redis error code (WRONGTYPE), or has none and gets the
// generic ERR from the one rule of the commands that write them. The
// others wrap the details with %w.
var (
	// ErrWrongType is the outcome of using a key with an algorithm other
	// than the one whose state it holds.
	ErrWrongType = errors.New("WRONGTYPE Operation against a key holding the wrong kind of value")
	// ErrSaveInProgress is the reply to SAVE or BGSAVE while a background
	// save runs, in Redis's words.
	ErrSaveInProgress = errors.New("Background save already in progress")
	// ErrDirLocked is LockDir's error when another process holds the
	// directory.
	ErrDirLocked = errors.New("in use by another sluice process")
	// errUnknownAlgo is the outcome of a request naming no algorithm the
	// store knows: a bug at the edge, never a client's mistake.
	errUnknownAlgo = errors.New("unknown algorithm")
	// errNotLeasable is the outcome of a take (Request.Min > 0) on an
	// algorithm that cannot be leased; the edge refuses those first.
	errNotLeasable = errors.New(algorithms.ErrNotLeasable)
	// errBadOverride is SetOverride's answer to words no valid override
	// has, or an expiry already past.
	errBadOverride = errors.New("ERR invalid override")
	// errShort is a snapshot entry that runs past its block.
	errShort = errors.New("entry runs past its block")
	// ErrRewriteInProgress is the reply to BGREWRITEAOF while a rewrite of
	// the append-only log runs, in Redis's words.
	ErrRewriteInProgress = errors.New("Background append only file rewriting already in progress")
	// errAOFClosed is the append-only log's error after Close.
	errAOFClosed = errors.New("the append-only log is closed")
	// errBadFsync is an appendfsync value other than always, everysec, no.
	errBadFsync = errors.New("want always, everysec or no")
	// errBadAutoRewrite is a negative automatic rewrite threshold.
	errBadAutoRewrite = errors.New("auto-aof-rewrite-percentage and auto-aof-rewrite-min-size must not be negative")
)
