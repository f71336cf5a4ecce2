package certs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMutualTLSHandshakeWithCertificatesFromTheCA(t *testing.T) {
	ca := newCA(t, "group CA")
	srv := mustNew(t, newNode(t, ca, ca).opts())
	cliNode := newNode(t, ca, ca)
	cli := mustNew(t, cliNode.opts())
	for name, cfg := range map[string]*tls.Config{"ServerConfig": srv.ServerConfig(), "PeerServerConfig": srv.PeerServerConfig()} {
		addr := echoServer(t, cfg)
		cn, err := dial(addr, cli.ClientConfig())
		if err != nil {
			t.Fatalf("%s: a client with a certificate from the CA: %v", name, err)
		}
		st := cn.c.ConnectionState()
		if st.Version != tls.VersionTLS13 {
			t.Errorf("%s: negotiated %s; want TLS 1.3", name, tls.VersionName(st.Version))
		}
		cn.c.Close()
	}
}

func TestCertificateFromAnotherCAIsRefused(t *testing.T) {
	ca, other := newCA(t, "group CA"), newCA(t, "another CA")
	srv := mustNew(t, newNode(t, ca, ca).opts())
	addr := echoServer(t, srv.PeerServerConfig())

	// A client whose certificate comes from another CA (it trusts ours).
	stranger := mustNew(t, newNode(t, other, ca).opts())
	if _, err := dial(addr, stranger.ClientConfig()); err == nil {
		t.Fatal("a client certificate from another CA was accepted")
	}
	// A client with no certificate at all.
	bare := &tls.Config{InsecureSkipVerify: true}
	if _, err := dial(addr, bare); err == nil {
		t.Fatal("a client without a certificate was accepted")
	}
	// A server whose certificate comes from another CA, seen by our client.
	fake := mustNew(t, newNode(t, other, ca).opts())
	fakeAddr := echoServer(t, fake.PeerServerConfig())
	cli := mustNew(t, newNode(t, ca, ca).opts())
	_, err := dial(fakeAddr, cli.ClientConfig())
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Fatalf("dialing a server with a certificate from another CA: %v; want x509.UnknownAuthorityError", err)
	}
}

func TestCertificateForServersOnlyIsRefusedAsAClient(t *testing.T) {
	ca := newCA(t, "group CA")
	srv := mustNew(t, newNode(t, ca, ca).opts())
	addr := echoServer(t, srv.PeerServerConfig())
	n := newNode(t, ca, ca)
	c, k, _ := ca.Issue(t, "server only", x509.ExtKeyUsageServerAuth)
	writeFile(t, n.opts().CertFile, c)
	writeFile(t, n.opts().KeyFile, k)
	if _, err := dial(addr, mustNew(t, n.opts()).ClientConfig()); err == nil {
		t.Fatal("a certificate meant for servers only was accepted as a client's")
	}
	// tls-client-cert-file gives the outgoing side a pair of its own.
	cc, ck, _ := ca.Issue(t, "client only", x509.ExtKeyUsageClientAuth)
	o := n.opts()
	o.ClientCertFile, o.ClientKeyFile = filepath.Join(n.dir, "client.crt"), filepath.Join(n.dir, "client.key")
	writeFile(t, o.ClientCertFile, cc)
	writeFile(t, o.ClientKeyFile, ck)
	cn, err := dial(addr, mustNew(t, o).ClientConfig())
	if err != nil {
		t.Fatalf("with tls-client-cert-file: %v", err)
	}
	cn.c.Close()
}

func TestAuthClients(t *testing.T) {
	ca, other := newCA(t, "group CA"), newCA(t, "another CA")
	good := mustNew(t, newNode(t, ca, ca).opts()).ClientConfig()
	bad := mustNew(t, newNode(t, other, ca).opts()).ClientConfig()
	bare := &tls.Config{InsecureSkipVerify: true}
	for _, tc := range []struct {
		auth                string
		good, bad, withNone bool // accepted?
	}{
		{"yes", true, false, false},
		{"", true, false, false},
		{"optional", true, false, true},
		{"no", true, true, true},
	} {
		o := newNode(t, ca, ca).opts()
		o.AuthClients = tc.auth
		addr := echoServer(t, mustNew(t, o).ServerConfig())
		for _, c := range []struct {
			name string
			cfg  *tls.Config
			want bool
		}{{"a certificate from the CA", good, tc.good}, {"a certificate from another CA", bad, tc.bad}, {"no certificate", bare, tc.withNone}} {
			cn, err := dial(addr, c.cfg)
			if (err == nil) != c.want {
				t.Errorf("tls-auth-clients %q, a client with %s: err %v; want accepted %v", tc.auth, c.name, err, c.want)
			}
			if cn != nil {
				cn.c.Close()
			}
		}
	}
}

