package commands

import (
	"sync"
	"sync/atomic"
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
	state  atomic.Pointer[clockState] // replaced whole by DEBUG CLOCK; nil: real time
	mu     sync.Mutex                 // serializes the replacements
}

// clockState is what DEBUG CLOCK set. Readers load it without a lock, so
// that the per-batch clock read writes no shared cache line.
type clockState struct {
	frozen bool
	at     int64 // the frozen instant, unix ns
	offset int64 // added to the running clock
}

// NewClock returns a clock that runs from now.
func NewClock() *Clock { return &Clock{origin: time.Now()} }

// Now returns the current instant in unix nanoseconds. This is the edge's
// clock read.
func (c *Clock) Now() int64 {
	st := c.state.Load()
	if st == nil {
		return c.origin.UnixNano() + int64(time.Since(c.origin))
	}
	if st.frozen {
		return st.at
	}
	return c.origin.UnixNano() + int64(time.Since(c.origin)) + st.offset
}

// realNow returns the instant of the running clock, whatever DEBUG CLOCK
// set: the same scale as Now when DEBUG CLOCK set nothing.
func (c *Clock) realNow() int64 { return c.origin.UnixNano() + int64(time.Since(c.origin)) }

// batchStart returns, on realNow's scale, when a batch read at the instant
// now began: now itself, unless DEBUG CLOCK set the clock, then realNow.
func (c *Clock) batchStart(now int64) int64 {
	if c.state.Load() == nil {
		return now
	}
	return c.realNow()
}

func (c *Clock) update(fn func(st *clockState)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var next clockState
	if cur := c.state.Load(); cur != nil {
		next = *cur
	}
	fn(&next)
	if !next.frozen && next.offset == 0 {
		c.state.Store(nil)
		return
	}
	c.state.Store(&next)
}

// Set freezes the clock at the unix instant ns.
func (c *Clock) Set(ns int64) {
	c.update(func(st *clockState) { st.frozen, st.at = true, ns })
}

// Advance moves the clock forward by d nanoseconds, frozen or running.
func (c *Clock) Advance(d int64) {
	c.update(func(st *clockState) {
		if st.frozen {
			st.at += d
		} else {
			st.offset += d
		}
	})
}

// Real returns the clock to real time.
func (c *Clock) Real() {
	c.update(func(st *clockState) { *st = clockState{} })
}

// Frozen reports whether DEBUG CLOCK has taken the clock over.
func (c *Clock) Frozen() bool { return c.state.Load() != nil }
