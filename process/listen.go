package process

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sluice-rl/sluice/cluster"
)

// The clients' listeners, and the ports file that reports every address
// the server listens on.
//
// --port 0 keeps Redis's meaning (no plaintext port); --port auto (and
// --tls-port auto) asks the kernel for a free port instead, as port 0 does
// in --raft-bind, --grpc-bind and --metrics-bind. A program that starts
// sluice on such ports reads the ports it got from --ports-file.

// autoPort is --port auto and --tls-port auto: a port the kernel chooses.
const autoPort = -1

// portArg reads a port, 0 (none) or "auto".
func portArg(a []string, dst *int) error {
	if len(a) == 1 && a[0] == "auto" {
		*dst = autoPort
		return nil
	}
	if err := intArg(a, 0, 65535, dst); err != nil {
		return fmt.Errorf("%w, or auto", err)
	}
	return nil
}

func portString(p int) string {
	if p == autoPort {
		return "auto"
	}
	return strconv.Itoa(p)
}

// clientListener is one RESP listener: plaintext or TLS.
type clientListener struct {
	ln  net.Listener
	tls bool
}

// listenClients binds the plaintext port and the TLS port on every --bind
// address, as Redis, skipping a port of 0. An auto port is the one the
// kernel gives the first address, and the other addresses get the same;
// cfg's port or tlsPort is then set to it. On an error nothing stays bound.
func listenClients(cfg *Options) ([]clientListener, error) {
	var lns []clientListener
	for _, l := range []struct {
		port *int
		tls  bool
	}{{&cfg.port, false}, {&cfg.tlsPort, true}} {
		if *l.port == 0 {
			continue
		}
		for _, host := range cfg.bind {
			port := max(*l.port, 0)
			ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
			if err != nil {
				closeListeners(lns)
				return nil, err
			}
			if *l.port == autoPort {
				*l.port = ln.Addr().(*net.TCPAddr).Port
			}
			lns = append(lns, clientListener{ln, l.tls})
		}
	}
	return lns, nil
}

func closeListeners(lns []clientListener) {
	for _, l := range lns {
		l.ln.Close()
	}
}

// writePortsFile writes the addresses the server listens on to path, one
// "name host:port" line each (resp, tls, raft, grpc, metrics; resp and tls
// once per --bind address), through a temporary file renamed into place:
// a reader that finds the file finds it whole. An empty path writes
// nothing.
func writePortsFile(path string, lines [][2]string) error {
	if path == "" {
		return nil
	}
	var b strings.Builder
	for _, l := range lines {
		if l[1] != "" {
			fmt.Fprintf(&b, "%s %s\n", l[0], l[1])
		}
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("ports file: %w", err)
	}
	_, err = f.WriteString(b.String())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("ports file: %w", err)
	}
	return nil
}

// boundAddrs are the ports file's lines: every address the server listens
// on, with the ports the kernel chose.
func boundAddrs(lns []clientListener, node *cluster.Node, obs *observer, front *grpcFrontEnd) [][2]string {
	var out [][2]string
	for _, l := range lns {
		name := "resp"
		if l.tls {
			name = "tls"
		}
		out = append(out, [2]string{name, l.ln.Addr().String()})
	}
	if node != nil {
		bound, _ := node.RaftAddrs()
		out = append(out, [2]string{"raft", bound})
	}
	if front != nil {
		out = append(out, [2]string{"grpc", front.addr})
	}
	if obs != nil {
		out = append(out, [2]string{"metrics", obs.addr})
	}
	return out
}
