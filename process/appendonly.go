package process

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/sluice-rl/sluice/commands"
	"github.com/sluice-rl/sluice/store"
)

// Start-up and shutdown wiring of a single node's append-only log
// (appendonly yes): which file the state comes from, what a damaged log
// does to the start, and what the log line says the log guarantees.

// loadState loads a single node's state and opens its append-only log,
// saying what it found. With the log on and a log file present, the state
// is the log's alone (its base, then its frames): the log holds every
// change, the snapshot file only those up to its save. With no log file,
// the snapshot is loaded and a new log is started from it. A log that
// cannot be read refuses the start, as a snapshot does, unless
// --aof-load-corrupt yes; it requires the directory's lock (LockDir).
func loadState(log *slog.Logger, st *store.Store, cfg Options) (*store.Saver, *store.AOF, error) {
	path := filepath.Join(cfg.dir, cfg.appendfilename)
	if !cfg.appendonly {
		saver, err := loadSnapshot(log, st, cfg)
		if err == nil {
			log.Info("append-only log off: a crash (kill -9, power cut) loses the decisions made since the last snapshot; "+
				"--appendonly yes keeps them", "save_every_s", cfg.save)
			if _, serr := os.Stat(path); serr == nil {
				log.Warn("an append-only log is here and is not read (--appendonly no); turning the log on again loads it "+
					"instead of the snapshot: remove it if the snapshot is newer", "path", path)
			}
		}
		return saver, nil, err
	}
	removed, err := store.RemoveStaleTemps(path)
	for _, f := range removed {
		log.Warn("removed the temporary file of a log rewrite that did not finish", "path", f.Path, "bytes", f.Size)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("removing stale temporary files in %s: %w", cfg.dir, err)
	}
	var saver *store.Saver
	start := time.Now()
	l, err := st.LoadAOF(path, store.AOFLoadOptions{SkipCorrupt: cfg.aofLoadCorrupt})
	if err != nil {
		return nil, nil, fmt.Errorf("refusing to start: %w (--aof-load-corrupt yes starts anyway, skipping the frames "+
			"that cannot be read; or move the file away to start from the snapshot)", err)
	}
	if l.Loaded {
		snap := filepath.Join(cfg.dir, cfg.dbfilename)
		removed, err := store.RemoveStaleTemps(snap)
		for _, f := range removed {
			log.Warn("removed the temporary file of a save that did not finish", "path", f.Path, "bytes", f.Size)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("removing stale temporary files in %s: %w", cfg.dir, err)
		}
		saver = store.NewSaver(st, snap)
		log.Info("append-only log loaded (the snapshot file is not read: the log holds every change)", "path", path,
			"keys", st.Stats().Keys, "frames", l.Frames, "base_bytes", l.Base, "bytes", l.Size,
			"took", time.Since(start).Round(time.Microsecond))
		if l.TornBytes > 0 {
			if err := os.Truncate(path, l.ValidEnd); err != nil {
				return nil, nil, fmt.Errorf("cutting the torn tail of %s: %w", path, err)
			}
			log.Warn("append-only log: cut a torn tail (a crash during a write)", "path", path,
				"offset", l.ValidEnd, "bytes_cut", l.TornBytes, "reason", l.TornReason)
		}
		for _, s := range l.Skipped {
			log.Warn("append-only log: skipped a corrupt range (--aof-load-corrupt yes); the changes in it are lost",
				"path", path, "offset", s.Offset, "bytes", s.Bytes, "reason", s.Reason)
		}
	} else if saver, err = loadSnapshot(log, st, cfg); err != nil {
		return nil, nil, err
	}
	a, err := store.OpenAOF(st, path, cfg.aof)
	if err != nil {
		return nil, nil, fmt.Errorf("opening the append-only log %s: %w", path, err)
	}
	if len(l.Skipped) > 0 {
		// A clean file, so that the next start does not meet the same damage.
		if err := a.Rewrite(); err != nil {
			a.Close()
			return nil, nil, fmt.Errorf("rewriting %s without its corrupt ranges: %w", path, err)
		}
		log.Info("append-only log rewritten without its corrupt ranges", "path", path)
	}
	if !l.Loaded {
		log.Info("append-only log created from the loaded state", "path", path)
	}
	log.Info("append-only log on: "+fsyncPromise(cfg.aof.Fsync), "path", path, "appendfsync", cfg.aof.Fsync)
	return saver, a, nil
}

// fsyncPromise says what a crash can lose under each appendfsync policy.
func fsyncPromise(f store.Fsync) string {
	switch f {
	case store.FsyncAlways:
		return "every reply waits for its changes to be on disk; no crash loses an acknowledged decision"
	case store.FsyncEverySec:
		return "every reply waits for its changes to be written; kill -9 loses nothing acknowledged, " +
			"a power cut about the last second"
	default:
		return "every reply waits for its changes to be written; kill -9 loses nothing acknowledged, " +
			"a power cut what the kernel had not yet flushed (about 30 s)"
	}
}

// appendOnly is the log as the commands' AppendOnly.
type appendOnly struct {
	a *store.AOF
}

// appendOnlyOf returns a as the commands' AppendOnly, or a nil interface
// when the log is off; it logs a failing write once, and once when writes
// work again.
func appendOnlyOf(a *store.AOF, log *slog.Logger) commands.AppendOnly {
	if a == nil {
		return nil
	}
	a.SetNotify(func(err error) {
		if err != nil {
			log.Error("append-only log: writing failed; changes are refused (MISCONF) and the write is retried "+
				"once a second", "path", a.Path(), "err", err)
			return
		}
		log.Info("append-only log: writing works again; changes are accepted", "path", a.Path())
	})
	return &appendOnly{a: a}
}

func (ao *appendOnly) Sync() error { return ao.a.Sync() }

func (ao *appendOnly) BackgroundRewrite() error { return ao.a.BackgroundRewrite() }

func (ao *appendOnly) AppendOnlyStats() commands.AppendOnlyStats {
	s := ao.a.Stats()
	return commands.AppendOnlyStats{
		RewriteInProgress: s.RewriteInProgress,
		LastRewriteOK:     s.LastRewriteOK,
		Rewrites:          s.Rewrites,
		CurrentSize:       s.CurrentSize,
		BaseSize:          s.BaseSize,
		LastWriteOK:       s.LastWriteOK,
		DelayedFsync:      s.DelayedFsync,
		PendingBytes:      s.Pending,
	}
}

// closeAppendOnly writes what is left of the log and forces it to disk, at
// exit, whatever appendfsync says.
func closeAppendOnly(log *slog.Logger, a *store.AOF) {
	if a == nil {
		return
	}
	if err := a.Close(); err != nil {
		log.Error("append-only log: the last write at exit failed", "path", a.Path(), "err", err)
		return
	}
	log.Info("append-only log synced", "path", a.Path())
}
