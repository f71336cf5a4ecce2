package cluster

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// streamLayer is raft's TCP stream layer with three differences from
// raft.NewTCPTransport's: connections to peers leave from the address the
// node's Raft port is bound to, the listener keeps only connections its
// peerFilter admits, and with TLS configurations every connection is under
// mutual TLS (tlsport.go). Leaving from the bound address keeps Raft traffic
// on the chosen interface on a host with several addresses, and it is the
// address the other members' filters (and a firewall) see.
type streamLayer struct {
	ln        net.Listener
	advertise net.Addr
	dialer    net.Dialer
	clientTLS *tls.Config // nil: plaintext
	group     uint8       // on a RaftPort, the group whose peers it dials (mux.go); 0 sends no preamble
}

// raftTLS are the two sides of the Raft port's mutual TLS: server for the
// listener (it must require and verify a client certificate) and client
// for connections to peers (it must present one and verify the server's).
type raftTLS struct {
	server, client *tls.Config
}

// newStreamLayer listens on bind and advertises advertise, or with
// advertise's port 0 (bind's port 0) the port it is bound to. With a filter, Accept waits until the
// filter is armed and then returns only the connections it admits; with
// sec, only those that then complete mutual TLS.
func newStreamLayer(bind string, advertise string, filter *peerFilter, sec *raftTLS) (*streamLayer, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	adv, err := advertiseAddr(advertise, ln.Addr()) // port 0: the port the kernel chose
	if err != nil {
		ln.Close()
		return nil, err
	}
	s := &streamLayer{ln: ln, advertise: adv}
	if ip := ln.Addr().(*net.TCPAddr).IP; !ip.IsUnspecified() {
		s.dialer.LocalAddr = &net.TCPAddr{IP: ip}
	}
	if filter != nil {
		s.ln = &filteredListener{Listener: ln, filter: filter, closed: make(chan struct{})}
	}
	if sec != nil {
		if filter == nil {
			ln.Close()
			return nil, errors.New("cluster: the Raft port's TLS needs its peer filter")
		}
		s.ln = newTLSListener(s.ln, sec.server, filter.refusals)
		s.clientTLS = sec.client
	}
	return s, nil
}

func (s *streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := dialTLS(s.dialer, string(address), s.clientTLS, timeout)
	if err != nil || s.group == 0 {
		return c, err
	}
	if err := writePreamble(c, s.group, timeout); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (s *streamLayer) Accept() (net.Conn, error) { return s.ln.Accept() }
func (s *streamLayer) Close() error              { return s.ln.Close() }
func (s *streamLayer) Addr() net.Addr            { return s.advertise }

// bound is the address the Raft port listens on (RaftBind with the port
// the kernel chose for port 0).
func (s *streamLayer) bound() net.Addr { return s.ln.Addr() }

// newTCPTransport returns the node's transport over a streamLayer of its
// own (entrytransport.go).
func newTCPTransport(bind string, advertise string, filter *peerFilter, sec *raftTLS, log *slog.Logger) (*entryTransport, *streamLayer, error) {
	s, err := newStreamLayer(bind, advertise, filter, sec)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: raft transport on %s: %w", bind, err)
	}
	return newEntryTransport(s, log), s, nil
}

// nextConn returns the next connection ln accepts, retrying a transient
// failure (EMFILE) every 10 ms as raft's own accept loop does, or false once
// done or ln is closed.
func nextConn(ln interface{ Accept() (net.Conn, error) }, done <-chan struct{}) (net.Conn, bool) {
	for {
		c, err := ln.Accept()
		if err == nil {
			return c, true
		}
		select {
		case <-done:
			return nil, false
		default:
		}
		if errors.Is(err, net.ErrClosed) {
			return nil, false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// openConns are the connections a listener holds between accepting them
// and handing them on, which its Close closes.
type openConns struct {
	mu     sync.Mutex
	set    map[net.Conn]struct{}
	closed bool
}

// add records c, or reports false once closeAll has run; c is then the
// caller's to close.
func (o *openConns) add(c net.Conn) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return false
	}
	if o.set == nil {
		o.set = map[net.Conn]struct{}{}
	}
	o.set[c] = struct{}{}
	return true
}

func (o *openConns) remove(c net.Conn) {
	o.mu.Lock()
	delete(o.set, c)
	o.mu.Unlock()
}

// closeAll closes every connection recorded, and refuses any later one.
func (o *openConns) closeAll() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	for c := range o.set {
		c.Close()
	}
	o.set = nil
}

// acceptFrom is the Accept of a listener that another goroutine feeds: the
// next connection handed on conns, or net.ErrClosed once done is closed.
func acceptFrom(conns <-chan net.Conn, done <-chan struct{}) (net.Conn, error) {
	select {
	case c := <-conns:
		return c, nil
	case <-done:
		return nil, net.ErrClosed
	}
}
