package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

// INFO through the real binary: what a replicated node reports of its
// keyspace, and how often the keyspace is swept.

// TestReplicatedNodeInfoReportsItsKeyspace: a replicated node's INFO
// memory and INFO stats report its replica's keyspace (its memory, keys,
// expiry and sweep), as a single node's do.
func TestReplicatedNodeInfoReportsItsKeyspace(t *testing.T) {
	p := start(t, "--dir", t.TempDir(), "--node-id", "n1", "--raft-bind", "127.0.0.1:0",
		"--bootstrap", "force")
	rdb := client(t, p)
	ctx := context.Background()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		err := rdb.Do(ctx, "RL.TOKEN", "user:1", "1/h", 10).Err()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no decision within 15 s: %v", err)
		}
	}
	if v := infoField(t, rdb, "memory", "keyspace_keys"); v != "1" {
		t.Errorf("INFO memory keyspace_keys = %s; want 1", v)
	}
	if v, _ := strconv.ParseInt(infoField(t, rdb, "memory", "keyspace_used_memory"), 10, 64); v <= 0 {
		t.Errorf("INFO memory keyspace_used_memory = %d; want the replica's bytes", v)
	}
	for _, f := range []string{"expired_keys", "evicted_keys", "sweep_examined", "sweep_runs"} {
		infoField(t, rdb, "stats", f) // fails the test when absent
	}
	if v := infoField(t, rdb, "replication", "role"); v != "leader" {
		t.Errorf("INFO replication role = %s; want leader", v)
	}
}

// TestOneSweepLoopWhateverTheListeners: a server bound to two addresses
// sweeps its keyspace ten times a second, as with one (a sweep loop per
// listener swept twice as often). Ticks can only be lost under load, never
// gained, so the bound holds on a busy machine.
func TestOneSweepLoopWhateverTheListeners(t *testing.T) {
	p := start(t, "--dir", t.TempDir(), "--save", "0", "--bind", "127.0.0.1", "127.0.0.2")
	listeners := func() int { return strings.Count(p.logText(), "sluice ready to accept connections") }
	for deadline := time.Now().Add(5 * time.Second); listeners() != 2 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := listeners(); n != 2 {
		t.Fatalf("%d listeners; want 2:\n%s", n, p.logText())
	}
	rdb := client(t, p)
	runs := func() int64 {
		n, err := strconv.ParseInt(infoField(t, rdb, "stats", "sweep_runs"), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	first, start := runs(), time.Now()
	time.Sleep(3 * time.Second)
	n, took := runs()-first, time.Since(start)
	perSecond := float64(n) / took.Seconds()
	t.Logf("%d sweeps in %v: %.1f/s", n, took.Round(time.Millisecond), perSecond)
	if perSecond > 13 {
		t.Fatalf("%.1f sweeps a second with two listeners; want 10", perSecond)
	}
}
