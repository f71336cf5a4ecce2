package cluster

import (
	"fmt"
	"net"
	"os"
	"time"

	"github.com/hashicorp/raft"
)

// streamLayer is raft's TCP stream layer with one difference from
// raft.NewTCPTransport's: connections to peers leave from the address the
// node's Raft port is bound to. On a host with several addresses this keeps
// Raft traffic on the chosen interface, and it lets a proxy (or a firewall
// rule) tell the nodes apart by source address, which the partition tests
// use.
type streamLayer struct {
	ln        net.Listener
	advertise net.Addr
	dialer    net.Dialer
}

func newStreamLayer(bind string, advertise *net.TCPAddr) (*streamLayer, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	s := &streamLayer{ln: ln, advertise: advertise}
	if ip := ln.Addr().(*net.TCPAddr).IP; !ip.IsUnspecified() {
		s.dialer.LocalAddr = &net.TCPAddr{IP: ip}
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
func newTCPTransport(bind string, advertise *net.TCPAddr) (*raft.NetworkTransport, error) {
	s, err := newStreamLayer(bind, advertise)
	if err != nil {
		return nil, fmt.Errorf("cluster: raft transport on %s: %w", bind, err)
	}
	return raft.NewNetworkTransport(s, 3, 10*time.Second, os.Stderr), nil
}
