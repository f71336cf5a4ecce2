package process

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestShardedNodeRestartsWithoutItsStartFlags: a sharded node needs
// --cluster-seed (or, for group 1's first node, --bootstrap) to start for
// the first time, and a node whose meta replica is a member already
// (--dir/meta/raft-member) restarts without either.
func TestShardedNodeRestartsWithoutItsStartFlags(t *testing.T) {
	for _, group := range []string{"1", "2"} {
		o := testOptions(t, "port", "7001", "node-id", "g"+group+"n1", "raft-bind", "127.0.0.1:0",
			"cluster-group", group, "cluster-groups", "2")
		if err := o.Check(); err == nil || !strings.Contains(err.Error(), "--cluster-seed") {
			t.Fatalf("group %s's first start without a seed or --bootstrap: %v", group, err)
		}
		dir, _ := o.Get("dir")
		if err := os.MkdirAll(filepath.Join(dir, "meta"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "meta", "raft-member"), []byte("g"+group+"n1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := o.Check(); err != nil {
			t.Fatalf("group %s's restart of a meta member: %v", group, err)
		}
	}
}
