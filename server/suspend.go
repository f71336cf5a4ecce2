package server

// Waiting without blocking an event loop. A Handler whose work waits for
// something else (a replicated node's Raft log) keeps an event loop's
// clients on their loop in two ways:
//
//   - Suspend: the work is started elsewhere and the batch completes when
//     it is done. The transport runs no further command of the connection
//     and writes none of its replies until Resume; then, on the
//     connection's owner, it calls EndBatch, which appends the replies,
//     and goes on with the input that follows. Meanwhile the loop serves
//     its other clients. Replies stay in command order, and a connection's
//     next command runs only after the replies before it are in Out.
//   - HandOff: the command in hand may wait where it runs. The transport
//     runs it and the rest of the batch from a goroutine of its own that
//     may wait (MayWait is then true), as a goroutine-per-client server
//     would, and takes the connection back onto its loop once that batch's
//     replies are in Out.
//
// A goroutine's and a loopback connection may wait already: on them
// Suspend makes the transport wait for Resume where it is.

// MayWait reports whether the Handler's calls for the connection come from
// a goroutine that may block: a goroutine's or a loopback connection, or
// an event loop's during a HandOff. When it is false, the Handler must
// not wait: it uses Suspend or HandOff. Owner only.
func (c *Conn) MayWait() bool { return c.loop == nil || c.handedOff }

// Suspend tells the transport that the batch's work completes later, when
// some goroutine calls Resume; call it before handing Resume to whatever
// does the work. Called during Command, the command counts as not run: it
// is read again, with what follows it, after Resume and EndBatch; called
// during EndBatch, every command before it has run. Until Resume the
// transport calls nothing of the Handler for the connection (Close aside,
// if the server stops without it), and the input the batch's arguments
// point into stays where it is. Owner only, once per Resume.
func (c *Conn) Suspend() {
	c.suspended = true
	if c.inCommand {
		c.rewind = true
	}
	c.loopWaits.Store(c.loop != nil && !c.handedOff)
	if c.resumed == nil {
		c.resumed = make(chan struct{}, 1)
	}
}

// Resume ends a Suspend: the transport calls EndBatch on the connection's
// owner and goes on. Any goroutine, once per Suspend.
func (c *Conn) Resume() {
	if c.loopWaits.Load() {
		c.loop.queueResume(c)
		return
	}
	c.resumed <- struct{}{}
}

// HandOff tells the transport, during Command, that the command may wait:
// it counts as not run, and the transport runs it, with the rest of the
// batch, from a goroutine that may wait. Owner only, and only while
// MayWait is false (otherwise the command is simply read again at once).
func (c *Conn) HandOff() {
	c.rewind = true
	if c.loop != nil && !c.handedOff {
		c.handOff = true
	}
}

// awaitResume waits where it is for a suspended batch of a connection that
// may wait, then has the Handler end the batch (EndBatch, which may
// suspend it again). It reports false, having done nothing, for an event
// loop's connection: its loop waits for the Resume instead.
func (c *Conn) awaitResume() bool {
	if c.loopWaits.Load() {
		return false
	}
	for c.suspended {
		<-c.resumed
		c.suspended = false
		c.srv.h.EndBatch(c)
	}
	return true
}

// away reports, on an event loop, whether c's batch waits for a Resume or
// runs on a goroutine: the loop then touches nothing of c but its
// descriptor. Loop only; handedOff first, as the goroutine may suspend.
func (c *Conn) away() bool { return c.handedOff || c.suspended }

// endBatch has the Handler end a batch whose wait is over.
func (c *Conn) endBatch() {
	defer c.recoverHandler()
	c.srv.h.EndBatch(c)
}
