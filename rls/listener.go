package rls

import (
	"net"
	"sync"
	"sync/atomic"
)

// connLimit is a listener that serves at most max connections at once. A
// connection accepted past them is closed at once, so that its client
// learns at once (Envoy then tries another host) instead of waiting in the
// listen backlog. Accept is called by one goroutine (grpc-go's Serve);
// the connections close from any.
type connLimit struct {
	net.Listener
	max  int64
	open atomic.Int64
}

func (l *connLimit) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) > l.max {
			l.open.Add(-1)
			c.Close()
			continue
		}
		return &limitedConn{Conn: c, l: l}, nil
	}
}

// limitedConn gives its place back when it is first closed.
type limitedConn struct {
	net.Conn
	l    *connLimit
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.open.Add(-1) })
	return err
}
