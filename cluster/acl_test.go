package cluster

import (
	"bytes"
	"io"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/sluice-rl/sluice/acl"
	"github.com/sluice-rl/sluice/store"
)

// testUsers returns an empty set of users over a small command table.
func testUsers(t *testing.T) *acl.Users {
	t.Helper()
	reg, err := acl.NewRegistry(acl.Categories)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []acl.Spec{
		{Name: "rl.token", Categories: []string{"limiter", "write", "fast"}, Keys: []acl.KeySpec{{First: 1, Last: 1, Step: 1, Access: acl.Read | acl.Write}}},
		{Name: "flushall", Categories: []string{"keyspace", "write", "admin", "dangerous", "slow"}},
	} {
		if _, err := reg.Register(s); err != nil {
			t.Fatal(err)
		}
	}
	return acl.NewUsers(reg)
}

// applyEntry applies ops as log entry index through f.
func applyEntry(t *testing.T, f *stateMachine, index uint64, ops ...op) []result {
	t.Helper()
	resp := f.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: appendBatch(nil, int64(index), ops)}).(applyResponse)
	if resp.err != nil {
		t.Fatal(resp.err)
	}
	return resp.results
}

func aclOp(words ...string) op {
	o := op{code: opACL}
	for _, w := range words {
		o.argv = append(o.argv, []byte(w))
	}
	return o
}

func TestFSMAppliesTheFirstSeedOnlyAndKeepsUsersInSnapshots(t *testing.T) {
	seedA, seedB := testUsers(t), testUsers(t)
	if err := seedA.SetUser("tenant-a", "on", ">pa", "~tenant-a:*", "+@limiter"); err != nil {
		t.Fatal(err)
	}
	if err := seedB.SetUser("intruder", "on", "nopass", "+@all"); err != nil {
		t.Fatal(err)
	}
	users := testUsers(t)
	f := newStateMachine(store.New(2), users, nil)
	rs := applyEntry(t, f, 1, aclOp("seed", string(seedA.Encode())), aclOp("setuser", "tenant-b", "on", ">pb", "~tenant-b:*"))
	if rs[0].out.Err != nil || rs[1].out.Err != nil || !f.aclSet.Load() || !rs[1].acl || rs[1].index != 1 {
		t.Fatalf("first entry: %+v %+v set=%v", rs[0].out.Err, rs[1].out.Err, f.aclSet.Load())
	}
	// A second seed (a node that had not applied the first) changes nothing.
	applyEntry(t, f, 2, aclOp("seed", string(seedB.Encode())))
	if users.Get("intruder") != nil || users.Get("tenant-a") == nil || users.Get("tenant-b") == nil {
		t.Fatalf("users after a second seed: %v", users.Names())
	}
	// A change that fails is the same error on every node and changes nothing.
	rs = applyEntry(t, f, 3, aclOp("setuser", "tenant-a", "+nosuch"), aclOp("deluser", "tenant-b", "nobody"))
	if rs[0].out.Err == nil || rs[1].n != 1 || users.Get("tenant-b") != nil {
		t.Fatalf("entry 3: %v, deleted %d, users %v", rs[0].out.Err, rs[1].n, users.Names())
	}

	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := snap.(*fsmSnapshot).bytes()
	if err != nil {
		t.Fatal(err)
	}
	restored := testUsers(t)
	g := newStateMachine(store.New(2), restored, nil)
	if err := g.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	if !g.aclSet.Load() || !bytes.Equal(restored.Encode(), users.Encode()) {
		t.Fatalf("restored users:\n%s\nwant:\n%s", restored.Encode(), users.Encode())
	}
	if _, err := restored.Authenticate("tenant-a", "pa"); err != nil {
		t.Fatalf("AUTH tenant-a after restore: %v", err)
	}

	// A snapshot of a log that carried no users leaves a node's own users.
	empty := newStateMachine(store.New(2), testUsers(t), nil)
	snap, _ = empty.Snapshot()
	data, _ = snap.(*fsmSnapshot).bytes()
	own := testUsers(t)
	own.SetUser("local", "on", "nopass")
	h := newStateMachine(store.New(2), own, nil)
	if err := h.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	if h.aclSet.Load() || own.Get("local") == nil {
		t.Fatalf("restore without users: set=%v users=%v", h.aclSet.Load(), own.Names())
	}
}
