package cluster

import (
	"fmt"
	"net"
)

func resolveTCP(addr string) (*net.TCPAddr, error) {
	a, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cluster: raft address %q: %w", addr, err)
	}
	if a.IP == nil || a.IP.IsUnspecified() {
		return nil, fmt.Errorf("cluster: raft address %q must name a host peers can reach (use --raft-advertise)", addr)
	}
	return a, nil
}

// RaftAddrs returns the address the node's Raft port listens on (with the
// port the kernel chose for a RaftBind with port 0) and the address it
// advertises to its peers. Both are "" with Config.Transport.
func (n *Node) RaftAddrs() (bound, advertised string) {
	if n.stream == nil {
		return "", ""
	}
	return n.stream.bound().String(), n.stream.Addr().String()
}
