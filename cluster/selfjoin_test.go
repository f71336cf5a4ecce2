package cluster

import (
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/sluice-rl/sluice/store"
)

// A node told to join through its own RESP address (--join, or a sharded
// node's --cluster-seed, naming itself) would ask itself for the group
// forever, logging "no leader": Open refuses it, naming the flag.
func TestOpenRefusesToJoinThroughItself(t *testing.T) {
	for _, c := range []struct {
		meta       bool
		join, flag string
	}{
		{false, "127.0.0.1:7001", "--join"},
		{true, "127.0.0.1:7001", "--cluster-seed"},
		{false, "localhost:7001", "--join"},
		{false, "[::1]:7001", "--join"},
	} {
		cfg := DefaultConfig()
		cfg.ID, cfg.RESPAddr, cfg.Join, cfg.Meta, cfg.Logger = "n1", "127.0.0.1:7001", c.join, c.meta, quiet
		_, cfg.Transport = raft.NewInmemTransport("")
		cfg.Logs, cfg.Stable, cfg.Snapshots = raft.NewInmemStore(), raft.NewInmemStore(), raft.NewInmemSnapshotStore()
		n, err := Open(cfg, store.New(1))
		if err == nil {
			n.Close()
			t.Fatalf("join %s from %s: opened; want a refusal", c.join, cfg.RESPAddr)
		}
		if !strings.Contains(err.Error(), c.flag) || !strings.Contains(err.Error(), "this node's own") {
			t.Fatalf("join %s: %v; want a refusal naming %s", c.join, err, c.flag)
		}
	}
	cfg := DefaultConfig()
	cfg.ID, cfg.RESPAddr, cfg.Join, cfg.Logger = "n1", "127.0.0.1:7001", "127.0.0.1:7002", quiet
	_, cfg.Transport = raft.NewInmemTransport("")
	cfg.Logs, cfg.Stable, cfg.Snapshots = raft.NewInmemStore(), raft.NewInmemStore(), raft.NewInmemSnapshotStore()
	n, err := Open(cfg, store.New(1))
	if err != nil {
		t.Fatalf("join through another node: %v", err)
	}
	n.Close()
}
