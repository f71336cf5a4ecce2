package certs

import (
	"bufio"
	"crypto/tls"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/certs/certstest"
)

// The parties of the tests: each has its files (made by certstest) in a
// directory of its own; and an echo server.

// newCA and the CA type are certstest's.
type testCA = certstest.CA

func newCA(t testing.TB, name string) *testCA { return certstest.NewCA(t, name) }

// node is one party's files in a directory of its own.
type node struct {
	dir    string
	serial *big.Int
}

func (n *node) opts() Options {
	return Options{CertFile: filepath.Join(n.dir, "tls.crt"), KeyFile: filepath.Join(n.dir, "tls.key"),
		CAFile: filepath.Join(n.dir, "ca.crt")}
}

// newNode writes a certificate from issuer and the bundle of trusted CAs.
func newNode(t testing.TB, issuer *testCA, trusted ...*testCA) *node {
	t.Helper()
	n := &node{dir: t.TempDir()}
	n.rotate(t, issuer, trusted...)
	return n
}

// rotate writes a new certificate and key from issuer, and the bundle.
func (n *node) rotate(t testing.TB, issuer *testCA, trusted ...*testCA) {
	t.Helper()
	n.serial = certstest.WriteFiles(t, n.dir, "node", issuer, trusted...).Serial
}

func writeFile(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func mustNew(t testing.TB, o Options) *Reloader {
	t.Helper()
	r, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// echoServer serves cfg on 127.0.0.1:0 and echoes lines back.
func echoServer(t testing.TB, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// conn is a client connection to an echo server.
type conn struct {
	c  *tls.Conn
	br *bufio.Reader
}

// dial connects and completes one round trip: with TLS 1.3 the server's
// verdict on the client's certificate arrives after the client's handshake.
func dial(addr string, cfg *tls.Config) (*conn, error) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err != nil {
		return nil, err
	}
	cn := &conn{c: c, br: bufio.NewReader(c)}
	if err := cn.roundTrip(); err != nil {
		c.Close()
		return nil, err
	}
	return cn, nil
}

func (cn *conn) roundTrip() error {
	cn.c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := cn.c.Write([]byte("ping\n")); err != nil {
		return err
	}
	line, err := cn.br.ReadString('\n')
	if err == nil && line != "ping\n" {
		return &net.OpError{Op: "echo", Err: os.ErrInvalid}
	}
	return err
}

func (cn *conn) serial() *big.Int { return cn.c.ConnectionState().PeerCertificates[0].SerialNumber }
