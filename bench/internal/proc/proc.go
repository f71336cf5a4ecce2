// Package proc reads what the benchmark tools measure of a server process
// from /proc (Linux), and how the servers it starts get their loopback ports.
// It is shared by bench and bench/keyspace; like them it imports nothing of
// sluice.
package proc

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on Linux.
const clockTicks = 100

// CPU returns the user+system CPU time process pid has used.
func CPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) can hold spaces; fields are counted after its ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("unreadable /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, errors.New("bad /proc stat times")
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// RSS returns process pid's resident set size in bytes (VmRSS).
func RSS(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				break
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("no VmRSS in /proc status")
}

// DrawPort returns a loopback port for a server that cannot bind port 0 and report what it
// got (redis-server, envoyproxy/ratelimit) to bind itself: drawn from 20000–32767, below
// Linux's ephemeral ports (32768–60999), which the kernel hands to outgoing connections and
// to port 0. A server that exits because the port is taken (AddrInUse) is started again on
// another; no port is opened, closed and handed on, so none can be taken between a check and
// its use.
func DrawPort() int { return 20000 + rand.IntN(32768-20000) }

// AddrInUse reports whether a server's output says it could not bind its address because
// something else holds it.
func AddrInUse(output string) bool {
	return strings.Contains(strings.ToLower(output), "address already in use")
}

// ReadPortsFile reads a sluice --ports-file: each listener's name ("resp", "tls", "raft",
// "grpc", "metrics") and address. sluice writes it once every listener serves, so an error
// (the file does not exist) means not yet.
func ReadPortsFile(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	ports := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if name, addr, ok := strings.Cut(line, " "); ok {
			if _, seen := ports[name]; !seen {
				ports[name] = addr
			}
		}
	}
	return ports, nil
}
