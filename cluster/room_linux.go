package cluster

import (
	"crypto/tls"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// sendRoom estimates the bytes nc's socket takes now without blocking: half
// its send buffer (the kernel counts its own overhead against the buffer
// too) less what is queued in it. known is false where it cannot tell.
func sendRoom(nc net.Conn) (room int, known bool) {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return 0, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, false
	}
	rc.Control(func(fd uintptr) {
		queued, err := unix.IoctlGetInt(int(fd), unix.SIOCOUTQ)
		if err != nil {
			return
		}
		size, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF)
		if err != nil {
			return
		}
		room, known = size/2-queued, true
	})
	return room, known
}
