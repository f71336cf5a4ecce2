//go:build !linux

package cluster

import "net"

// sendRoom cannot tell here: callAsync writes as a blocking call does.
func sendRoom(net.Conn) (int, bool) { return 0, false }
