package store

import (
	"bytes"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/compat"
)

func transact(st *Store, now int64, watches []algorithms.Watch, reqs ...algorithms.Request) ([]algorithms.Outcome, bool) {
	out := make([]algorithms.Outcome, len(reqs))
	ok, _ := st.Transact(now, watches, reqs, out, nil)
	return out, ok
}

func TestTransactCarriesOutInOrderAtOneInstant(t *testing.T) {
	st := New(8)
	now := time.Unix(1700000000, 0).UnixNano()
	out, ok := transact(st, now, nil,
		req(algorithms.Token, "a", 2, time.Second, 1),
		req(algorithms.Fixed, "b", 1, time.Minute, 1),
		req(algorithms.Token, "a", 2, time.Second, 1),
		req(algorithms.Token, "a", 2, time.Second, 1),
		req(algorithms.Fixed, "b", 1, time.Minute, 1))
	if !ok {
		t.Fatal("Transact with no watches = false")
	}
	want := []bool{true, true, true, false, false}
	for i, o := range out {
		if o.Err != nil || o.Result.Allowed != want[i] {
			t.Fatalf("Transact: request %d = %+v; want allowed %v", i, o, want[i])
		}
	}
	if out[2].Result.Remaining != 0 {
		t.Fatalf("the second take on a sees %d remaining; want 0 (same instant)", out[2].Result.Remaining)
	}
}

func TestTransactWithChangedWatchAppliesNothing(t *testing.T) {
	st := New(8)
	t0 := time.Unix(1700000000, 0).UnixNano()
	r := req(algorithms.Token, "k", 10, time.Second, 1)
	v0, _ := st.Version(t0, []byte("k"))
	if v0 != 0 {
		t.Fatalf("Version of an absent key = %d; want 0", v0)
	}
	decide(st, t0, r)
	v1, _ := st.Version(t0, []byte("k"))
	if v1 == 0 {
		t.Fatal("Version of a live key = 0")
	}
	// A denial and a peek write nothing: the version stays.
	peek := r
	peek.N = 0
	decide(st, t0, peek)
	if v, _ := st.Version(t0, []byte("k")); v != v1 {
		t.Fatalf("a peek changed the version %d → %d", v1, v)
	}
	// Another client takes a token: the transaction that watched v1 fails.
	decide(st, t0, r)
	out, ok := transact(st, t0, []algorithms.Watch{{Key: []byte("k"), Version: v1}}, r, req(algorithms.Fixed, "other", 1, time.Minute, 1))
	if ok || out[0].Result.Limit != 0 {
		t.Fatalf("Transact after the watched key changed = %v, %+v; want false and no outcome", ok, out)
	}
	if got := remaining(t, st, t0, r); got != 8 {
		t.Fatalf("remaining after a failed transaction = %d; want 8", got)
	}
	if n, _ := st.Exists(t0, [][]byte{[]byte("other")}); n != 0 {
		t.Fatal("a failed transaction created a key")
	}
	v2, _ := st.Version(t0, []byte("k"))
	if _, ok := transact(st, t0, []algorithms.Watch{{Key: []byte("k"), Version: v2}}, r); !ok {
		t.Fatal("Transact with an unchanged watch = false")
	}
	// A key watched live that has expired since fails the transaction.
	v3, _ := st.Version(t0, []byte("k"))
	if _, ok := transact(st, t0+int64(10*time.Second), []algorithms.Watch{{Key: []byte("k"), Version: v3}}); ok {
		t.Fatal("Transact after the watched key expired = true")
	}
}

func TestTransactGroupInside(t *testing.T) {
	st := New(8)
	now := time.Unix(1700000000, 0).UnixNano()
	reqs := append([]algorithms.Request{req(algorithms.Fixed, "x", 1, time.Minute, 1)},
		group(1, req(algorithms.Fixed, "x", 1, time.Minute, 1), req(algorithms.Fixed, "y", 5, time.Minute, 1))...)
	out, _ := transact(st, now, nil, reqs...)
	if !out[0].Result.Allowed || out[1].Result.Allowed {
		t.Fatalf("Transact with a group = %+v; want admitted, then the group denied", out)
	}
	if got := remaining(t, st, now, reqs[2]); got != 5 {
		t.Fatalf("y after a denied group = %d remaining; want 5", got)
	}
}

