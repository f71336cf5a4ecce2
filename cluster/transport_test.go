package cluster

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/sluice-rl/sluice/internal/testutil"
)

// TestRaftTransportRefusesPipelinedReplication: the TCP transport a node
// runs on answers raft's pipeline request with
// ErrPipelineReplicationNotSupported, so raft replicates synchronously and
// never enters netPipeline, whose send loop can park forever after a
// follower's Success=false (see entryTransport.AppendEntriesPipeline).
func TestRaftTransportRefusesPipelinedReplication(t *testing.T) {
	tr, _, err := newTCPTransport("127.0.0.1:0", "127.0.0.1:0", nil, nil, nil)

	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var rt raft.Transport = tr
	p, err := rt.AppendEntriesPipeline("n2", "127.0.0.1:1")
	if p != nil || !errors.Is(err, raft.ErrPipelineReplicationNotSupported) {
		t.Fatalf("AppendEntriesPipeline = %v, %v; want ErrPipelineReplicationNotSupported", p, err)
	}
	if _, ok := rt.(raft.WithPreVote); !ok {
		t.Error("the wrapped transport lost raft's pre-vote interface")
	}
	if _, ok := rt.(raft.WithClose); !ok {
		t.Error("the wrapped transport lost raft's close interface")
	}
}

// TestAdvertisedHostNameIsKept: an advertised host name stays a name (the
// group's configuration keeps it and each dial resolves it), an IP address
// stays that IP, port 0 becomes the bound port, and an unspecified or
// empty host is refused.
func TestAdvertisedHostNameIsKept(t *testing.T) {
	bound := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7381}
	for adv, want := range map[string]string{
		"sluice-1.sluice-peers.default.svc:7381": "sluice-1.sluice-peers.default.svc:7381",
		"localhost:0":                            "localhost:7381",
		"127.0.0.2:7000":                         "127.0.0.2:7000",
		"[::1]:0":                                "[::1]:7381",
		"0.0.0.0:7381":                           "",
		":7381":                                  "",
		"no-port":                                "",
	} {
		got, err := advertiseAddr(adv, bound)
		switch {
		case want == "" && err == nil:
			t.Errorf("%q advertised as %v; want a refusal", adv, got)
		case want != "" && (err != nil || got.String() != want):
			t.Errorf("%q advertised as %v, %v; want %s", adv, got, err, want)
		}
	}
	if a, _ := advertiseAddr("sluice-1:7381", bound); a.(namedAddr) == "" {
		t.Error("a host name is not kept as a name")
	}
}

// TestGroupKeepsMembersHostNames: nodes whose Raft port is named by a host
// name (--raft-bind localhost:0, advertised as bound) are members under
// that name, and replicate over it.
func TestGroupKeepsMembersHostNames(t *testing.T) {
	n1 := testutil.Start(t, "--node-id", "n1", "--raft-bind", "localhost:0", "--bootstrap", "yes")
	c1 := testutil.Dial(t, n1.Addr)
	waitFor(t, 10*time.Second, func() bool { return strings.Contains(c1.Do("INFO replication\r\n"), "ready:true") })
	n2 := testutil.Start(t, "--node-id", "n2", "--raft-bind", "localhost:0", "--join", n1.Addr)
	c2 := testutil.Dial(t, n2.Addr)
	waitFor(t, 10*time.Second, func() bool {
		return strings.Count(c1.Do("RAFT.MEMBERS\r\n"), "localhost:") == 2
	})
	if got := c2.Do("RL.TOKEN k 1/h 5\r\n"); !strings.HasPrefix(got, "[:1 :5 :4") {
		t.Fatalf("a decision through the second member: %s", got)
	}
	waitFor(t, 10*time.Second, func() bool { return strings.HasPrefix(c2.Do("RL.TOKEN k 1/h 5 0\r\n"), "[:1 :5 :4") })
}
