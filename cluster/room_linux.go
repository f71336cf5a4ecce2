package cluster

import (
	"crypto/tls"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// hasRoom reports whether nc's socket takes need more bytes now without
// blocking: half its send buffer (the kernel counts its own overhead
// against the buffer too) less what is queued in it; true where it cannot
// tell. *size caches the buffer's size (SO_SNDBUF; 0 until read), which is
// read again only when the cached one leaves too little room: the kernel
// may have grown the buffer since.
func hasRoom(nc net.Conn, size *int, need int) bool {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	room := true
	rc.Control(func(fd uintptr) {
		queued, err := unix.IoctlGetInt(int(fd), unix.SIOCOUTQ)
		if err != nil {
			return
		}
		if *size == 0 || *size/2-queued < need {
			s, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF)
			if err != nil {
				return
			}
			*size = s
		}
		room = *size/2-queued >= need
	})
	return room
}
