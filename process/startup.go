package process

import (
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"time"

	"github.com/sluice-rl/sluice/commands"
	"github.com/sluice-rl/sluice/store"
)

// Start-up and shutdown wiring of a single node's snapshot file, and the
// warnings about how the server is exposed.

// loadSnapshot removes the temporary files of saves that did not finish
// and loads the snapshot file if there is one, saying what it found. A file
// that cannot be read whole stops the start: starting empty would hand
// every client a fresh burst. It requires the directory's lock (LockDir),
// without which a running server's save could be taken for a stale one.
func loadSnapshot(log *slog.Logger, st *store.Store, cfg Options) (*store.Saver, error) {
	path := filepath.Join(cfg.dir, cfg.dbfilename)
	removed, err := store.RemoveStaleTemps(path)
	for _, f := range removed {
		log.Warn("removed the temporary file of a save that did not finish", "path", f.Path, "bytes", f.Size)
	}
	if err != nil {
		return nil, fmt.Errorf("removing stale temporary files in %s: %w", cfg.dir, err)
	}
	start := time.Now()
	lf, err := st.LoadFile(path)
	if err != nil {
		return nil, fmt.Errorf("refusing to start: %w (move the file away to start with no state)", err)
	}
	switch {
	case lf.Loaded:
		log.Info("snapshot loaded", "path", path, "keys", st.Stats().Keys,
			"age", time.Since(lf.ModTime).Round(time.Second), "saved_at", lf.ModTime.UTC().Format(time.RFC3339),
			"bytes", lf.Size, "took", time.Since(start).Round(time.Microsecond))
	case lf.DanglingTo != "":
		log.Warn("no snapshot at "+path+", starting empty", "path", path,
			"reason", "a symbolic link to "+lf.DanglingTo+", which does not exist")
	default:
		log.Info("no snapshot at "+path+", starting empty", "path", path)
	}
	return store.NewSaver(st, path), nil
}

// finalSave returns the stopper's save: the snapshot written with the
// store held, which stays held if it worked. nil without a saver (a
// replicated node).
func finalSave(log *slog.Logger, saver *store.Saver) func() error {
	if saver == nil {
		return nil
	}
	return func() error {
		log.Info("saving the final snapshot before exiting", "path", saver.Path())
		start := time.Now()
		n, err := saver.SaveAndHold()
		if err != nil {
			return err
		}
		log.Info("snapshot saved", "path", saver.Path(), "keys", n, "took", time.Since(start).Round(time.Microsecond))
		return nil
	}
}

// probeSave returns the stopper's probe: a save while traffic goes on.
func probeSave(saver *store.Saver) func() error {
	if saver == nil {
		return nil
	}
	return func() error {
		saver.Wait()
		return saver.Save()
	}
}

// warnExposed logs a warning for every address the server listens on,
// other than loopback, without a password: anyone who can reach it can
// reset every limit.
func warnExposed(log *slog.Logger, cfg Options) {
	if cfg.commands.Password != "" {
		return
	}
	for _, host := range cfg.bind {
		if isLoopback(host) {
			continue
		}
		if cfg.commands.Debug == commands.DebugYes {
			log.Warn("DANGER: listening on "+host+" with no password and --enable-debug-command yes: "+
				"anyone who can reach this port can move the server clock with DEBUG CLOCK and refill or reset "+
				"every limit at once, and FLUSHALL, RL.RESET or DEL any of them. "+
				"Set --requirepass and --enable-debug-command no (or local), or --bind 127.0.0.1",
				"bind", host, "port", portString(cfg.port))
			continue
		}
		log.Warn("listening on "+host+" with no password: anyone who can reach this port can reset every limit "+
			"(FLUSHALL, RL.RESET, DEL) and hand every client a fresh burst. Set --requirepass, or --bind 127.0.0.1",
			"bind", host, "port", portString(cfg.port))
	}
}

// isLoopback reports whether host, a --bind address, is a loopback one.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
