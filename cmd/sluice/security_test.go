package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-rl/sluice/certs/certstest"
)

// tlsParty is one side's certificate files and the tls.Config a Go client
// builds from them.
type tlsParty struct {
	files certstest.Files
	cfg   *tls.Config
}

// newTLSParty writes a certificate for cn issued by ca into a new
// directory, and a client configuration that presents it and trusts ca.
func newTLSParty(t *testing.T, ca *certstest.CA, cn string) tlsParty {
	t.Helper()
	f := certstest.WriteFiles(t, t.TempDir(), cn, ca, ca)
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return tlsParty{files: f, cfg: &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, ServerName: "localhost"}}
}

func tlsArgs(f certstest.Files, port string) []string {
	return []string{"--tls-port", port, "--tls-cert-file", f.Cert, "--tls-key-file", f.Key,
		"--tls-ca-cert-file", f.CA, "--save", "0"}
}

func tlsClient(t *testing.T, addr string, cfg *tls.Config) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIndentity: true, TLSConfig: cfg,
		MaxRetries: -1, DialTimeout: 5 * time.Second})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// TestTLSPortServesGoRedisAndRedisCLI: --tls-port serves TLS beside the
// plaintext port; go-redis's TLS configuration and `redis-cli --tls` with a
// client certificate both reach it, and a client without a certificate is
// refused (tls-auth-clients yes, the default).
func TestTLSPortServesGoRedisAndRedisCLI(t *testing.T) {
	ca := certstest.NewCA(t, "sluice test CA")
	srvSide, cli := newTLSParty(t, ca, "server"), newTLSParty(t, ca, "client")
	ports := filepath.Join(t.TempDir(), "ports")
	p := start(t, append(tlsArgs(srvSide.files, "auto"), "--dir", t.TempDir(), "--ports-file", ports)...)
	taddr := p.ports(t, ports)["tls"]
	port := taddr[strings.LastIndexByte(taddr, ':')+1:]
	ctx := context.Background()

	sec := tlsClient(t, taddr, cli.cfg)
	v, err := sec.Do(ctx, "RL.TOKEN", "tls:k", "1/h", 10, 1).Int64Slice()
	if err != nil || v[0] != 1 || v[2] != 9 {
		t.Fatalf("RL.TOKEN over TLS = %v, %v; want allowed with 9 left", v, err)
	}
	if v, err := client(t, p).Do(ctx, "RL.TOKEN", "tls:k", "1/h", 10, 1).Int64Slice(); err != nil || v[2] != 8 {
		t.Fatalf("RL.TOKEN in plaintext on the same key = %v, %v; want 8 left", v, err)
	}

	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Log("redis-cli is not installed: skipping its part")
	} else {
		out, err := exec.Command("redis-cli", "--tls", "--cacert", cli.files.CA, "--cert", cli.files.Cert,
			"--key", cli.files.Key, "-h", "127.0.0.1", "-p", port, "RL.TOKEN", "tls:k", "1/h", "10", "1").CombinedOutput()
		if err != nil || strings.Fields(string(out))[2] != "7" {
			t.Fatalf("redis-cli --tls: %v\n%s\nwant 7 tokens left", err, out)
		}
		out, _ = exec.Command("redis-cli", "--tls", "--cacert", cli.files.CA, "-h", "127.0.0.1",
			"-p", port, "PING").CombinedOutput()
		if strings.Contains(string(out), "PONG") {
			t.Fatalf("redis-cli --tls without a client certificate got PONG:\n%s", out)
		}
	}

	anon := cli.cfg.Clone()
	anon.Certificates = nil
	if err := tlsClient(t, taddr, anon).Ping(ctx).Err(); err == nil {
		t.Fatal("a TLS client without a certificate was served with tls-auth-clients yes")
	}
	if err := redis.NewClient(&redis.Options{Addr: taddr, MaxRetries: -1, ReadTimeout: 3 * time.Second}).Ping(ctx).Err(); err == nil {
		t.Fatal("a plaintext client was served on the TLS port")
	}
	if err := sec.Ping(ctx).Err(); err != nil {
		t.Fatalf("the TLS client after the refusals: %v", err)
	}
}

// TestPortZeroServesTLSOnly: --port 0 closes the plaintext port, and
// --tls-auth-clients no serves TLS clients without a certificate.
func TestPortZeroServesTLSOnly(t *testing.T) {
	ca := certstest.NewCA(t, "sluice test CA")
	srvSide, cli := newTLSParty(t, ca, "server"), newTLSParty(t, ca, "client")
	ports := filepath.Join(t.TempDir(), "ports")
	p := start(t, append(tlsArgs(srvSide.files, "auto"), "--port", "0", "--tls-auth-clients", "no", "--dir", t.TempDir(),
		"--ports-file", ports)...)
	if want := p.ports(t, ports)["tls"]; p.addr != want {
		t.Fatalf("the first address served is %s; want the TLS port %s only", p.addr, want)
	}
	if n := strings.Count(p.logText(), "ready to accept connections"); n != 1 {
		t.Fatalf("%d listeners; want the TLS one only:\n%s", n, p.logText())
	}
	anon := cli.cfg.Clone()
	anon.Certificates = nil
	if err := tlsClient(t, p.addr, anon).Ping(context.Background()).Err(); err != nil {
		t.Fatalf("PING without a client certificate, tls-auth-clients no: %v", err)
	}
}