// Racing transactions on one key admit exactly the capacity, and a
// transaction's two takes are never split by another's (the capacity is
// even, so pairs taken atomically are all admitted or all denied).
func TestTransactRacingOnOneKeyAdmitsExactly(t *testing.T) {
	st := New(8)
	now := time.Unix(1700000000, 0).UnixNano()
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				r := req(algorithms.Fixed, "hot", 500, time.Hour, 1)
				out, _ := transact(st, now, nil, r, r)
				if out[0].Result.Allowed != out[1].Result.Allowed { // 500 is even: pairs never straddle it
					t.Errorf("a transaction's takes were split: %+v", out)
				}
				for _, o := range out {
					if o.Result.Allowed {
						admitted.Add(1)
					}
				}
			}
		}()
	}
	wg.Wait()
	if admitted.Load() != 500 {
		t.Fatalf("admitted %d of 1600 units; want exactly 500", admitted.Load())
	}
}

// A transaction is one frame of the append-only log, string commands,
// scripts and deletes included, and recovery gives back exactly the state
// it left.
func TestTransactionIsOneAOFFrame(t *testing.T) {
	st, a, path := openLog(t, FsyncAlways)
	st.Decide(t0, []algorithms.Request{req(algorithms.Fixed, "before", 5, time.Minute, 1)}, make([]algorithms.Outcome, 1))
	reqs := []algorithms.Request{
		req(algorithms.Fixed, "a", 5, time.Minute, 1),
		req(algorithms.Token, "b", 10, time.Second, 3),
		req(algorithms.Fixed, "a", 5, time.Minute, 2),
		req(algorithms.Fixed, "c", 5, time.Minute, 0), // a peek: nothing to log
	}
	reqs = append(reqs, group(1, req(algorithms.Fixed, "d", 1, time.Minute, 1), req(algorithms.Fixed, "a", 5, time.Minute, 1))...)
	st.Decide(t0, []algorithms.Request{req(algorithms.Fixed, "gone", 5, time.Minute, 1)}, make([]algorithms.Outcome, 1))
	b := func(s ...string) [][]byte {
		out := make([][]byte, len(s))
		for i := range s {
			out[i] = []byte(s[i])
		}
		return out
	}
	ops := []compat.TxOp{
		{Before: 0, Op: compat.Op{Cmd: compat.CmdSet}, Keys: b("s"), Argv: b("5", "PX", "60000")},
		{Before: 2, Op: compat.Op{Cmd: compat.CmdIncrBy}, Keys: b("s"), Argv: b("3")},
		{Before: 2, Op: compat.Op{Cmd: compat.CmdDel}, Keys: b("gone", "none")},
		{Before: 3, Op: compat.Op{Cmd: compat.CmdScript, Script: compat.Known.Lookup([]byte(compat.RateLimitRedisIncrementSHA1))},
			Keys: b("hits"), Argv: b("60000", "0")},
		{Before: 6, Op: compat.Op{Cmd: compat.CmdTTL}, Keys: b("s")},
	}
	if ok, _ := st.Transact(t0, nil, reqs, make([]algorithms.Outcome, len(reqs)), ops); !ok {
		t.Fatal("Transact = false")
	}
	for i, want := range []string{"OK", "8", "1", "[1 60000]", "60000000000"} {
		if got := ops[i].Reply.String(); got != want {
			t.Fatalf("op %d replied %s; want %s", i, got, want)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	got, l := loadLog(t, path, AOFLoadOptions{})
	if l.Frames != 3 {
		t.Fatalf("the log holds %d frames; want 3 (two decisions, one transaction)", l.Frames)
	}
	if !bytes.Equal(snapshotBytes(t, got, t0), snapshotBytes(t, st, t0)) {
		t.Fatal("the store loaded from the log differs from the one that ran the transaction")
	}
	if got := remaining(t, got, t0, reqs[0]); got != 1 {
		t.Fatalf("a after recovery: %d remaining; want 1", got)
	}
	if n, _ := got.Exists(t0, b("s", "hits", "gone")); n != 2 {
		t.Fatalf("after recovery EXISTS s hits gone = %d; want 2", n)
	}
}
