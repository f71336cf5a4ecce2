package server

import (
	"fmt"
	"log/slog"
	"runtime"
	"time"
)

// Config is the transport's configuration. Start from DefaultConfig and
// change what differs; New refuses a Config that Validate refuses.
type Config struct {
	// MaxClients is the most connections served at once (maxclients);
	// past it a new one gets "-ERR max number of clients reached".
	MaxClients int
	// IdleTimeout closes a client that has neither sent nor taken a byte
	// for this long (timeout); 0: never.
	IdleTimeout time.Duration
	// Limits bound one command (proto-max-bulk-len,
	// proto-max-multibulk-len, the inline line).
	Limits ReaderLimits
	// QueryBufferLimit is the most bytes buffered for one client's
	// unfinished command (client-query-buffer-limit).
	QueryBufferLimit int
	// MaxMemoryClients is the most bytes all clients' buffers may hold
	// together (maxmemory-clients); past it the clients holding the most
	// are closed, largest first. 0: no limit.
	MaxMemoryClients int64
	// EventLoops is how many epoll loops serve the clients. 0 gives every
	// client its own goroutine, as do a Handler whose commands may wait
	// (Blocker) and a system without epoll (Server.EventLoops says what is
	// in force).
	EventLoops int
	// Clock is read once per batch: the instant every command of the batch
	// runs at (Conn.Now). nil: the wall clock.
	Clock Clock
	// Logger receives the transport's log lines. nil: slog.Default().
	Logger *slog.Logger
}

// DefaultConfig returns the defaults: Redis's where they make sense for a
// server whose commands are small, and one event loop per core on Linux.
func DefaultConfig() Config {
	loops := 0
	if loopsSupported {
		loops = runtime.GOMAXPROCS(0)
	}
	return Config{
		MaxClients: 10000,
		Limits: ReaderLimits{
			MaxBulk:   1 << 20,
			MaxArgs:   1 << 20,
			MaxInline: 64 << 10,
		},
		QueryBufferLimit: 8 << 20,
		// Redis has none by default; sluice has one, because its commands
		// are small and a few hundred connections each holding an
		// unfinished 8 MiB command must not exhaust the machine. 256 MiB holds the first 16 KiB buffers of the
		// default 10000 clients (about 170 MB with their other state) with
		// room for a dozen at the query buffer limit.
		MaxMemoryClients: 256 << 20,
		EventLoops:       loops,
	}
}

// Validate reports the first setting that cannot work.
func (c *Config) Validate() error {
	switch {
	case c.MaxClients < 1:
		return fmt.Errorf("server: MaxClients %d: want at least 1", c.MaxClients)
	case c.IdleTimeout < 0:
		return fmt.Errorf("server: IdleTimeout %v: want 0 (none) or more", c.IdleTimeout)
	case c.Limits.MaxBulk < 1 || c.Limits.MaxArgs < 1 || c.Limits.MaxInline < 1:
		return fmt.Errorf("server: Limits %+v: every limit must be at least 1", c.Limits)
	case c.QueryBufferLimit < 1:
		return fmt.Errorf("server: QueryBufferLimit %d: want at least 1", c.QueryBufferLimit)
	case c.MaxMemoryClients < 0:
		return fmt.Errorf("server: MaxMemoryClients %d: want 0 (no limit) or more", c.MaxMemoryClients)
	case c.EventLoops < 0:
		return fmt.Errorf("server: EventLoops %d: want 0 (a goroutine per client) or more", c.EventLoops)
	}
	return nil
}

// Clock is the transport's source of a batch's instant, in unix
// nanoseconds. It must be safe for concurrent use.
type Clock interface {
	Now() int64
}

// wallClock is the Clock of a Config that names none.
type wallClock struct{}

func (wallClock) Now() int64 { return time.Now().UnixNano() }
