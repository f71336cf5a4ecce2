package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/certs/certstest"
	"github.com/sluice-rl/sluice/internal/testutil"
)

// tlsPair is a server's TLS configuration that requires a client
// certificate from ca, and a client's that presents one and trusts ca.
func tlsPair(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	ca := certstest.NewCA(t, "test CA")
	sc, sk, _ := ca.Issue(t, "server")
	cc, ck, _ := ca.Issue(t, "client")
	scert, err := tls.X509KeyPair(sc, sk)
	if err != nil {
		t.Fatal(err)
	}
	ccert, err := tls.X509KeyPair(cc, ck)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	server = &tls.Config{Certificates: []tls.Certificate{scert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}
	client = &tls.Config{Certificates: []tls.Certificate{ccert}, RootCAs: pool, ServerName: "localhost"}
	return server, client
}

// serveTLS adds a TLS listener on 127.0.0.1:0 to srv and returns its
// address; Shutdown (startServer's cleanup) closes it.
func serveTLS(t *testing.T, srv *Server, cfg *tls.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.ServeTLS(ln, cfg)
	return ln.Addr().String()
}

func dialTLS(t *testing.T, addr string, cfg *tls.Config) *testutil.Conn {
	t.Helper()
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: cfg}
	nc, err := d.DialContext(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return testutil.NewConn(t, nc)
}

// TestTLSAndPlaintextListenersServeSideBySide: one server answers on a
// plaintext and a TLS listener at once, under both I/O models (with event
// loops the TLS clients get goroutines), pipelined commands included, and
// CLIENT KILL reaches a TLS client.
func TestTLSAndPlaintextListenersServeSideBySide(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		srv, plain := startServer(t, Config{EventLoops: loops}, nil)
		scfg, ccfg := tlsPair(t)
		secure := serveTLS(t, srv, scfg)

		tc := dialTLS(t, secure, ccfg)
		pc := testutil.Dial(t, plain)
		for i := 0; i < 3; i++ {
			if got := tc.Do("PING\r\n"); got != "+PONG" {
				t.Fatalf("PING over TLS = %q", got)
			}
			if got := pc.Do("PING\r\n"); got != "+PONG" {
				t.Fatalf("PING in plaintext = %q", got)
			}
		}
		tc.Send(strings.Repeat("ECHO x\r\n", 16))
		for i := 0; i < 16; i++ {
			if got := tc.Reply(); got != "$x" {
				t.Fatalf("pipelined ECHO %d over TLS = %q", i, got)
			}
		}
		id := strings.TrimPrefix(tc.Do("CLIENT ID\r\n"), ":")
		if got := pc.Do("CLIENT KILL ID " + id + "\r\n"); got != ":1" {
			t.Fatalf("CLIENT KILL of the TLS client = %q", got)
		}
		tc.NC.SetReadDeadline(time.Now().Add(3 * time.Second))
		if _, err := tc.R.ReadByte(); err == nil {
			t.Fatal("the killed TLS client can still read")
		}
		if got := dialTLS(t, secure, ccfg).Do("PING\r\n"); got != "+PONG" {
			t.Fatalf("PING on a new TLS connection = %q", got)
		}
	})
}

// TestTLSClientWithoutCertificateIsRefused: with a client certificate
// required, a client that has none does not get a reply, and the server
// keeps serving the others.
func TestTLSClientWithoutCertificateIsRefused(t *testing.T) {
	srv, plain := startServer(t, Config{EventLoops: 2}, nil)
	scfg, ccfg := tlsPair(t)
	secure := serveTLS(t, srv, scfg)

	anon := ccfg.Clone()
	anon.Certificates = nil
	nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", secure, anon)
	if err == nil { // TLS 1.3: the refusal arrives with the first read
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(5 * time.Second))
		nc.Write([]byte("PING\r\n"))
		buf := make([]byte, 16)
		if n, err := nc.Read(buf); err == nil {
			t.Fatalf("a client without a certificate read %q", buf[:n])
		}
	}
	testutil.PingsOnNewConn(t, plain)
	if got := dialTLS(t, secure, ccfg).Do("PING\r\n"); got != "+PONG" {
		t.Fatalf("PING with a certificate = %q", got)
	}
}

// TestShutdownEndsASilentTLSHandshake: a client that connects to the TLS
// port and never sends its hello does not hold Shutdown for the handshake
// timeout.
func TestShutdownEndsASilentTLSHandshake(t *testing.T) {
	h := &fakeHandler{}
	srv, err := New(testConfig(Config{EventLoops: 2}), h)
	if err != nil {
		t.Fatal(err)
	}
	h.srv = srv
	scfg, _ := tlsPair(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(ln, scfg) }()
	silent, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	// Wait until the server holds the client, in its handshake.
	deadline := time.Now().Add(5 * time.Second)
	for srv.Stats().Clients == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if srv.Stats().Clients != 1 {
		t.Fatal("the silent client was not accepted")
	}
	// 3 s is far below the 10 s handshake timeout, and generous on a
	// loaded machine for a Shutdown that has nothing to wait for.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown waited for the handshake: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("ServeTLS: %v", err)
	}
}
