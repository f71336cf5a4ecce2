package cluster

import (
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/keyslot"
	"github.com/sluice-rl/sluice/store"
)

// decisionOps returns the decisions of sampleOps (decide, check and take
// ops), and an RL.CHECK naming an empty override key.
func decisionOps() []op {
	var ops []op
	for _, o := range sampleOps() {
		if o.code == opDecide {
			ops = append(ops, o)
		}
	}
	return append(ops, op{code: opDecide, req: algorithms.Request{Key: []byte("pol:x"), N: 2, Override: []byte{},
		Limit: algorithms.Limit{Algo: algorithms.Sliding, Count: 9, Period: 1e9}}})
}

// TestDecisionsDecodeAsTheirOps: an entry of decisions only decodes into
// the requests its ops decode into; an entry with any other op, or one
// that does not decode, is left to the ops' decoding, and the scratch
// keeps no reference into it.
func TestDecisionsDecodeAsTheirOps(t *testing.T) {
	entry := appendBatch(nil, 1_800_000_000e9, decisionOps())
	now, ops, err := decodeBatch(entry)
	if err != nil {
		t.Fatal(err)
	}
	gotNow, reqs, ok := decodeDecisionsInto(entry, nil)
	if !ok || gotNow != now || len(reqs) != len(ops) {
		t.Fatalf("decisions entry: ok %v, now %d (want %d), %d requests (want %d)", ok, gotNow, now, len(reqs), len(ops))
	}
	for i := range ops {
		if !reflect.DeepEqual(reqs[i], ops[i].req) {
			t.Errorf("request %d: %+v, its op's %+v", i, reqs[i], ops[i].req)
		}
	}
	if _, _, ok := decodeDecisionsInto(appendBatch(nil, 0, nil), reqs); !ok {
		t.Error("an empty entry is an entry of decisions")
	}

	mixed := append(decisionOps(), op{code: opDelete, keys: [][]byte{[]byte("x")}})
	for name, data := range map[string][]byte{
		"another op":     appendBatch(nil, 0, mixed),
		"all of sample":  appendBatch(nil, 0, sampleOps()),
		"truncated":      entry[:len(entry)-1],
		"trailing bytes": append(append([]byte{}, entry...), 0),
		"a take of 0":    appendBatch(nil, 0, []op{{code: opTake}}),
		"wrong version":  append([]byte{codecVersion + 1}, entry[1:]...),
	} {
		scratch := make([]algorithms.Request, 0, 64)
		_, got, ok := decodeDecisionsInto(data, scratch)
		if ok {
			t.Errorf("%s: decoded as decisions", name)
			continue
		}
		for i, r := range scratch[:cap(scratch)] {
			if r.Key != nil || r.ID != nil || r.Override != nil {
				t.Errorf("%s: scratch request %d still refers to the entry", name, i)
			}
		}
		if len(got) != 0 {
			t.Errorf("%s: %d requests returned", name, len(got))
		}
	}
}

