package cluster

import (
	"fmt"
	"net"
	"os"
	"time"

	"github.com/hashicorp/raft"
)

// streamLayer is raft's TCP stream layer with two differences from
// raft.NewTCPTransport's: connections to peers leave from the address the
// node's Raft port is bound to, and the listener keeps only connections its
// peerFilter admits. Leaving from the bound address keeps Raft traffic on
// the chosen interface on a host with several addresses, and it is the
// address the other members' filters (and a firewall) see.
type streamLayer struct {
	ln        net.Listener
	advertise net.Addr
	dialer    net.Dialer
}

// newStreamLayer listens on bind. With a filter, Accept waits until the
// filter is armed and then returns only the connections it admits.
func newStreamLayer(bind string, advertise *net.TCPAddr, filter *peerFilter) (*streamLayer, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	s := &streamLayer{ln: ln, advertise: advertise}
	if ip := ln.Addr().(*net.TCPAddr).IP; !ip.IsUnspecified() {
		s.dialer.LocalAddr = &net.TCPAddr{IP: ip}
	}
	if filter != nil {
		s.ln = &filteredListener{Listener: ln, filter: filter, closed: make(chan struct{})}
	}
	return s, nil
}

func (s *streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := s.dialer
	d.Timeout = timeout
	return d.Dial("tcp", string(address))
}

func (s *streamLayer) Accept() (net.Conn, error) { return s.ln.Accept() }
func (s *streamLayer) Close() error              { return s.ln.Close() }
func (s *streamLayer) Addr() net.Addr            { return s.advertise }

// newTCPTransport returns raft's network transport over streamLayer.
func newTCPTransport(bind string, advertise *net.TCPAddr, filter *peerFilter) (*raft.NetworkTransport, error) {
	s, err := newStreamLayer(bind, advertise, filter)
	if err != nil {
		return nil, fmt.Errorf("cluster: raft transport on %s: %w", bind, err)
	}
	return raft.NewNetworkTransport(s, 3, 10*time.Second, os.Stderr), nil
}
