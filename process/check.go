package process

import (
	"errors"
	"fmt"
	"net"
)

// Check reports the first reason Open would refuse the options themselves:
// a combination of options that cannot run together, or an address that is
// not host:port. It reads no file the options name (certificates, rules
// files, the ACL file), binds nothing and asks no peer, and resolves no
// host name, so that a configuration meant for another machine or a
// Kubernetes pod (--raft-advertise "$(hostname).sluice:7000") can be
// checked anywhere: `sluice … --check-config` runs it. Open runs it first.
func (c Options) Check() error {
	for _, a := range []struct{ flag, addr string }{
		{"raft-bind", c.cluster.RaftBind},
		{"raft-advertise", c.cluster.RaftAdvertise},
		{"announce-addr", c.announceAddr},
		{"join", c.cluster.Join},
	} {
		if err := hostPort(a.addr); err != nil {
			return fmt.Errorf("--%s: %w", a.flag, err)
		}
	}
	for _, peer := range c.cluster.Peers {
		if err := hostPort(peer); err != nil {
			return fmt.Errorf("--peers: %w", err)
		}
	}
	if c.replicated() {
		if err := c.checkReplicated(); err != nil {
			return err
		}
	}
	if err := c.checkSharded(); err != nil {
		return err
	}
	if _, err := c.clientMemoryCap(); err != nil {
		return err
	}
	if c.port == 0 && c.tlsPort == 0 && c.grpcBind == "" {
		return errors.New("--port 0 and no --tls-port: no port to serve clients on")
	}
	if c.tlsReplication == "yes" && !c.replicated() {
		return errors.New("--tls-replication yes secures a replicated group's Raft port: it needs --node-id and --raft-bind")
	}
	return nil
}

// checkReplicated holds the refusals of a replicated node's options.
func (c Options) checkReplicated() error {
	switch {
	case c.cluster.ID == "" || c.cluster.RaftBind == "":
		return errors.New("replication needs both --node-id and --raft-bind")
	case c.maxmemory > 0:
		return errors.New("--maxmemory is not supported with replication: replicas that refused different keys would diverge")
	case c.appendonly && c.appendonlySet:
		return errors.New("--appendonly is not supported with replication: the Raft log already persists every batch " +
			"(--raft-fsync says when it reaches the disk)")
	case c.port == 0 && (c.tlsReplication != "yes" || c.tlsPort == 0):
		return errors.New("--port 0 in a replicated group needs --tls-replication yes and --tls-port: the nodes forward to each other's RESP port")
	}
	return nil
}

// hostPort checks that addr, if set, is host:port with a port.
func hostPort(addr string) error {
	if addr == "" {
		return nil
	}
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "" {
		return fmt.Errorf("%q is not a host:port address", addr)
	}
	return nil
}
