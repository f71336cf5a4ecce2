package server

// Handler runs the commands of the connections a Server serves, in the
// manner of redcon's Handler: one call per command, and one at the end of
// each batch, where work the handler deferred is carried out before the
// batch's replies are written in one go.
//
// A batch is what one read brought: the transport reads whatever bytes have
// arrived, reads its Clock once (Conn.Now), calls Command for every
// complete command in them, in order, then EndBatch, then writes Conn.Out.
// It also calls EndBatch, before going on with the same batch and the same
// instant, after an inline command (its arguments live in a scratch buffer
// that the next inline command reuses), before writing replies early once
// Conn.Out passes 64 KiB, and before it answers a broken frame.
//
// Arguments: args and the bytes they point to belong to the transport and
// are valid until the next EndBatch call on the same connection; the
// transport never moves, reuses or compacts them before it has called
// EndBatch. A handler that keeps anything longer copies it.
//
// Concurrency: the calls for one connection come from one goroutine at a
// time (the connection's event loop, its own goroutine, or the goroutine
// a HandOff runs its batch on), never concurrently; calls for different connections run concurrently. Open
// comes first and Close last; nothing is called after Close.
type Handler interface {
	// Open sets up a new connection's session (Conn.SetSession) before its
	// first command and before any other goroutine can see the connection
	// (Server.Conns).
	Open(c *Conn)
	// Command runs one command and appends its reply to c.Out, or defers
	// the work and the reply to EndBatch. args[0] is the command's name;
	// there is always at least one argument.
	Command(c *Conn, args [][]byte)
	// EndBatch carries out the work deferred since the last call and
	// appends its replies, so that c.Out holds every reply in command
	// order. It is called once at least per batch.
	EndBatch(c *Conn)
	// Close is called once the connection is gone; its reading methods
	// still answer, and nothing may be written.
	Close(c *Conn)
}

// Blocker is implemented by handlers whose commands may wait, for a Raft
// log or a peer, and that do not use Conn.Suspend and Conn.HandOff to keep
// an event loop from waiting (suspend.go). An event loop serves many
// clients and must never wait, so a Server whose Handler reports MayBlock
// serves every client from its own goroutine, whatever Config.EventLoops
// says.
type Blocker interface {
	MayBlock() bool
}
