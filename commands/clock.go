package commands

import (
	"sync"
	"time"
)

// Clock is the server's one source of time: the edge reads it once per
// pipeline batch and passes the instant down. It runs on the monotonic clock
// from a wall-clock origin taken at start, so a wall-clock step (NTP) never
// moves decisions backwards. DEBUG CLOCK can freeze it at an instant or move
// it forward, for tests and demos.
//
// Concurrency: safe for concurrent use. The zero value is not usable; call
// NewClock.
type Clock struct {
	origin time.Time

	mu     sync.RWMutex
	frozen bool
	at     int64 // the frozen instant, unix ns
	offset int64 // added to the running clock
}

// NewClock returns a clock that runs from now.
func NewClock() *Clock { return &Clock{origin: time.Now()} }

// Now returns the current instant in unix nanoseconds. This is the edge's
// clock read.
func (c *Clock) Now() int64 {
	c.mu.RLock()
	frozen, at, off := c.frozen, c.at, c.offset
	c.mu.RUnlock()
	if frozen {
		return at
	}
	return c.origin.UnixNano() + int64(time.Since(c.origin)) + off
}

// Set freezes the clock at the unix instant ns.
func (c *Clock) Set(ns int64) {
	c.mu.Lock()
	c.frozen, c.at = true, ns
	c.mu.Unlock()
}

// Advance moves the clock forward by d nanoseconds, frozen or running.
func (c *Clock) Advance(d int64) {
	c.mu.Lock()
	if c.frozen {
		c.at += d
	} else {
		c.offset += d
	}
	c.mu.Unlock()
}

// Real returns the clock to real time.
func (c *Clock) Real() {
	c.mu.Lock()
	c.frozen, c.offset = false, 0
	c.mu.Unlock()
}

// Frozen reports whether DEBUG CLOCK has taken the clock over.
func (c *Clock) Frozen() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.frozen || c.offset != 0
}
