package server

import (
	"context"
	"crypto/tls"
	"net"
	"time"
)

// TLS clients (tls-port). A TLS connection is served by its own goroutine,
// whatever Config.EventLoops says: the event loops read and write raw
// descriptors, and crypto/tls needs the net.Conn it wraps. A server with
// event loops serves its plaintext clients on them and its TLS clients on
// goroutines, side by side, through the same Handler.

// tlsHandshakeTimeout bounds a TLS handshake: a client that connects and
// says nothing holds a goroutine and a place under maxclients only this
// long. It is not the idle timeout, which starts after the handshake.
const tlsHandshakeTimeout = 10 * time.Second

// ServeTLS is Serve for a listener whose clients speak TLS: it wraps ln
// with cfg (its GetConfigForClient may change the certificate between
// handshakes; connections already open keep theirs). Every client is
// served by its own goroutine, which runs the handshake before reading its
// first command.
func (s *Server) ServeTLS(ln net.Listener, cfg *tls.Config) error {
	return s.serve(tls.NewListener(ln, cfg), ln)
}

// TLS reports whether the connection speaks TLS. Any goroutine.
func (c *Conn) TLS() bool { _, ok := c.conn.(*tls.Conn); return ok }

// handshake runs a TLS connection's handshake, bounded by
// tlsHandshakeTimeout and by Shutdown, and reports whether it succeeded.
// A connection that is not TLS has nothing to do. Owner only.
func (c *Conn) handshake() bool {
	tc, ok := c.conn.(*tls.Conn)
	if !ok {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), tlsHandshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		c.srv.log.Debug("TLS handshake failed", "client", c.id, "addr", c.addr, "err", err)
		return false
	}
	return true
}

// underlying returns the socket under a TLS connection, nc itself
// otherwise: for its descriptor (CLIENT LIST fd=).
func underlying(nc net.Conn) net.Conn {
	if tc, ok := nc.(*tls.Conn); ok {
		return tc.NetConn()
	}
	return nc
}
