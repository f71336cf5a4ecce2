package cluster

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
)

// namedAddr is a Raft address whose host is a name: kept as the name in
// the group's configuration, so that the peers find a member that comes
// back at another IP address under the same name (a rescheduled
// Kubernetes pod). It is resolved at each dial, and by each peer filter.
type namedAddr string

func (a namedAddr) Network() string { return "tcp" }
func (a namedAddr) String() string  { return string(a) }

// advertiseAddr is the address a node advertises to its peers, from adv
// (--raft-advertise, or --raft-bind without it): an IP address as it is, a
// host name kept as the name (namedAddr), and port 0 replaced by bound's
// port. A host must be one the peers can reach: not empty or unspecified.
func advertiseAddr(adv string, bound net.Addr) (net.Addr, error) {
	host, port, err := net.SplitHostPort(adv)
	if err != nil {
		return nil, fmt.Errorf("cluster: raft address %q: %w", adv, err)
	}
	p, err := net.LookupPort("tcp", port)
	if err != nil {
		return nil, fmt.Errorf("cluster: raft address %q: %w", adv, err)
	}
	if p == 0 {
		p = bound.(*net.TCPAddr).Port
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.IsUnspecified() {
			return nil, fmt.Errorf("cluster: raft address %q must name a host peers can reach (use --raft-advertise)", adv)
		}
		return net.TCPAddrFromAddrPort(netip.AddrPortFrom(ip, uint16(p))), nil
	}
	if host == "" {
		return nil, fmt.Errorf("cluster: raft address %q must name a host peers can reach (use --raft-advertise)", adv)
	}
	return namedAddr(net.JoinHostPort(host, strconv.Itoa(p))), nil
}

// checkAdvertise refuses an explicit --raft-advertise without a host:port
// or with port 0: the peers dial exactly what it says.
func checkAdvertise(adv string) error {
	if adv == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(adv)
	if err != nil {
		return fmt.Errorf("cluster: raft address %q: %w", adv, err)
	}
	if p, err := net.LookupPort("tcp", port); err != nil || p == 0 {
		return fmt.Errorf("cluster: raft advertise address %q must name a port", adv)
	}
	return nil
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

// sameNode reports whether the RESP addresses a and b name the same
// listener on this host: equal, or the same port on hosts that are both
// loopback or unspecified (127.0.0.1, ::1, localhost, 0.0.0.0).
func sameNode(a, b string) bool {
	if a == b {
		return true
	}
	ha, pa, errA := net.SplitHostPort(a)
	hb, pb, errB := net.SplitHostPort(b)
	return errA == nil && errB == nil && pa == pb && local(ha) && local(hb)
}

func local(host string) bool {
	if host == "localhost" || host == "" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && (ip.IsLoopback() || ip.IsUnspecified())
}
