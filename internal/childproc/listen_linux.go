package childproc

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ListenAddrs returns the TCP addresses process pid listens on, from
// /proc: its sockets' inodes (/proc/pid/fd) matched against the kernel's
// TCP tables in the LISTEN state. It is how a test finds the port a
// third-party program was given by the kernel (port 0) when the program
// does not say; an empty result means it does not listen yet.
func ListenAddrs(pid int) ([]netip.AddrPort, error) {
	base := filepath.Join("/proc", strconv.Itoa(pid))
	fds, err := os.ReadDir(filepath.Join(base, "fd"))
	if err != nil {
		return nil, err
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(base, "fd", fd.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		if inode, ok := strings.CutPrefix(link, "socket:["); ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	var out []netip.AddrPort
	for _, table := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(filepath.Join(base, "net", table))
		if err != nil {
			continue // no IPv6
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] {
				continue
			}
			ap, err := parseProcAddr(f[1])
			if err != nil {
				return nil, err
			}
			out = append(out, ap)
		}
	}
	return out, nil
}

// parseProcAddr reads /proc/net/tcp's "0100007F:1F90": the address as the
// kernel's 32-bit words in host (little-endian) order, and the port in hex.
func parseProcAddr(s string) (netip.AddrPort, error) {
	hexIP, hexPort, ok := strings.Cut(s, ":")
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if !ok || err != nil || (len(hexIP) != 8 && len(hexIP) != 32) {
		return netip.AddrPort{}, fmt.Errorf("childproc: unreadable address %q", s)
	}
	ip := make([]byte, len(hexIP)/2)
	for w := 0; w < len(hexIP)/8; w++ {
		word, err := strconv.ParseUint(hexIP[8*w:8*w+8], 16, 32)
		if err != nil {
			return netip.AddrPort{}, fmt.Errorf("childproc: unreadable address %q", s)
		}
		for i := 0; i < 4; i++ {
			ip[4*w+i] = byte(word >> (8 * i))
		}
	}
	addr, _ := netip.AddrFromSlice(ip)
	return netip.AddrPortFrom(addr.Unmap(), uint16(port)), nil
}
