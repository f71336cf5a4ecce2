package process

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/sluice-rl/sluice/commands"
	"github.com/sluice-rl/sluice/server"
	"github.com/sluice-rl/sluice/store"
)

// The running configuration (commands.Settings): CONFIG GET reads it,
// CONFIG SET changes the options that can change while serving, CONFIG
// REWRITE writes it to the config file (rewrite.go).

// liveConfig is the configuration in force and what applies a change.
// Safe for concurrent use: mu serialises CONFIG SET and REWRITE.
type liveConfig struct {
	mu   sync.Mutex
	cfg  Options // in force
	base Options // the defaults, for the options REWRITE appends

	log   *slog.Logger
	level *slog.LevelVar
	st    *store.Store // nil on a replicated node (no maxmemory there)
	srv   *server.Server
	cmds  *commands.Handler
	saves *saveLoop     // nil without snapshots (a replicated node)
	grpc  *grpcFrontEnd // nil without --grpc-bind; set under mu once it serves
	stop  *stopper
}

// The functions that apply a new value to the running server from the new
// configuration c, for the options whose row has them (live): CONFIG SET
// changes those options. Every other option is immutable while serving, as
// in Redis.

func applyTimeout(l *liveConfig, c *Options) error { return l.srv.SetIdleTimeout(c.server.IdleTimeout) }

func applyMaxClients(l *liveConfig, c *Options) error {
	return l.srv.SetMaxClients(c.server.MaxClients)
}

func applyLoglevel(l *liveConfig, c *Options) error {
	l.level.Set(logLevel(c.loglevel))
	return nil
}

func applySave(l *liveConfig, c *Options) error {
	if l.saves == nil {
		return fmt.Errorf("snapshots are off on a replicated node (the Raft log persists its state)")
	}
	l.saves.set(c.save)
	l.stop.setSaveByDefault(c.save > 0)
	return nil
}

func applyRequirepass(l *liveConfig, c *Options) error {
	if l.st == nil {
		// The nodes forward to each other with the password they
		// started with, and the default user is the group's: a
		// change on one node would be neither.
		return fmt.Errorf("requirepass cannot change on a replicated node: use ACL SETUSER default, which the group replicates, and restart each node with the new --requirepass")
	}
	l.cmds.SetPassword(c.commands.Password)
	return nil
}

func applyMaxBulk(l *liveConfig, c *Options) error {
	if l.grpc != nil { // the longest key of an RLS call follows the RESP port's
		l.grpc.svc.SetMaxKey(int(c.server.Limits.MaxBulk))
	}
	return l.srv.SetMaxBulk(c.server.Limits.MaxBulk)
}

func applyQueryBufferLimit(l *liveConfig, c *Options) error {
	return l.srv.SetQueryBufferLimit(c.server.QueryBufferLimit)
}

func applyMaxMemory(l *liveConfig, c *Options) error {
	if l.st == nil {
		if c.maxmemory > 0 {
			return fmt.Errorf("maxmemory is not supported with replication")
		}
		return nil
	}
	p, err := store.ParsePolicy(c.maxmemoryPolicy)
	if err != nil {
		return err
	}
	l.st.SetMaxMemory(c.maxmemory, p)
	return nil
}

func applySlowlog(l *liveConfig, c *Options) error {
	l.cmds.SetSlowlog(c.commands.SlowlogSlowerThan, c.commands.SlowlogMaxLen)
	return nil
}

// Params returns every option with its value in force, and databases 1.
func (l *liveConfig) Params() []commands.Param {
	l.mu.Lock()
	defer l.mu.Unlock()
	return params(&l.cfg)
}

// params lists c's options as CONFIG GET reports them.
func params(c *Options) []commands.Param {
	out := make([]commands.Param, 0, len(options)+1)
	for _, s := range options {
		out = append(out, commands.Param{Name: s.name, Value: s.get(c)})
	}
	// One database: exporters need not scan db1…db15.
	return append(out, commands.Param{Name: "databases", Value: "1"})
}

// Set parses every pair into a copy of the configuration, refusing an
// unknown or immutable option or a bad value before anything changes,
// then applies the changed options and keeps the copy.
func (l *liveConfig) Set(pairs []commands.Param) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	next := l.cfg
	for _, p := range pairs {
		s := findOption(p.Name)
		if s == nil {
			return &commands.SettingError{Param: p.Name, Unknown: true}
		}
		if s.live == nil {
			return &commands.SettingError{Param: p.Name, Reason: "can't set immutable config"}
		}
		words := []string{p.Value} // one word, spaces and all (requirepass)
		if s.list {
			if words = strings.Fields(p.Value); len(words) == 0 {
				words = []string{""}
			}
		}
		if err := s.set(&next, words); err != nil {
			return &commands.SettingError{Param: p.Name, Reason: err.Error()}
		}
	}
	for _, p := range pairs {
		if err := findOption(p.Name).live(l, &next); err != nil {
			// an option applied before this one stays applied: undo them
			l.restore(pairs)
			return &commands.SettingError{Param: p.Name, Reason: err.Error()}
		}
	}
	l.cfg = next
	l.log.Info("CONFIG SET", "options", names(pairs))
	return nil
}

// restore applies the configuration in force again for these options
// (after a failed Set).
func (l *liveConfig) restore(pairs []commands.Param) {
	for _, p := range pairs {
		if err := findOption(p.Name).live(l, &l.cfg); err != nil {
			l.log.Warn("CONFIG SET: restoring an option failed", "option", p.Name, "err", err)
		}
	}
}

func names(pairs []commands.Param) string {
	out := make([]string, len(pairs))
	for i, p := range pairs {
		out[i] = p.Name
	}
	return strings.Join(out, " ")
}

// saveLoop runs the periodic snapshots (save), restarted when CONFIG SET
// changes their period.
type saveLoop struct {
	mu    sync.Mutex
	saver *store.Saver
	stop  chan struct{} // closes the running loop; nil: none runs
	ended bool          // after close, no loop starts again
}

// set runs the snapshots every seconds (0: none).
func (s *saveLoop) set(seconds int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop != nil {
		close(s.stop)
		s.stop = nil
	}
	if seconds > 0 && !s.ended {
		s.stop = make(chan struct{})
		go s.saver.Run(time.Duration(seconds)*time.Second, s.stop)
	}
}

// close stops the snapshots for good.
func (s *saveLoop) close() {
	s.set(0)
	s.mu.Lock()
	s.ended = true
	s.mu.Unlock()
}

// setSaveByDefault changes whether a shutdown saves unless told NOSAVE
// (save > 0).
func (s *stopper) setSaveByDefault(b bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saveByDefault = b
}
