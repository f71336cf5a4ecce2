package cluster

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/sluice-rl/sluice/store"
)

// TestConcurrentMetaJoinsAddAtMostMetaVotersVoters joins four nodes to a
// one-node meta group at once, as a sharded cluster's processes do when
// they start together: the meta group takes MetaVoters voters, the rest
// as non-voters, however the joins interleave.
func TestConcurrentMetaJoinsAddAtMostMetaVotersVoters(t *testing.T) {
	const n = 5
	trans := make([]*raft.InmemTransport, n)
	for i := range trans {
		_, trans[i] = raft.NewInmemTransport(raft.ServerAddress(fmt.Sprintf("m%d", i+1)))
	}
	for _, a := range trans {
		for _, b := range trans {
			if a != b {
				a.Connect(b.LocalAddr(), b)
			}
		}
	}
	nodes := make([]*Node, n)
	for i := range nodes {
		cfg := DefaultConfig()
		cfg.ID, cfg.RESPAddr, cfg.Meta, cfg.Logger = fmt.Sprintf("m%d", i+1), fmt.Sprintf("127.0.0.1:%d", 7001+i), true, quiet
		logs := raft.NewInmemStore()
		cfg.Transport, cfg.Logs, cfg.Stable, cfg.Snapshots, cfg.RaftConfig = trans[i], logs, logs, raft.NewInmemSnapshotStore(), fastRaft
		if i == 0 {
			cfg.Bootstrap = BootstrapForce
		}
		node, err := Open(cfg, store.New(1))
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = node
		t.Cleanup(func() { node.Close() })
	}
	deadline := time.Now().Add(10 * time.Second)
	for !nodes[0].Ready() {
		if time.Now().After(deadline) {
			t.Fatal("m1 never led its one-node meta group")
		}
		time.Sleep(10 * time.Millisecond)
	}
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if err := nodes[0].Join(nodes[i].cfg.ID, string(trans[i].LocalAddr()), nodes[i].cfg.RESPAddr, false); err != nil {
				t.Errorf("Join(m%d): %v", i+1, err)
			}
		}(i)
	}
	wg.Wait()
	cfg := nodes[0].raft.GetConfiguration().Configuration()
	if got := voters(cfg); got != MetaVoters || len(cfg.Servers) != n {
		t.Fatalf("after %d concurrent joins the meta group has %d voters among %d members; want %d voters among %d: %v",
			n-1, got, len(cfg.Servers), MetaVoters, n, cfg.Servers)
	}
}
