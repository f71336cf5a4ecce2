package server

import (
	"sync/atomic"
	"time"
)

// The settings CONFIG SET may change while the server serves: maxclients,
// timeout, proto-max-bulk-len and client-query-buffer-limit. Each is read
// atomically where it is used, so a change applies to every connection at
// its next batch (or, for the idle timeout, its next wait), without a lock
// on the command path.

// liveSettings hold the changeable settings; New copies them from Config.
type liveSettings struct {
	maxClients atomic.Int64
	idle       atomic.Int64                 // ns; 0: none
	limits     atomic.Pointer[ReaderLimits] // replaced whole, never changed in place
	queryBuf   atomic.Int64
}

func (l *liveSettings) init(cfg *Config) {
	l.maxClients.Store(int64(cfg.MaxClients))
	l.idle.Store(int64(cfg.IdleTimeout))
	lim := cfg.Limits
	l.limits.Store(&lim)
	l.queryBuf.Store(int64(cfg.QueryBufferLimit))
}

// idleTimeout returns the idle timeout in force (0: none).
func (s *Server) idleTimeout() time.Duration { return time.Duration(s.live.idle.Load()) }

// SetMaxClients changes maxclients (at least 1): connections beyond it are
// refused from now on; those already served stay. Any goroutine.
func (s *Server) SetMaxClients(n int) error {
	if n < 1 {
		return errSettingRange
	}
	s.live.maxClients.Store(int64(n))
	return nil
}

// SetIdleTimeout changes the idle timeout (0: none). Any goroutine.
func (s *Server) SetIdleTimeout(d time.Duration) error {
	if d < 0 {
		return errSettingRange
	}
	s.live.idle.Store(int64(d))
	s.mu.Lock()
	for _, l := range s.loops { // a loop that waits for no timeout wakes to start checking
		l.wake()
	}
	s.mu.Unlock()
	return nil
}

// SetMaxBulk changes proto-max-bulk-len (at least 1) for the commands read
// from now on. Any goroutine.
func (s *Server) SetMaxBulk(n int64) error {
	if n < 1 {
		return errSettingRange
	}
	lim := *s.live.limits.Load()
	lim.MaxBulk = n
	s.live.limits.Store(&lim)
	return nil
}

// SetQueryBufferLimit changes client-query-buffer-limit (at least 1).
// Any goroutine.
func (s *Server) SetQueryBufferLimit(n int) error {
	if n < 1 {
		return errSettingRange
	}
	s.live.queryBuf.Store(int64(n))
	return nil
}