// TestCertificateRotationKeepsOpenTLSConnections: new certificate files and
// SIGHUP change the certificate that new TLS connections see, while a
// connection opened before keeps being served.
func TestCertificateRotationKeepsOpenTLSConnections(t *testing.T) {
	ca := certstest.NewCA(t, "sluice test CA")
	srvSide, cli := newTLSParty(t, ca, "server"), newTLSParty(t, ca, "client")
	ports := filepath.Join(t.TempDir(), "ports")
	p := start(t, append(tlsArgs(srvSide.files, "auto"), "--dir", t.TempDir(), "--ports-file", ports)...)
	taddr := p.ports(t, ports)["tls"]
	ctx := context.Background()

	serial := func() *big.Int {
		t.Helper()
		nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", taddr, cli.cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		return nc.ConnectionState().PeerCertificates[0].SerialNumber
	}
	if got := serial(); got.Cmp(srvSide.files.Serial) != 0 {
		t.Fatalf("serial %s; want %s", got, srvSide.files.Serial)
	}
	held := tlsClient(t, taddr, cli.cfg).Conn() // one connection, held across the rotation
	defer held.Close()
	if err := held.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	heldID, _ := held.ClientID(ctx).Result()

	next := certstest.WriteFiles(t, dirOf(srvSide.files.Cert), "server", ca, ca)
	p.cmd.Process.Signal(syscall.SIGHUP)
	deadline := time.Now().Add(10 * time.Second)
	for serial().Cmp(next.Serial) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("new connections still get the old certificate 10 s after SIGHUP:\n%s", p.logText())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if id, err := held.ClientID(ctx).Result(); err != nil || id != heldID {
		t.Fatalf("the connection held across the rotation: id %d, %v; want the same id %d", id, err, heldID)
	}
	// The server installs the new certificate, then logs it: the line may
	// come a moment after the first handshake that shows it.
	for !strings.Contains(p.logText(), "SIGHUP: TLS certificate reloaded") {
		if time.Now().After(deadline) {
			t.Fatalf("no reload logged:\n%s", p.logText())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func dirOf(path string) string { return path[:strings.LastIndexByte(path, '/')] }

// protectedScript runs in a network namespace of its own, where 192.0.2.1
// (TEST-NET-1) is a local address that is not loopback: the server binds
// 0.0.0.0 there, and redis-cli reaches it once over loopback and once
// from 192.0.2.1. Nothing outside the namespace can reach either.
const protectedScript = `
ip link set lo up
ip addr add 192.0.2.1/32 dev lo
"$BIN" --bind 0.0.0.0 --port 6390 --save 0 --dir "$DIR" $EXTRA >"$DIR/log" 2>&1 &
pid=$!
for i in $(seq 200); do redis-cli -h 127.0.0.1 -p 6390 PING >/dev/null 2>&1 && break; sleep 0.05; done
echo "loopback: $(redis-cli -h 127.0.0.1 -p 6390 $AUTH PING 2>&1)"
echo "outside: $(redis-cli -h 192.0.2.1 -p 6390 PING 2>&1)"
kill $pid
wait $pid
`

// TestProtectedModeRefusesNonLoopbackClients: with no password, a server
// bound to 0.0.0.0 answers loopback clients and refuses the others with
// the DENIED explanation, unless --protected-mode no or a password is set.
func TestProtectedModeRefusesNonLoopbackClients(t *testing.T) {
	for _, tool := range []string{"unshare", "ip", "redis-cli"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: protected mode needs a non-loopback address of a network namespace of the test's own", tool)
		}
	}
	if out, err := exec.Command("unshare", "-n", "true").CombinedOutput(); err != nil {
		t.Skipf("cannot create a network namespace (%v: %s): protected mode needs a non-loopback address of the test's own", err, out)
	}
	for _, tc := range []struct {
		name, extra, auth, loopback, outside string
	}{
		{"default", "", "", "PONG", "DENIED sluice is running in protected mode because protected mode is enabled and no password is set for the default user."},
		{"protected-mode no", "--protected-mode no", "", "PONG", "PONG"},
		{"requirepass", "--requirepass pw", "-a pw --no-auth-warning", "PONG", "NOAUTH Authentication required."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command("unshare", "-n", "sh", "-c", protectedScript)
			cmd.Env = append(os.Environ(), "BIN="+binPath, "DIR="+dir, "EXTRA="+tc.extra, "AUTH="+tc.auth)
			out, err := cmd.CombinedOutput()
			if err != nil {
				log, _ := os.ReadFile(dir + "/log")
				t.Fatalf("%v\n%s\nserver log:\n%s", err, out, log)
			}
			text := string(out)
			if !strings.Contains(text, "loopback: "+tc.loopback) || !strings.Contains(text, "outside: "+tc.outside) {
				log, _ := os.ReadFile(dir + "/log")
				t.Fatalf("got:\n%s\nwant loopback %q and outside %q\nserver log:\n%s", text, tc.loopback, tc.outside, log)
			}
		})
	}
}
