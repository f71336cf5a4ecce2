package main

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/sluice-rl/sluice/internal/resp"
)

// The security scenarios: RL.TOKEN over TLS (a CA and a server certificate
// bench makes for the run, P-256, nothing kept), and RL.TOKEN as a user
// held to a key pattern (an aclfile bench writes), each beside RL.TOKEN in
// plaintext as the default user.

// aclUser and aclPass are the restricted user of the sluice-acl server:
// RL.TOKEN on keys under the sluice-token-acl scenario's prefix only.
const (
	aclUser = "bench-tenant"
	aclPass = "bench-tenant-password"
)

// writeBenchACL writes the aclfile of the sluice-acl server into dir.
func writeBenchACL(dir, prefix string) (string, error) {
	path := filepath.Join(dir, "bench.acl")
	text := "user default on nopass ~* &* +@all\n" +
		"user " + aclUser + " on >" + aclPass + " ~" + prefix + "* resetchannels -@all +@limiter +@connection\n"
	return path, os.WriteFile(path, []byte(text), 0o600)
}

// benchTLS is a CA of bench's own, a server certificate for 127.0.0.1 it
// signed (written to dir for the server), and the client configuration
// that trusts the CA.
type benchTLS struct {
	certFile, keyFile, caFile string
	client                    *tls.Config
}

// newBenchTLS makes the CA and the server's certificate and key in dir.
func newBenchTLS(dir string) (*benchTLS, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sluice bench CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "sluice bench server"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	b := &benchTLS{certFile: filepath.Join(dir, "server.crt"), keyFile: filepath.Join(dir, "server.key"),
		caFile: filepath.Join(dir, "ca.crt")}
	for path, block := range map[string]*pem.Block{
		b.certFile: {Type: "CERTIFICATE", Bytes: der},
		b.keyFile:  {Type: "PRIVATE KEY", Bytes: keyDER},
		b.caFile:   {Type: "CERTIFICATE", Bytes: caDER},
	} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			return nil, err
		}
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	b.client = &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	return b, nil
}

// flags are the server's TLS flags: TLS on the port bench gives it, no
// plaintext port, no client certificate asked for.
func (b *benchTLS) flags() []string {
	return []string{"--tls-cert-file", b.certFile, "--tls-key-file", b.keyFile, "--tls-ca-cert-file", b.caFile,
		"--tls-auth-clients", "no"}
}

// dial connects to the server: TCP, then TLS if the server speaks it (the
// handshake done within timeout), then AUTH as the scenario's user if the
// connection is for load (asUser) and the server has one.
func (s *server) dial(timeout time.Duration, asUser bool) (net.Conn, error) {
	conn, err := net.DialTimeout("tcp", s.addr, timeout)
	if err != nil {
		return nil, err
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	if s.tls != nil {
		tc := tls.Client(conn, s.tls)
		tc.SetDeadline(time.Now().Add(timeout))
		if err := tc.Handshake(); err != nil {
			conn.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", s.addr, err)
		}
		tc.SetDeadline(time.Time{})
		conn = tc
	}
	if asUser && s.user != "" {
		conn.SetDeadline(time.Now().Add(timeout))
		if _, err := conn.Write(resp.AppendCommand(nil, "AUTH", s.user, s.pass)); err != nil {
			conn.Close()
			return nil, err
		}
		var v resp.Value
		if err := resp.Read(bufio.NewReaderSize(conn, 64), &v); err != nil || v.Kind != '+' {
			conn.Close()
			return nil, fmt.Errorf("AUTH %s on %s: %v %s", s.user, s.addr, err, v.String())
		}
		conn.SetDeadline(time.Time{})
	}
	return conn, nil
}
