package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// The Raft port under mutual TLS (--tls-replication yes). Every connection,
// in and out, completes a TLS handshake in which both sides present a
// certificate that chains to the group's CA; a connection that does not is
// closed before raft reads a byte of it, so a process without such a
// certificate cannot start an election (TimeoutNow), vote, or append,
// wherever it connects from. The address filter (peerfilter.go) still runs
// first: a stranger's connection is closed before it costs a handshake.

const (
	// tlsHandshakeTimeout bounds an incoming handshake.
	tlsHandshakeTimeout = 10 * time.Second
	// maxHandshakes bounds the incoming handshakes in progress; a
	// connection beyond it is closed at once, so that slow or silent
	// connections cannot hold the port.
	maxHandshakes = 64
	// probeVerdict is how long a probe waits, after its handshake, for the
	// other side to reject this node's certificate: with TLS 1.3 the client
	// finishes its handshake before the server has checked the client's
	// certificate, and a refusal arrives as an alert right after.
	probeVerdict = 300 * time.Millisecond
)

// tlsListener hands raft only the connections whose TLS handshake, run in a
// goroutine of its own (never in raft's accept loop), succeeded.
//
// Concurrency: Accept may be called by one goroutine; Close by any.
type tlsListener struct {
	inner  net.Listener
	cfg    *tls.Config
	refuse *refusals // counts and logs refusals
	ready  chan net.Conn
	done   chan struct{}
	slots  chan struct{} // a token per handshake in progress
	once   sync.Once

	inFlight openConns // connections in their handshake
}

func newTLSListener(inner net.Listener, cfg *tls.Config, refuse *refusals) *tlsListener {
	l := &tlsListener{inner: inner, cfg: cfg, refuse: refuse, ready: make(chan net.Conn),
		done: make(chan struct{}), slots: make(chan struct{}, maxHandshakes)}
	go l.acceptLoop()
	return l
}

func (l *tlsListener) acceptLoop() {
	for {
		c, ok := nextConn(l.inner, l.done)
		if !ok {
			l.Close() // the inner listener closed under it
			return
		}
		select {
		case l.slots <- struct{}{}:
			go l.handshake(c)
		default:
			c.Close()
			l.refuse.refuse("raft: refused a connection: too many TLS handshakes in progress", c.RemoteAddr(), nil)
		}
	}
}

func (l *tlsListener) handshake(c net.Conn) {
	defer func() { <-l.slots }()
	if !l.inFlight.add(c) {
		c.Close()
		return
	}
	defer l.inFlight.remove(c)
	tc := tls.Server(c, l.cfg)
	ctx, cancel := context.WithTimeout(context.Background(), tlsHandshakeTimeout)
	err := tc.HandshakeContext(ctx)
	cancel()
	if err != nil {
		select {
		case <-l.done:
			c.Close()
			return // closed by Close, not refused
		default:
		}
		// Counted before the close, so that a peer that sees its
		// connection closed finds it in INFO's raft_refused_connections.
		l.refuse.refuse("raft: refused a connection without a valid certificate from the group's CA (mutual TLS)",
			c.RemoteAddr(), err)
		c.Close()
		return
	}
	select {
	case l.ready <- tc:
	case <-l.done:
		tc.Close()
	}
}

func (l *tlsListener) Accept() (net.Conn, error) { return acceptFrom(l.ready, l.done) }

func (l *tlsListener) Close() error {
	var err error
	l.once.Do(func() {
		close(l.done)
		err = l.inner.Close()
		l.inFlight.closeAll() // their handshakes fail at once
	})
	return err
}

func (l *tlsListener) Addr() net.Addr { return l.inner.Addr() }

// dialTLS connects with d and completes a TLS handshake as a client within
// timeout. A nil cfg returns the plain connection.
func dialTLS(d net.Dialer, addr string, cfg *tls.Config, timeout time.Duration) (net.Conn, error) {
	d.Timeout = timeout
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil || cfg == nil {
		return c, err
	}
	tc := tls.Client(c, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return tc, nil
}

// errProbe says that a would-be member's Raft port failed the mutual TLS
// handshake.
var errProbe = errors.New("mutual TLS with its Raft port failed")

// probe checks that the Raft port at addr completes a mutual TLS handshake
// with this node: its certificate chains to the CA, and it accepts this
// node's. It then closes the connection (raft sees an end of stream and
// drops it quietly).
func (s *streamLayer) probe(addr string) error {
	if s.clientTLS == nil {
		return nil
	}
	c, err := dialTLS(s.dialer, addr, s.clientTLS, dialTimeout)
	if err != nil {
		return fmt.Errorf("%w at %s: %v", errProbe, addr, err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(probeVerdict))
	var b [1]byte
	_, err = c.Read(b[:])
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return nil // no alert: the other side kept the connection
	}
	return fmt.Errorf("%w at %s: it refused this node's certificate: %v", errProbe, addr, err)
}
