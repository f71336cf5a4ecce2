package server

import (
	"runtime/debug"
	"time"

	"github.com/sluice-rl/sluice/internal/replyerr"
)

// The batch: read what has arrived, run every complete command in it with
// one clock read, flush the replies once. This file holds what the two ways
// of serving a client share, and the goroutine-per-client loop; the event
// loops are in loop_linux.go.

const (
	initialIn   = 16 << 10 // a client's read buffer to begin with, and to shrink back to
	flushAtOut  = 64 << 10 // write replies early past this many bytes, to bound memory
	maxKeptOut  = 1 << 20  // output buffers larger than this are dropped after a write
	maxKeptArgs = 1 << 10  // argument tables larger than this are dropped after their batch
)

// runBatch runs every complete command in c's input at one instant, the
// Clock read once, and ends with EndBatch: afterwards c.Out holds every
// reply of the batch, in order. It stops early when the handler asks to
// close, a frame is broken (the reply is the protocol error) or, on an
// event loop, replies written early have filled the socket.
//
// A panic in the Handler is recovered (recoverHandler): the connection
// then gets an error and is closed, and the server goes on.
func (c *Conn) runBatch() {
	defer c.recoverHandler()
	h := c.srv.h
	c.now = c.srv.clock.Now()
	c.lastBatch.Store(c.now)
	lim := c.srv.live.limits.Load()
	for c.start < c.end && !c.closing && !c.waiting {
		buf := c.in[c.start:c.end]
		args, used, err := readCommandFrom(buf, c.args, &c.scratch, lim, c.unauth, &c.rs)
		c.args = args
		if err != nil {
			c.protocolError(err)
			break
		}
		if used == 0 {
			break // the rest has not arrived yet
		}
		c.start += used
		if len(args) == 0 {
			continue
		}
		c.inCommand = true
		h.Command(c, args)
		c.inCommand = false
		if c.parked || c.rewind { // not run: read it again later (park.go, suspend.go)
			c.start -= used
			c.rewind = false
			if c.parked || c.handOff || !c.awaitResume() {
				break
			}
			continue
		}
		if buf[0] != '*' {
			h.EndBatch(c) // inline arguments live in scratch, which the next line reuses
			if c.suspended && !c.awaitResume() {
				break
			}
		}
		if len(c.Out) > flushAtOut && !c.handedOff { // a handed-off batch is written by its loop
			h.EndBatch(c)
			if c.suspended && !c.awaitResume() {
				break
			}
			if !c.flush() {
				c.closing = true
			}
		}
	}
	if c.suspended || c.handOff {
		return // the input and what points into it stay as they are
	}
	h.EndBatch(c)
	if c.suspended && !c.awaitResume() {
		return
	}
	if cap(c.args) > maxKeptArgs && c.rs.count == 0 {
		c.args, c.rs.offs = nil, nil // one huge command does not pin its argument table
	}
	if c.start == c.end {
		c.shrinkIn() // now, not at the next read: an event loop may not read this client again for long
	}
}

// recoverHandler is the one recovery of a panic in a Handler: deferred
// around every call into it, it counts and logs the panic, replaces the
// replies with an error and has the connection closed once that is
// written. Only c's connection is affected.
func (c *Conn) recoverHandler() {
	p := recover()
	if p == nil {
		return
	}
	s := c.srv
	s.stats.panics.Add(1)
	s.log.Error("panic while serving a client; closing it",
		"client", c.id, "addr", c.addr, "panic", p, "stack", string(debug.Stack()))
	c.Out = replyerr.Append(c.Out[:0], errInternal)
	c.outOff, c.waiting = 0, false
	c.closing, c.panicked = true, true
}

// protocolError answers a broken frame as Redis does: the replies of the
// commands before it, then the error, then the connection is closed once
// they are written.
func (c *Conn) protocolError(err error) {
	defer c.recoverHandler()
	c.srv.h.EndBatch(c)
	if c.suspended && !c.awaitResume() {
		return // the frame is read again, and answered, once the replies before it are in
	}
	c.Out = replyerr.Append(c.Out, err)
	c.closing = true
	c.srv.stats.protoErrors.Add(1)
	c.srv.log.Debug("protocol error; closing client", "client", c.id, "addr", c.addr, "err", err)
}

