package cluster

import (
	"crypto/sha1"
	"encoding/hex"
	"net"
	"strconv"
)

// Shard is the group as one Redis Cluster shard: what the CLUSTER commands
// report (cmd/sluice hands it to the commands package's Topology).
type Shard struct {
	Self  string      // this node's NodeID
	Nodes []ShardNode // the primary first
	Epoch int64       // the Raft term
	Down  bool        // no leader with a known RESP address
	Slots []SlotOwner // a sharded cluster's: the ranges the group owns; nil for every slot
}

// ShardNode is one member as a shard's node.
type ShardNode struct {
	ID      string // NodeID of the member's --node-id
	Addr    string // RESP address from the member table; "" unknown
	BusPort int    // the Raft port
	Primary bool
	Offset  int64 // applied log index; known for this node only, else 0
}

// ClusterShard describes the group for the CLUSTER commands: the group
// is one shard owning every slot, its leader the primary and its other
// members replicas, at the RESP addresses of the replicated member table.
// While this node knows no leader with a known address, it stands as the
// primary itself (a write sent to it waits for a leader and is forwarded,
// or answers CLUSTERDOWN) and the shard is Down, so CLUSTER INFO says
// cluster_state:fail. Only this node's replication offset is known here;
// the others' are reported as 0.
func (n *Node) ClusterShard() Shard {
	self := NodeID(n.cfg.ID)
	sh := Shard{Self: self, Epoch: int64(n.raft.CurrentTerm())}
	members, err := n.Members()
	leaderKnown, selfListed := false, false
	for _, m := range members {
		if m.Leader && m.RESPAddr != "" {
			leaderKnown = true
		}
		if m.ID == n.cfg.ID {
			selfListed = true
		}
	}
	if err != nil || !selfListed {
		members = []Member{{ID: n.cfg.ID, RaftAddr: n.cfg.RaftAdvertise, RESPAddr: n.cfg.RESPAddr}}
		leaderKnown = false
	}
	sh.Down = !leaderKnown
	for _, m := range members {
		node := ShardNode{ID: NodeID(m.ID), Addr: m.RESPAddr, Primary: m.Leader && leaderKnown}
		if m.ID == n.cfg.ID {
			node.Offset = int64(n.appliedIndex())
			if node.Addr == "" {
				node.Addr = n.cfg.RESPAddr
			}
			if !leaderKnown {
				node.Primary = true
			}
		}
		if _, port, err := net.SplitHostPort(m.RaftAddr); err == nil {
			node.BusPort, _ = strconv.Atoi(port)
		}
		if node.Primary {
			sh.Nodes = append([]ShardNode{node}, sh.Nodes...)
		} else {
			sh.Nodes = append(sh.Nodes, node)
		}
	}
	return sh
}

// NodeID is the 40-hex-digit node id the CLUSTER commands report for the
// member named id (--node-id): its SHA-1, the same on every node and
// across restarts.
func NodeID(id string) string {
	sum := sha1.Sum([]byte(id))
	return hex.EncodeToString(sum[:])
}