// The certificate and the CA bundle are replaced while a client holds a
// connection: the connection keeps working, and new connections get the
// new certificate.
func TestRotationKeepsOpenConnections(t *testing.T) {
	ca := newCA(t, "group CA")
	sn := newNode(t, ca, ca)
	srv := mustNew(t, sn.opts())
	addr := echoServer(t, srv.PeerServerConfig())
	cli := mustNew(t, newNode(t, ca, ca).opts())

	old, err := dial(addr, cli.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer old.c.Close()
	if old.serial().Cmp(sn.serial) != 0 {
		t.Fatalf("served serial %v; want %v", old.serial(), sn.serial)
	}
	first := sn.serial

	sn.rotate(t, ca, ca)
	if changed, err := srv.Reload(); err != nil || !changed {
		t.Fatalf("Reload = %v, %v; want changed", changed, err)
	}
	if err := old.roundTrip(); err != nil {
		t.Fatalf("the connection opened before the rotation broke: %v", err)
	}
	fresh, err := dial(addr, cli.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.c.Close()
	if fresh.serial().Cmp(sn.serial) != 0 || fresh.serial().Cmp(first) == 0 {
		t.Fatalf("a new connection got serial %v; want the new certificate's %v", fresh.serial(), sn.serial)
	}
	if old.serial().Cmp(first) != 0 {
		t.Fatal("the open connection's certificate changed")
	}

	// A new CA: the server trusts only it from now on. The client with the
	// old CA's certificate keeps its open connection but cannot open more.
	ca2 := newCA(t, "next CA")
	sn.rotate(t, ca2, ca2)
	if _, err := srv.Reload(); err != nil {
		t.Fatal(err)
	}
	if err := old.roundTrip(); err != nil {
		t.Fatalf("the open connection broke when the CA changed: %v", err)
	}
	if _, err := dial(addr, cli.ClientConfig()); err == nil {
		t.Fatal("a client certificate from the retired CA was accepted after the rotation")
	}
	cn, err := dial(addr, mustNew(t, newNode(t, ca2, ca2).opts()).ClientConfig())
	if err != nil {
		t.Fatalf("a client certificate from the new CA: %v", err)
	}
	cn.c.Close()
}

// Kubernetes mounts a secret as a directory whose files are symbolic links
// through ..data, itself a link to a timestamped directory; an update
// writes a new directory and renames a new ..data link over the old one.
func TestPollSeesASymlinkSwapLikeAKubernetesSecret(t *testing.T) {
	ca := newCA(t, "group CA")
	mount := t.TempDir()
	gen := func(name string) *node {
		n := &node{dir: filepath.Join(mount, name)}
		if err := os.Mkdir(n.dir, 0o700); err != nil {
			t.Fatal(err)
		}
		n.rotate(t, ca, ca)
		return n
	}
	first := gen("..2026_01_01_00_00_00.1")
	if err := os.Symlink(filepath.Base(first.dir), filepath.Join(mount, "..data")); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"tls.crt", "tls.key", "ca.crt"} {
		if err := os.Symlink(filepath.Join("..data", f), filepath.Join(mount, f)); err != nil {
			t.Fatal(err)
		}
	}
	srv := mustNew(t, (&node{dir: mount}).opts())
	addr := echoServer(t, srv.ServerConfig())
	cli := mustNew(t, newNode(t, ca, ca).opts())
	reports := make(chan error, 16)
	if err := srv.Start(10*time.Millisecond, func(err error) { reports <- err }); err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	if err := srv.Start(time.Second, nil); !errors.Is(err, ErrWatching) {
		t.Fatalf("a second Start = %v; want ErrWatching", err)
	}
	held, err := dial(addr, cli.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer held.c.Close()

	second := gen("..2026_01_02_00_00_00.2")
	tmp := filepath.Join(mount, "..data_tmp")
	if err := os.Symlink(filepath.Base(second.dir), tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(mount, "..data")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-reports:
		if err != nil {
			t.Fatalf("the poller's load after the swap: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the poller did not see the swap within 10s")
	}
	cn, err := dial(addr, cli.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer cn.c.Close()
	if cn.serial().Cmp(second.serial) != 0 {
		t.Fatalf("after the swap a new connection got serial %v; want %v", cn.serial(), second.serial)
	}
	if err := held.roundTrip(); err != nil || held.serial().Cmp(first.serial) != 0 {
		t.Fatalf("the connection held across the swap: %v, serial %v", err, held.serial())
	}
}

// A rotation that replaced the certificate but not yet the key is refused
// and the old pair stays in force; a persistent fault is reported once.
func TestHalfRotatedFilesKeepTheCertificateInForce(t *testing.T) {
	ca := newCA(t, "group CA")
	sn := newNode(t, ca, ca)
	srv := mustNew(t, sn.opts())
	addr := echoServer(t, srv.ServerConfig())
	cli := mustNew(t, newNode(t, ca, ca).opts()).ClientConfig()
	before := sn.serial

	c, k, serial := ca.Issue(t, "node")
	writeFile(t, sn.opts().CertFile, c)
	tried, err := srv.Poll()
	if !tried || !errors.Is(err, ErrKeyMismatch) || !strings.Contains(err.Error(), sn.opts().CertFile) ||
		!strings.Contains(err.Error(), sn.opts().KeyFile) {
		t.Fatalf("Poll with a new certificate and the old key = %v, %v; want ErrKeyMismatch naming both files", tried, err)
	}
	if tried, err := srv.Poll(); tried || err != nil {
		t.Fatalf("Poll of the same files again = %v, %v; want not tried", tried, err)
	}
	cn, err := dial(addr, cli)
	if err != nil {
		t.Fatal(err)
	}
	if cn.serial().Cmp(before) != 0 {
		t.Fatalf("served %v while the files were half rotated; want the old %v", cn.serial(), before)
	}
	cn.c.Close()
	writeFile(t, sn.opts().KeyFile, k)
	if tried, err := srv.Poll(); !tried || err != nil {
		t.Fatalf("Poll once the key followed = %v, %v", tried, err)
	}
	if cn, err = dial(addr, cli); err != nil || cn.serial().Cmp(serial) != 0 {
		t.Fatalf("after the key followed: %v; want serial %v", err, serial)
	}
	cn.c.Close()
	if srv.Leaf().SerialNumber.Cmp(serial) != 0 {
		t.Fatalf("Leaf() serial %v; want %v", srv.Leaf().SerialNumber, serial)
	}
}

func TestLoadErrorsNameTheFile(t *testing.T) {
	ca := newCA(t, "group CA")
	otherCert, _, _ := ca.Issue(t, "other")
	_, otherKey, _ := ca.Issue(t, "other")
	encrypted := []byte("-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIBAA==\n-----END ENCRYPTED PRIVATE KEY-----\n")
	legacy := []byte("-----BEGIN EC PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00112233445566778899AABBCCDDEEFF\n\nMIIBAA==\n-----END EC PRIVATE KEY-----\n")
	for _, tc := range []struct {
		name   string
		mutate func(o Options)
		option string // the option the error must name
		file   func(o Options) string
		is     error
	}{
		{"missing certificate", func(o Options) { os.Remove(o.CertFile) }, "tls-cert-file", certOf, os.ErrNotExist},
		{"empty certificate", func(o Options) { writeFile(t, o.CertFile, nil) }, "tls-cert-file", certOf, ErrNoCertificate},
		{"garbage certificate", func(o Options) {
			writeFile(t, o.CertFile, []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"))
		}, "tls-cert-file", certOf, ErrBadPEM},
		{"key file holds a certificate", func(o Options) { writeFile(t, o.KeyFile, otherCert) }, "tls-key-file", keyOf, ErrNoKey},
		{"encrypted key", func(o Options) { writeFile(t, o.KeyFile, encrypted) }, "tls-key-file", keyOf, ErrEncryptedKey},
		{"legacy encrypted key", func(o Options) { writeFile(t, o.KeyFile, legacy) }, "tls-key-file", keyOf, ErrEncryptedKey},
		{"key of another certificate", func(o Options) { writeFile(t, o.KeyFile, otherKey) }, "tls-key-file", keyOf, ErrKeyMismatch},
		{"empty CA bundle", func(o Options) { writeFile(t, o.CAFile, []byte("# nothing\n")) }, "tls-ca-cert-file", caOf, ErrNoCA},
		{"CA bundle is a directory", func(o Options) { os.Remove(o.CAFile); os.Mkdir(o.CAFile, 0o700) }, "tls-ca-cert-file", caOf, nil},
	} {
		o := newNode(t, ca, ca).opts()
		tc.mutate(o)
		_, err := New(o)
		if err == nil {
			t.Errorf("%s: New succeeded", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.option+" "+tc.file(o)) || (tc.is != nil && !errors.Is(err, tc.is)) {
			t.Errorf("%s: %v; want an error naming %s %s (%v)", tc.name, err, tc.option, tc.file(o), tc.is)
		}
	}
	if _, err := New(Options{CertFile: "a", KeyFile: "b"}); !errors.Is(err, ErrMissingFile) || !strings.Contains(err.Error(), "tls-ca-cert-file") {
		t.Errorf("New without a CA file: %v", err)
	}
}

func certOf(o Options) string { return o.CertFile }
func keyOf(o Options) string  { return o.KeyFile }
func caOf(o Options) string   { return o.CAFile }

// Reload reports a change against the certificate in force, not against
// the last attempt: files that went bad and came back are no change.
func TestReloadReportsChangesAgainstTheCertificateInForce(t *testing.T) {
	ca := newCA(t, "group CA")
	n := newNode(t, ca, ca)
	r := mustNew(t, n.opts())
	good, _ := os.ReadFile(n.opts().KeyFile)
	if changed, err := r.Reload(); changed || err != nil {
		t.Fatalf("Reload of the same files = %v, %v; want no change", changed, err)
	}
	writeFile(t, n.opts().KeyFile, []byte("garbage"))
	if _, err := r.Reload(); !errors.Is(err, ErrNoKey) {
		t.Fatalf("Reload with a broken key: %v", err)
	}
	writeFile(t, n.opts().KeyFile, good)
	if changed, err := r.Reload(); changed || err != nil {
		t.Fatalf("Reload after the key came back = %v, %v; want no change", changed, err)
	}
}
