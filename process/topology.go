package process

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluice-rl/sluice/cluster"
	"github.com/sluice-rl/sluice/commands"
)

// nodeIDFile holds a single node's cluster node id in --dir, as Redis's
// nodes.conf holds its: made once, kept across restarts.
const nodeIDFile = "sluice-node.id"

// singleNode is a single node as the CLUSTER commands see it: one shard,
// itself the primary, at its --announce-addr or else the address each
// client connected to.
type singleNode struct {
	id   string
	addr string
}

func (n singleNode) ClusterShards() []commands.Shard {
	return []commands.Shard{{Self: n.id, Nodes: []commands.ShardNode{{ID: n.id, Addr: n.addr, Primary: true}}}}
}

// loadNodeID returns the node id kept in dir, making and writing one
// (40 random hex digits, written to a temporary file, synced and renamed
// into place) if there is none yet.
func loadNodeID(dir string) (string, error) {
	path := filepath.Join(dir, nodeIDFile)
	b, err := os.ReadFile(path)
	if err == nil {
		id := strings.TrimSpace(string(b))
		if !validNodeID(id) {
			return "", fmt.Errorf("%s: want 40 lower-case hex digits, have %q", path, id)
		}
		return id, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	var raw [20]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	id := hex.EncodeToString(raw[:])
	tmp, err := os.CreateTemp(dir, nodeIDFile+".tmp-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	if _, err := tmp.WriteString(id + "\n"); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return id, nil
}

func validNodeID(id string) bool {
	if len(id) != 40 {
		return false
	}
	for _, c := range id {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// groupTopology is a replicated node as the CLUSTER commands see it: the
// group's shard as cluster.Node describes it.
type groupTopology struct{ node *cluster.Node }

func (g groupTopology) ClusterShards() []commands.Shard {
	return []commands.Shard{shardOf(g.node.ClusterShard())}
}

// shardOf is a cluster.Shard as the commands package reports it.
func shardOf(sh cluster.Shard) commands.Shard {
	out := commands.Shard{Self: sh.Self, Epoch: sh.Epoch, Down: sh.Down, Nodes: make([]commands.ShardNode, len(sh.Nodes))}
	for i, n := range sh.Nodes {
		out.Nodes[i] = commands.ShardNode{ID: n.ID, Addr: n.Addr, BusPort: n.BusPort, Primary: n.Primary, Offset: n.Offset}
	}
	if sh.Slots != nil {
		out.Slots = make([][2]int, 0, len(sh.Slots))
		for _, r := range sh.Slots {
			out.Slots = append(out.Slots, [2]int{r.Lo, r.Hi})
		}
	}
	return out
}
