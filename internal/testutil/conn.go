package testutil

import (
	"bufio"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Conn is a client that writes bytes as they are given and reads RESP replies, for tests of
// what a server does with exactly those bytes. Each call waits at most 5 s.
type Conn struct {
	// NC is the connection, closed when the test ends; R reads from it.
	NC net.Conn
	R  *bufio.Reader
	t  testing.TB
}

// Dial connects to addr: a Unix socket's path when it starts with "/", else TCP host:port.
// The connection is closed when the test ends.
func Dial(t testing.TB, addr string) *Conn {
	t.Helper()
	network := "tcp"
	if strings.HasPrefix(addr, "/") {
		network = "unix"
	}
	nc, err := net.DialTimeout(network, addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return NewConn(t, nc)
}

// NewConn is a Conn over nc (a TLS connection, say), closed when the test ends.
func NewConn(t testing.TB, nc net.Conn) *Conn {
	t.Cleanup(func() { nc.Close() })
	return &Conn{NC: nc, R: bufio.NewReader(nc), t: t}
}

// Send writes s.
func (c *Conn) Send(s string) {
	c.t.Helper()
	c.NC.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c.NC, s); err != nil {
		c.t.Fatalf("write %q: %v", Clip(s), err)
	}
}

// Reply reads one reply, in the notation of ReadReply.
func (c *Conn) Reply() string {
	c.t.Helper()
	c.NC.SetReadDeadline(time.Now().Add(5 * time.Second))
	s, err := ReadReply(c.R)
	if err != nil {
		c.t.Fatalf("reading a reply: %v (so far %q)", err, s)
	}
	return s
}

// Do writes s and reads one reply.
func (c *Conn) Do(s string) string {
	c.t.Helper()
	c.Send(s)
	return c.Reply()
}

// Closed checks that the server closes the connection with nothing more to say, within 3 s.
func (c *Conn) Closed() {
	c.t.Helper()
	c.NC.SetReadDeadline(time.Now().Add(3 * time.Second))
	rest, err := io.ReadAll(c.R)
	if len(rest) > 0 || err != nil {
		c.t.Fatalf("connection not closed cleanly: read %q, %v", rest, err)
	}
}

// ReadReply reads one RESP2 reply from r and writes it as "+PONG", "-ERR …", ":1", "$text",
// "$nil", or an array as "[:1 :20 :19 :0 :100]". On an error it returns what it has read.
func ReadReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil || len(line) < 3 || !strings.HasSuffix(line, "\r\n") {
		return line, io.ErrUnexpectedEOF
	}
	line = line[:len(line)-2]
	switch line[0] {
	case '+', '-', ':':
		return line, nil
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return "$nil", err
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return line, err
		}
		return "$" + string(b[:n]), nil
	case '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return line, err
		}
		parts := make([]string, 0, max(n, 0))
		for range n {
			p, err := ReadReply(r)
			if err != nil {
				return p, err
			}
			parts = append(parts, p)
		}
		return "[" + strings.Join(parts, " ") + "]", nil
	}
	return line, io.ErrUnexpectedEOF
}

// DialAnswering opens n connections to addr, each checked with a PING.
func DialAnswering(t testing.TB, addr string, n int) []*Conn {
	t.Helper()
	var conns []*Conn
	for range n {
		c := Dial(t, addr)
		if got := c.Do("PING\r\n"); got != "+PONG" {
			t.Fatalf("PING = %q", got)
		}
		conns = append(conns, c)
	}
	return conns
}

// PingsOnNewConn checks that a new connection to addr answers PING, and closes it.
func PingsOnNewConn(t testing.TB, addr string) {
	t.Helper()
	c := Dial(t, addr)
	if got := c.Do("PING\r\n"); got != "+PONG" {
		t.Fatalf("PING on a new connection = %q; want +PONG", got)
	}
	c.NC.Close()
}

// Clip shortens s to 80 bytes for a failure message, saying how long it was.
func Clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…(" + strconv.Itoa(len(s)) + " bytes)"
	}
	return s
}