// TestDecisionsApplyAsTheirOps: a replica applying entries of decisions
// straight from their requests reaches the same outcomes and the same
// state as one applying them as ops, including RL.ALL groups, takes,
// peeks, refunds and checks, on a sharded group's fence too (an entry with
// a refused key goes the ops' way on both).
func TestDecisionsApplyAsTheirOps(t *testing.T) {
	for _, fenced := range []bool{false, true} {
		t.Run("fenced="+strconv.FormatBool(fenced), func(t *testing.T) {
			fast := newStateMachine(store.New(4), nil, nil)
			slow := newStateMachine(store.New(4), nil, nil)
			if fenced {
				for _, f := range []*stateMachine{fast, slow} {
					f.fence, f.slots = &slotSet{}, &[keyslot.Slots]slotMig{}
					applyOps(t, f, 1, op{code: opOwn, epoch: 1, ranges: []slotRange{{lo: 0, hi: 8191}}})
				}
				fast.ops = nil // the own entry went the ops' way
			}
			rng := rand.New(rand.NewPCG(1, 2))
			algos := []algorithms.Algo{algorithms.Token, algorithms.Leaky, algorithms.Fixed, algorithms.Sliding, algorithms.Throttle}
			var keys [][]byte
			for k := 0; k < 40; k++ {
				keys = append(keys, []byte("k"+strconv.Itoa(k)))
			}
			now := int64(1_800_000_000e9)
			refusedEntries := 0
			for e := 0; e < 300; e++ {
				var ops []op
				for i, n := 0, 1+rng.IntN(30); i < n; i++ {
					k := rng.IntN(len(keys))
					r := algorithms.Request{Key: keys[k], N: int64(rng.IntN(4) - 1),
						Limit: algorithms.Limit{Algo: algos[k%len(algos)], Count: 5, Period: 1e9}}
					switch rng.IntN(8) {
					case 0:
						r.Group = int32(1 + i/3) // consecutive requests share it: an RL.ALL group
					case 1:
						if r.Limit.Algo == algorithms.Token && r.N > 1 {
							r.Min = 1
						}
					case 2:
						r.Override = []byte("ovr:" + strconv.Itoa(k))
					}
					ops = append(ops, op{code: opDecide, req: r})
				}
				now += int64(rng.IntN(300)-50) * 1e6 // at times behind the applied time
				entry := appendBatch(nil, now, ops)
				for _, f := range []*stateMachine{fast, slow} {
					if f == slow {
						slow.mixed = true // the next entry as ops
					}
				}
				index := uint64(e + 2)
				a := fast.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: entry}).(applyResponse)
				b := slow.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: entry}).(applyResponse)
				if a.err != nil || b.err != nil {
					t.Fatal(a.err, b.err)
				}
				if fast.ops != nil {
					refusedEntries++
					fast.ops = nil
				}
				if !reflect.DeepEqual(a.results, b.results) {
					t.Fatalf("entry %d: results differ:\n%+v\n%+v", e, a.results, b.results)
				}
				if fast.AppliedTime() != slow.AppliedTime() || fast.AppliedIndex() != slow.AppliedIndex() {
					t.Fatalf("entry %d: applied at %d/%d, index %d/%d", e, fast.AppliedTime(), slow.AppliedTime(), fast.AppliedIndex(), slow.AppliedIndex())
				}
			}
			for _, k := range keys {
				x, errX := fast.st.Info(now, k)
				y, errY := slow.st.Info(now, k)
				if !reflect.DeepEqual(x, y) || (errX == nil) != (errY == nil) {
					t.Fatalf("key %s: %+v (%v) against %+v (%v)", k, x, errX, y, errY)
				}
			}
			switch {
			case !fenced && refusedEntries != 0:
				t.Fatalf("%d entries of decisions went the ops' way", refusedEntries)
			case fenced && (refusedEntries == 0 || refusedEntries == 300):
				t.Fatalf("fenced: %d of 300 entries went the ops' way; want some, not all", refusedEntries)
			}
		})
	}
}

// TestAnEntryWithOtherOpsSendsTheNextTheOpsWay: after an entry holding an
// op that is not a decision, the next entry is decoded as ops at once;
// after one of decisions only, the next is tried as decisions first.
func TestAnEntryWithOtherOpsSendsTheNextTheOpsWay(t *testing.T) {
	f := newStateMachine(store.New(2), nil, nil)
	applyOps(t, f, 1, token([]byte("a"), 0), op{code: opDBSize})
	if !f.mixed || f.ops == nil {
		t.Fatal("an entry with a DBSIZE did not go the ops' way")
	}
	f.ops = nil
	applyOps(t, f, 2, token([]byte("a"), 0))
	if f.mixed || f.ops == nil {
		t.Fatalf("the entry after it: mixed %v, went the ops' way %v", f.mixed, f.ops != nil)
	}
	f.ops = nil
	if rs := applyOps(t, f, 3, token([]byte("a"), 0)); !rs[0].out.Result.Allowed || f.ops != nil {
		t.Fatalf("the next entry of decisions: %+v, went the ops' way %v", rs[0].out, f.ops != nil)
	}
}
