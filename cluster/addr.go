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
