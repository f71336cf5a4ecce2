package httplimit

import (
	"sync"
	"time"
)

// Breaker configures the circuit breaker in front of the limiter: after Failures decisions in
// a row have failed, it opens, and for Cooldown no decision is asked for (each request is
// handled as OnError says, at once); then one request probes the limiter, and its success
// closes the breaker, its failure opens it again.
type Breaker struct {
	Failures int           // default 5
	Cooldown time.Duration // default 1s
}

// BreakerState is the breaker's state.
type BreakerState uint8

const (
	BreakerClosed   BreakerState = iota // decisions are asked for
	BreakerOpen                         // decisions are skipped
	BreakerHalfOpen                     // one probe is in flight
)

func (s BreakerState) String() string {
	return [...]string{"closed", "open", "half-open"}[s]
}

// breaker is the state machine. Its methods are safe for concurrent use.
type breaker struct {
	threshold int
	cooldown  time.Duration
	now       func() time.Time

	mu        sync.Mutex
	failures  int       // in a row
	openUntil time.Time // zero: closed
	probing   bool
	trips     int64
}

// allow reports whether a decision may be asked for now. After the cooldown it lets one probe
// through, and refuses the others until the probe reports.
func (b *breaker) allow() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.openUntil.IsZero():
		return true
	case b.probing || b.now().Before(b.openUntil):
		return false
	}
	b.probing = true
	return true
}

// report records the outcome of a decision that allow let through.
func (b *breaker) report(ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ok {
		b.failures, b.openUntil, b.probing = 0, time.Time{}, false
		return
	}
	b.failures++
	if b.probing || b.failures >= b.threshold {
		if b.openUntil.IsZero() {
			b.trips++
		}
		b.openUntil, b.probing = b.now().Add(b.cooldown), false
	}
}

func (b *breaker) state() (BreakerState, int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.openUntil.IsZero():
		return BreakerClosed, b.trips
	case b.probing:
		return BreakerHalfOpen, b.trips
	}
	return BreakerOpen, b.trips
}
