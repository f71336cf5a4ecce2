package cluster

import (
	"context"
	"crypto/tls"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/redis/go-redis/v9"
	"github.com/sluice-rl/sluice/certs/certstest"
)

// Real processes whose Raft ports speak mutual TLS (--tls-replication
// yes), each with its own certificate from one CA, attacked by an outsider
// that speaks raft's wire format from a member's own address (the address
// filter admits it: only TLS stands in its way).

// startTLSProcGroup starts three nodes under mutual TLS and returns them
// with the directories of their certificate files.
func startTLSProcGroup(t *testing.T, ca *certstest.CA) ([]*proc, map[string]string) {
	t.Helper()
	base := t.TempDir()
	dirs := map[string]string{}
	ps, _ := startProcGroupWith(t, false, func(p *proc) []string {
		dir := filepath.Join(base, p.id)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		dirs[p.id] = dir
		f := certstest.WriteFiles(t, dir, p.id, ca, ca)
		return []string{"--tls-replication", "yes", "--tls-cert-file", f.Cert, "--tls-key-file", f.Key, "--tls-ca-cert-file", f.CA,
			"--loglevel", "notice"} // certificate loads are logged at notice
	})
	return ps, dirs
}

func TestProcessRaftPortUnderMutualTLSIgnoresTimeoutNowWithoutAValidCertificate(t *testing.T) {
	ca, other := certstest.NewCA(t, "group CA"), certstest.NewCA(t, "another CA")
	ps, _ := startTLSProcGroup(t, ca)
	ld := leaderOf(ps)
	if ld == nil {
		t.Fatal("no leader")
	}
	if ld.info("raft_tls") != "yes" {
		t.Fatalf("INFO replication raft_tls:%s; want yes", ld.info("raft_tls"))
	}
	term := ld.info("term")
	refusedBefore := 0
	for _, p := range ps {
		n, _ := strconv.Atoi(p.info("raft_refused_connections"))
		refusedBefore += n
	}

	// A client keeps deciding through a follower the whole time.
	var clientErrs []string
	var mu sync.Mutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		rdb := redis.NewClient(&redis.Options{Addr: othersThan(ps, ld)[0].addr(), Protocol: 2, MaxRetries: -1})
		defer rdb.Close()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := rdb.Do(context.Background(), "RL.TOKEN", "k", "1/h", 1000000).Err(); err != nil {
				mu.Lock()
				clientErrs = append(clientErrs, err.Error())
				mu.Unlock()
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()

	memberIP := ps[0].raftIP
	attacks := []struct {
		name string
		cfg  *tls.Config
		n    int
	}{
		{"in plaintext", nil, 10},
		{"with a certificate from another CA", pki(t, other, ca).ClientConfig(), 10},
		{"over TLS without a certificate", &tls.Config{InsecureSkipVerify: true}, 3},
	}
	sent := 0
	for _, a := range attacks {
		stream := newOutsiderStream(t, memberIP)
		stream.tls = a.cfg
		trans := raft.NewNetworkTransport(stream, 1, time.Second, io.Discard)
		delivered := 0
		for i := 0; i < a.n; i++ {
			// Aim at a follower, which would win the election it starts.
			target := othersThan(ps, leaderOf(ps))[i%2]
			if err := sendTimeoutNow(trans, target.id, target.raftAddr()); err == nil {
				delivered++
			}
			sent++
			time.Sleep(400 * time.Millisecond) // time for an election to run
		}
		trans.Close()
		if delivered != 0 {
			t.Fatalf("%d of %d TimeoutNow RPCs sent %s from %s were answered", delivered, a.n, a.name, memberIP)
		}
		if now := leaderOf(ps); now != ld || ld.info("term") != term {
			t.Fatalf("after TimeoutNow RPCs %s from %s: leader %s term %s; before: leader %s term %s",
				a.name, memberIP, idOf(now), ld.info("term"), ld.id, term)
		}
	}
	close(stop)
	wg.Wait()
	if len(clientErrs) > 0 {
		t.Fatalf("a client got %d errors during the attack, first %q", len(clientErrs), clientErrs[0])
	}
	refused := 0
	for _, p := range ps {
		n, _ := strconv.Atoi(p.info("raft_refused_connections"))
		refused += n
	}
	if refused-refusedBefore < sent {
		t.Fatalf("the nodes count %d refused connections; want at least %d", refused-refusedBefore, sent)
	}
	logged := false
	for _, p := range ps {
		logged = logged || strings.Contains(p.logTail(), "without a valid certificate")
	}
	if !logged {
		t.Fatal("no node logged a connection refused for its certificate")
	}

	// The same RPC with a certificate from the group's CA is obeyed: the
	// refusals above came from mutual TLS, not from the harness.
	stream := newOutsiderStream(t, memberIP)
	stream.tls = pki(t, ca, ca).ClientConfig()
	trans := raft.NewNetworkTransport(stream, 1, time.Second, io.Discard)
	defer trans.Close()
	target := othersThan(ps, ld)[0]
	if err := sendTimeoutNow(trans, target.id, target.raftAddr()); err != nil {
		t.Fatalf("TimeoutNow with a valid certificate: %v", err)
	}
	waitFor(t, 15*time.Second, func() bool { l := leaderOf(ps); return l != nil && l.info("term") != term })
	t.Logf("%d TimeoutNow RPCs without a valid certificate changed nothing (leader %s, term %s, %d connections refused); "+
		"one with a valid certificate moved the group to term %s", sent, ld.id, term, refused-refusedBefore, leaderOf(ps).info("term"))
}

// servedSerial dials p's Raft port from ip with a certificate from ca and
// returns the serial number of the certificate p presents.
func servedSerial(t *testing.T, p *proc, ip string, ca *certstest.CA) *big.Int {
	t.Helper()
	c, err := dialTLS(net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}, p.raftAddr(), pki(t, ca, ca).ClientConfig(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.(*tls.Conn).ConnectionState().PeerCertificates[0].SerialNumber
}

func TestProcessRaftCertificateReloadsOnSIGHUP(t *testing.T) {
	ca := certstest.NewCA(t, "group CA")
	ps, dirs := startTLSProcGroup(t, ca)
	n2 := ps[1]
	before := servedSerial(t, n2, ps[0].raftIP, ca)

	f := certstest.WriteFiles(t, dirs[n2.id], n2.id, ca, ca)
	n2.signal(syscall.SIGHUP)
	waitFor(t, 10*time.Second, func() bool { return servedSerial(t, n2, ps[0].raftIP, ca).Cmp(f.Serial) == 0 })
	if !strings.Contains(n2.logTail(), "SIGHUP: TLS certificate reloaded") {
		t.Fatalf("n2 did not log the reload:\n%s", n2.logTail())
	}

	// A key that does not match is refused; the certificate in force stays.
	if err := os.WriteFile(f.Key, []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n2.signal(syscall.SIGHUP)
	waitFor(t, 10*time.Second, func() bool { return strings.Contains(n2.logTail(), "did not load") })
	if got := servedSerial(t, n2, ps[0].raftIP, ca); got.Cmp(f.Serial) != 0 {
		t.Fatalf("after a failed reload n2 serves serial %v; want %v", got, f.Serial)
	}
	// The group still decides through n2, over the connections opened
	// before the rotation and new ones.
	for i := 0; i < 5; i++ {
		if _, err := n2.do("RL.TOKEN", "k", "1/h", 100); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("n2 served serial %x, then %x after SIGHUP", before, f.Serial)
}
