package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// The health check mode, for images without a shell or redis-cli
// (distroless): `sluice --healthcheck [ADDR]` exits 0 when the server at
// ADDR is healthy and 1 otherwise, saying why on standard error.
//
//   - ADDR host:port (default 127.0.0.1:6380): sends PING over RESP and
//     wants +PONG, or -NOAUTH (the server reads and answers commands; it
//     asks for a password). Any other reply, LOADING included, is unhealthy.
//   - ADDR http://host:port/readyz (or /healthz): the metrics endpoint
//     (--metrics-bind) answers 200.

// healthcheckTimeout bounds the whole check: the dial, the request and the reply.
const healthcheckTimeout = 3 * time.Second

func healthcheckMain(args []string) int {
	addr := "127.0.0.1:6380"
	switch len(args) {
	case 0:
	case 1:
		addr = args[0]
	default:
		fmt.Fprintln(os.Stderr, "usage: sluice --healthcheck [host:port | http://host:port/readyz]")
		return 2
	}
	if err := healthcheck(addr, healthcheckTimeout); err != nil {
		fmt.Fprintln(os.Stderr, "sluice: unhealthy:", err)
		return 1
	}
	return 0
}

// healthcheck checks the server at addr as the mode describes.
func healthcheck(addr string, timeout time.Duration) error {
	if strings.HasPrefix(addr, "http://") {
		c := http.Client{Timeout: timeout}
		resp, err := c.Get(addr)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", addr, resp.Status)
		}
		return nil
	}
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(timeout))
	if _, err := conn.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return fmt.Errorf("PING %s: %w", addr, err)
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "+PONG" || strings.HasPrefix(line, "-NOAUTH") {
		return nil
	}
	return fmt.Errorf("PING %s: %s", addr, line)
}