// roomToRead makes space to read into: it moves an unfinished command to
// the front of the buffer, grows the buffer up to the query buffer limit,
// and shrinks a buffer that an earlier large command left behind; and it
// accounts the client's memory (see settle). It is called between batches,
// after EndBatch: no argument of a batch outlives the move. It returns
// errProtoQueryBufLimit if the unfinished command already fills the limit,
// and errClientEvicted if the client is to be closed for maxmemory-clients.
func (c *Conn) roomToRead() error {
	if c.start == c.end {
		c.shrinkIn()
		return c.settle(0)
	}
	if c.end < len(c.in) {
		return c.settle(0)
	}
	c.rs.moved = true // the unfinished command is about to move
	if c.start > 0 {
		c.end = copy(c.in, c.in[c.start:c.end])
		c.start = 0
		return c.settle(0)
	}
	limit := int(c.srv.live.queryBuf.Load())
	if len(c.in) >= limit {
		return errProtoQueryBufLimit
	}
	size := min(2*len(c.in), limit)
	if err := c.settle(int64(size - len(c.in))); err != nil {
		return err // accounted before it is allocated: the eviction runs first
	}
	grown := make([]byte, size)
	copy(grown, c.in[:c.end])
	c.in = grown
	return nil
}

// shrinkIn empties the query buffer, which must hold no unread input, and
// gives back one that a large command grew.
func (c *Conn) shrinkIn() {
	c.start, c.end = 0, 0
	if len(c.in) > initialIn {
		c.in = make([]byte, initialIn)
		clear(c.args[:cap(c.args)]) // they point into the old buffer and would keep it alive
	}
}

// serve is a goroutine-per-client connection's loop: read, run the batch,
// write, repeat.
func (c *Conn) serve() {
	defer c.srv.removeConn(c)
	defer c.conn.Close()
	defer c.stopPush()
	if !c.handshake() {
		return
	}
	for !c.closing && !c.killed.Load() {
		if err := c.roomToRead(); err == errClientEvicted {
			return
		} else if err != nil {
			c.protocolError(err)
			c.flush()
			return
		}
		if timeout := c.srv.idleTimeout(); timeout > 0 {
			c.conn.SetReadDeadline(time.Now().Add(timeout))
		}
		n, err := c.conn.Read(c.in[c.end:])
		if n > 0 {
			c.end += n
			c.netIn.Add(int64(n))
			c.reads.Add(1)
			for first := true; first || c.parked; first = false {
				if c.parked { // CLIENT PAUSE: retry until the Handler runs it
					time.Sleep(parkRetry)
					c.parked = false
					if c.killed.Load() {
						return
					}
				}
				c.runBatch()
				if c.panicked {
					c.conn.SetWriteDeadline(time.Now().Add(time.Second))
				}
				if c.settle(0) == errClientEvicted || !c.flush() {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// flush writes the replies. It reports false if the connection is gone.
// On an event loop it writes what the socket takes and leaves the rest
// waiting (see writeOut); a loopback connection keeps them for Feed.
func (c *Conn) flush() bool {
	switch {
	case c.loop != nil:
		return c.writeOut()
	case c.conn == nil:
		c.sink = append(c.sink, c.Out...)
		c.Out = c.Out[:0]
		return true
	}
	if len(c.Out) == 0 {
		return true
	}
	if t := c.srv.idleTimeout(); t > 0 && !c.panicked {
		c.conn.SetWriteDeadline(time.Now().Add(t)) // a client that reads no replies is idle too
	}
	n, err := c.conn.Write(c.Out)
	c.netOut.Add(int64(n))
	if n > 0 {
		c.writes.Add(1)
	}
	c.dropOut()
	return err == nil
}

// dropOut empties the written replies, giving back a buffer that a large
// reply grew.
func (c *Conn) dropOut() {
	if cap(c.Out) > maxKeptOut {
		c.Out = nil
	} else {
		c.Out = c.Out[:0]
	}
}
