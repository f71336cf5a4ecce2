package cluster

import (
	"errors"
	"net"
	"testing"

	"github.com/hashicorp/raft"
)

// TestRaftTransportRefusesPipelinedReplication: the TCP transport a node
// runs on answers raft's pipeline request with
// ErrPipelineReplicationNotSupported, so raft replicates synchronously and
// never enters netPipeline, whose send loop can park forever after a
// follower's Success=false (see unpipelined).
func TestRaftTransportRefusesPipelinedReplication(t *testing.T) {
	adv := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}
	tr, _, err := newTCPTransport("127.0.0.1:0", adv, nil, nil)
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
