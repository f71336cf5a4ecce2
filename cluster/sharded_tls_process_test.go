package cluster

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/redis/go-redis/v9"

	"github.com/sluice-rl/sluice/certs/certstest"
)

// A sharded cluster whose processes share one Raft port per process for
// their data group and the meta group, under mutual TLS (--tls-replication
// yes): both groups work end to end, and a peer without a valid
// certificate reaches neither.

// groupStream is an outsider's stream layer that speaks to group g of a
// shared Raft port: after the TLS handshake each connection starts with
// the port's group preamble (mux.go).
type groupStream struct {
	*outsiderStream
	group byte
}

func (s groupStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := s.outsiderStream.Dial(address, timeout)
	if err != nil || s.group == 0 {
		return c, err
	}
	if _, err := c.Write([]byte{muxMagic, s.group}); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func TestProcessShardedUnderMutualTLS(t *testing.T) {
	ca, other := certstest.NewCA(t, "cluster CA"), certstest.NewCA(t, "another CA")
	base := t.TempDir()
	c := startShardedCluster(t, 2, func(p *proc) []string {
		dir := filepath.Join(base, p.id)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		f := certstest.WriteFiles(t, dir, p.id, ca, ca)
		return []string{"--tls-replication", "yes", "--tls-cert-file", f.Cert, "--tls-key-file", f.Key, "--tls-ca-cert-file", f.CA,
			"--loglevel", "notice"}
	})
	for _, p := range c.all() {
		if p.info("raft_tls") != "yes" {
			t.Fatalf("%s: INFO replication raft_tls:%s; want yes", p.id, p.info("raft_tls"))
		}
	}
	// The meta group took every process: three voters, three non-voters.
	var members map[string]string
	waitFor(t, 15*time.Second, func() bool {
		var err error
		members, err = metaMembers(c.groups[1][2])
		return err == nil && len(members) == 6
	})
	roles := map[string]int{}
	for _, r := range members {
		roles[r]++
	}
	if roles["leader"] != 1 || roles["follower"] != 2 || roles["nonvoter"] != 3 {
		t.Fatalf("META.MEMBERS roles %v; want 1 leader, 2 followers, 3 non-voters", members)
	}
	// A cluster client decides on both groups' keys, exactly.
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{c.groups[0][0].addr()}, Protocol: 2})
	defer cc.Close()
	for g := 1; g <= 2; g++ {
		key := c.keyIn(g, "tls")
		for i := 0; i < 7; i++ {
			v, err := cc.Do(context.Background(), "RL.TOKEN", key, "1/h", 5).Slice()
			if err != nil {
				t.Fatalf("group %d: RL.TOKEN %s: %v", g, key, err)
			}
			if allowed := v[0] == int64(1); allowed != (i < 5) {
				t.Fatalf("group %d: take %d of a capacity of 5: allowed=%v", g, i+1, allowed)
			}
		}
	}

	refused := func() int {
		n := 0
		for _, p := range c.all() {
			v, _ := strconv.Atoi(p.info("raft_refused_connections"))
			n += v
		}
		return n
	}
	before := refused()
	d2 := c.groupLeader(2)
	ml := c.metaLeader(d2)
	term2 := d2.info("term")
	var metaFollower *proc // a voter: a non-voter starts no election
	for _, p := range c.all() {
		if r := members[p.id]; (r == "follower" || r == "leader") && p != ml {
			metaFollower = p
		}
	}
	// A TimeoutNow, which makes its receiver start an election at once,
	// from a member's own address (the address filter admits it), to a
	// follower of group 2 (group 0 of its port) and to a meta voter that
	// does not lead (group 1).
	targets := []struct {
		name  string
		group byte
		to    *proc
	}{
		{"data group 2", 0, othersThan(c.groups[1], d2)[0]},
		{"the meta group", 1 /* process/sharded.go's metaGroup */, metaFollower},
	}
	attacks := []struct {
		name string
		cfg  *tls.Config
	}{
		{"in plaintext", nil},
		{"with a certificate from another CA", pki(t, other, ca).ClientConfig()},
		{"over TLS without a certificate", &tls.Config{InsecureSkipVerify: true}},
	}
	sent := 0
	for _, tg := range targets {
		for _, a := range attacks {
			stream := newOutsiderStream(t, tg.to.raftIP)
			stream.tls = a.cfg
			trans := raft.NewNetworkTransport(groupStream{stream, tg.group}, 1, time.Second, io.Discard)
			for i := 0; i < 3; i++ {
				if err := sendTimeoutNow(trans, tg.to.id, tg.to.raftAddr()); err == nil {
					t.Fatalf("a TimeoutNow to %s's %s %s was answered", tg.to.id, tg.name, a.name)
				}
				sent++
			}
			trans.Close()
		}
	}
	// The peer filter stands before TLS: a valid certificate from an
	// address that is no member of either group is refused too.
	for _, tg := range targets {
		stream := newOutsiderStream(t, "127.0.0.29")
		stream.tls = pki(t, ca, ca).ClientConfig()
		trans := raft.NewNetworkTransport(groupStream{stream, tg.group}, 1, time.Second, io.Discard)
		if err := sendTimeoutNow(trans, tg.to.id, tg.to.raftAddr()); err == nil {
			t.Fatalf("a TimeoutNow with a valid certificate from a stranger's address to %s's %s was answered", tg.to.id, tg.name)
		}
		sent++
		trans.Close()
	}
	time.Sleep(time.Second) // time for an election to run, had one started
	if now := leaderOf(c.groups[1]); now != d2 || d2.info("term") != term2 {
		t.Fatalf("group 2: leader %s term %s; before the attacks %s term %s", idOf(now), d2.info("term"), d2.id, term2)
	}
	if now := c.metaLeader(d2); now != ml {
		t.Fatalf("meta leader %s; before the attacks %s", idOf(now), ml.id)
	}
	if got := refused() - before; got < sent {
		t.Fatalf("the processes count %d refused connections; want at least %d", got, sent)
	}

	// The same RPC with a certificate from the cluster's CA reaches the
	// meta group: the refusals above came from mutual TLS.
	tg := targets[1]
	stream := newOutsiderStream(t, tg.to.raftIP)
	stream.tls = pki(t, ca, ca).ClientConfig()
	trans := raft.NewNetworkTransport(groupStream{stream, tg.group}, 1, time.Second, io.Discard)
	defer trans.Close()
	if err := sendTimeoutNow(trans, tg.to.id, tg.to.raftAddr()); err != nil {
		t.Fatalf("TimeoutNow to the meta group with a valid certificate: %v", err)
	}
	waitFor(t, 15*time.Second, func() bool { l := c.metaLeader(d2); return l != nil && l != ml })
	t.Logf("%d TimeoutNow RPCs without a valid certificate or from a stranger's address changed nothing (%d refused); one with a valid certificate "+
		"moved the meta leadership from %s to %s", sent, refused()-before, ml.id, c.metaLeader(d2).id)
}
