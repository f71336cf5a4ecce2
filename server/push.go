package server

import (
	"sync"
	"sync/atomic"
)

// Push: bytes another goroutine hands a connection to write after its own
// replies (MONITOR's feed), without ever waiting for the client. The bytes
// wait in the connection's push buffer until its owner writes them: an
// event loop takes them at its next wake-up and writes what the socket
// takes, a goroutine's client has a writer goroutine of its own for them.
// What waits (the push buffer and the replies not yet written) is bounded
// by the limit each Push gives: past it the connection is closed, so a
// client that never reads costs the server a bounded buffer and nothing
// else.

// pushState is a connection's push buffer, guarded by mu.
type pushState struct {
	mu      sync.Mutex
	buf     []byte
	queued  bool          // the owner has been told and has not taken buf yet
	signal  chan struct{} // a goroutine's client: wakes its writer (made at the first Push)
	stopped bool          // the connection is gone: Push drops everything
	unsent  atomic.Int64  // bytes handed to the socket's writer and not yet written
}

// Push queues b to be written to the client after what it has been sent
// so far, and reports whether it was queued. If what would wait for the
// client exceeds limit bytes, nothing is queued and the connection is
// closed instead (Redis closes a monitor over its output buffer limit the
// same way). Any goroutine; it never blocks on the client. A loopback
// connection takes no pushes.
func (c *Conn) Push(b []byte, limit int) bool {
	p := &c.push
	p.mu.Lock()
	if p.stopped || c.killed.Load() || (c.loop == nil && c.conn == nil) {
		p.mu.Unlock()
		return false
	}
	if int64(len(p.buf)+len(b))+p.unsent.Load() > int64(limit) {
		p.stopped = true
		p.buf = nil
		p.mu.Unlock()
		c.srv.log.Warn("closing a client whose pushed output went over its limit (a MONITOR that does not read)",
			"client", c.id, "addr", c.addr, "limit", limit)
		c.kill()
		return false
	}
	p.buf = append(p.buf, b...)
	notify := !p.queued
	p.queued = true
	if notify && c.loop == nil && p.signal == nil {
		p.signal = make(chan struct{}, 1)
		go c.pushWriter(p.signal)
	}
	sig := p.signal
	p.mu.Unlock()
	if !notify {
		return true
	}
	if c.loop != nil {
		c.loop.queuePush(c)
		return true
	}
	select {
	case sig <- struct{}{}:
	default:
	}
	return true
}

// takePush returns the pushed bytes and empties the buffer, which spare
// (emptied) becomes.
func (p *pushState) take(spare []byte) []byte {
	p.mu.Lock()
	b := p.buf
	p.buf, p.queued = spare[:0], false
	p.mu.Unlock()
	return b
}

// stopPush drops the pushes of a connection that is closing and ends its
// writer. Any goroutine.
func (c *Conn) stopPush() {
	p := &c.push
	p.mu.Lock()
	p.stopped, p.buf = true, nil
	if p.signal != nil {
		close(p.signal)
		p.signal = nil
	}
	p.mu.Unlock()
}

// pushWriter writes a goroutine's client's pushes until the connection
// closes: a client that does not read blocks this goroutine alone, while
// Push keeps counting what waits and closes the connection at its limit.
func (c *Conn) pushWriter(signal <-chan struct{}) {
	var spare []byte
	for range signal {
		b := c.push.take(spare)
		if len(b) == 0 {
			spare = b
			continue
		}
		c.push.unsent.Store(int64(len(b)))
		n, err := c.conn.Write(b)
		c.netOut.Add(int64(n))
		if n > 0 {
			c.writes.Add(1)
		}
		c.push.unsent.Store(0)
		if err != nil {
			return
		}
		spare = b
	}
}
