package process

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/sluice-rl/sluice/commands"
)

// The process's exit codes (docs/configuration.md, "Start-up, shutdown and exit codes").
const (
	ExitOK      = 0 // stopped cleanly: the final state saved, or nothing to save
	ExitFailed  = 1 // could not start
	ExitUsage   = 2 // bad flags or configuration file
	ExitUnsaved = 3 // stopped without saving its final state: a shutdown save failed or was cut short
)

// Retries of a failed shutdown save wait minRetry, then twice as long each
// time, up to maxRetry.
const (
	minRetry = time.Second
	maxRetry = 30 * time.Second
)

// stopping is how the process ends: its exit code, and whether the store is
// held (a final save succeeded and nothing may change the state after it,
// so the process exits without waiting for clients).
type stopping struct {
	code int
	held bool
}

// stopper decides when the process exits and with which code. A shutdown
// (SIGTERM, SIGINT, or SHUTDOWN) saves the snapshot first, unless told not
// to; as in Redis, a failed save keeps the server up, serving. Unlike Redis,
// a failed shutdown is not forgotten: it is retried with a backoff until
// the save works, SHUTDOWN ABORT cancels it, or SHUTDOWN NOSAVE, SHUTDOWN
// FORCE or a second signal stops the process without the save, with
// ExitUnsaved.
//
// Concurrency: every method is safe for concurrent use. One save attempt
// runs at a time; Signal never waits for one.
type stopper struct {
	log *slog.Logger
	// save writes the final snapshot; on success nothing may change the
	// state any more (it holds the store). nil: nothing to save (a
	// replicated node, whose state is the Raft log).
	save func() error
	// probe writes the snapshot while traffic goes on; a retry tries it
	// before save, so that a disk still failing does not hold the store
	// for the length of a save. nil: retries go straight to save.
	probe func() error
	// saveByDefault: a shutdown saves unless NOSAVE (--save > 0).
	saveByDefault bool
	// afterFunc runs f after d and returns what stops it (time.AfterFunc).
	afterFunc func(d time.Duration, f func()) (stop func() bool)

	attempt sync.Mutex // held for a save attempt

	mu        sync.Mutex // guards the fields below
	pending   bool       // a shutdown was asked for and has not ended or been aborted
	failed    bool       // a shutdown save failed: exiting unsaved is ExitUnsaved
	decided   bool       // done has its value
	delay     time.Duration
	stopRetry func() bool // cancels the scheduled retry; nil if none
	done      chan stopping
}

func newStopper(log *slog.Logger, save, probe func() error, saveByDefault bool) *stopper {
	return &stopper{
		log:           log,
		save:          save,
		probe:         probe,
		saveByDefault: saveByDefault,
		afterFunc: func(d time.Duration, f func()) func() bool {
			return time.AfterFunc(d, f).Stop
		},
		done: make(chan stopping, 1),
	}
}

// Done delivers how the process ends, once.
func (s *stopper) Done() <-chan stopping { return s.done }

// Signal asks for a shutdown, as SIGTERM and SIGINT do; while one is in
// progress (saving or retrying) it stops the process at once, unsaved.
func (s *stopper) Signal(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.decided {
		return
	}
	if s.pending {
		s.log.Warn("received "+name+" during a shutdown: exiting now, without saving", "signal", name)
		s.decideLocked(ExitUnsaved, false)
		return
	}
	s.log.Info("shutting down", "signal", name)
	s.pending = true
	if s.save == nil || !s.saveByDefault {
		s.decideLocked(s.unsavedCodeLocked(), false)
		return
	}
	go s.try(false)
}

// Shutdown is SHUTDOWN: see commands.Shutdowner.
func (s *stopper) Shutdown(opts commands.ShutdownOptions) error {
	if s.save == nil && opts.Save {
		s.log.Info("SHUTDOWN SAVE on a replicated node: there is no snapshot file, the state is in the Raft log")
	}
	if s.save == nil || opts.NoSave || !opts.Save && !s.saveByDefault {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.decideLocked(s.unsavedCodeLocked(), false)
		return nil
	}
	s.mu.Lock()
	s.pending = true
	s.mu.Unlock()
	err := s.try(false)
	if err == nil || !opts.Force {
		return err
	}
	s.log.Warn("the save failed and SHUTDOWN FORCE was given: exiting anyway, without saving")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.decideLocked(ExitUnsaved, false)
	return nil
}

// AbortShutdown is SHUTDOWN ABORT: it waits for a save attempt in
// progress (which may end the process) and cancels the retries.
func (s *stopper) AbortShutdown() bool {
	s.attempt.Lock()
	defer s.attempt.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.pending || s.decided {
		return false
	}
	s.pending = false
	s.delay = 0
	if s.stopRetry != nil {
		s.stopRetry()
		s.stopRetry = nil
	}
	s.log.Warn("shutdown aborted by SHUTDOWN ABORT; serving on")
	return true
}

// errNotPending is try's answer when the shutdown was aborted before its
// turn came.
var errNotPending = errors.New("no shutdown in progress")

// try makes one save attempt for the pending shutdown. On success the
// process is to exit with ExitOK; on failure a retry is scheduled. retry
// says whether this is a scheduled retry (which probes first).
func (s *stopper) try(retry bool) error {
	s.attempt.Lock()
	defer s.attempt.Unlock()
	s.mu.Lock()
	if s.decided {
		s.mu.Unlock()
		return nil // exiting already
	}
	if !s.pending {
		s.mu.Unlock()
		return errNotPending
	}
	if retry {
		s.stopRetry = nil
	}
	s.mu.Unlock()

	var err error
	if retry && s.probe != nil {
		err = s.probe()
	}
	if err == nil {
		err = s.save()
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		s.decideLocked(ExitOK, true)
		return nil
	}
	s.failed = true
	if s.decided {
		return err
	}
	if s.stopRetry == nil {
		s.delay = min(max(2*s.delay, minRetry), maxRetry)
		s.stopRetry = s.afterFunc(s.delay, func() { s.try(true) })
	}
	s.log.Error("saving the snapshot at shutdown failed: staying up, serving, and retrying; "+
		"SHUTDOWN ABORT cancels the shutdown, SHUTDOWN NOSAVE or a second signal stops without saving",
		"err", err, "retry_in", s.delay)
	return err
}

// unsavedCodeLocked is the exit code of stopping without a save: ExitOK,
// unless a shutdown save has failed. It requires that s.mu is held.
func (s *stopper) unsavedCodeLocked() int {
	if s.failed {
		return ExitUnsaved
	}
	return ExitOK
}

// decideLocked settles how the process ends, once. It requires that s.mu
// is held.
func (s *stopper) decideLocked(code int, held bool) {
	if s.decided {
		return
	}
	s.decided = true
	if s.stopRetry != nil {
		s.stopRetry()
		s.stopRetry = nil
	}
	if code == ExitUnsaved {
		s.log.Error("exiting without saving the final state: the snapshot on disk is older than what was served",
			"exit_code", code)
	}
	s.done <- stopping{code: code, held: held}
}
