package certs

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A throwaway PKI for the tests: CAs and certificates made with
// crypto/x509 at run time (nothing is committed), and an echo server.

type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

var serials = big.NewInt(1000)

func nextSerial() *big.Int { serials.Add(serials, big.NewInt(1)); return new(big.Int).Set(serials) }

func newCA(t testing.TB, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: nextSerial(), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue makes a certificate for 127.0.0.1 meant for servers and clients
// (usages empty), or for the given usages; it returns its PEM, its key's
// PEM and its serial number.
func (ca *testCA) issue(t testing.TB, cn string, usages ...x509.ExtKeyUsage) (certPEM, keyPEM []byte, serial *big.Int) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if len(usages) == 0 {
		usages = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	}
	serial = nextSerial()
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: usages,
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), serial
}

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
	c, k, serial := issuer.issue(t, "node")
	var bundle []byte
	for _, ca := range trusted {
		bundle = append(bundle, ca.pem...)
	}
	o := n.opts()
	writeFile(t, o.CertFile, c)
	writeFile(t, o.KeyFile, k)
	writeFile(t, o.CAFile, bundle)
	n.serial = serial
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
