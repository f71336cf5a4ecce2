package server

import "time"

// Parking (CLIENT PAUSE): a Handler that must not run a command yet calls
// Park during Command. The command is then kept unread, with everything
// after it, the batch ends there (the replies of the commands before it
// are written), and the transport runs the connection's input again every
// parkRetry until the Handler runs it: an event loop keeps serving its
// other clients meanwhile, and a goroutine's client waits on its own.

const parkRetry = 10 * time.Millisecond

// Park tells the transport that the command being run was not run: it is
// read again later, with what follows it. Owner only, during Command.
func (c *Conn) Park() { c.parked = true }
