package cluster

import (
	"strconv"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/store"
)

// BenchmarkApplyEntry applies log entries of 400 RL.TOKEN decisions (the
// size a group's entries reach at P16) on 100,000 keys, as the leader does
// (results for its submissions) and as a follower does (no results:
// nothing reads them). ns/op and B/op are per entry.
func BenchmarkApplyEntry(b *testing.B) {
	const perEntry, keys = 400, 100_000
	entries := make([][]byte, keys/perEntry)
	for e := range entries {
		ops := make([]op, perEntry)
		for i := range ops {
			ops[i] = token([]byte("k"+strconv.Itoa(e*perEntry+i)), 0)
		}
		entries[e] = appendBatch(nil, 1_800_000_000e9, ops)
	}
	// leader: its own entries, their results given back once the callers
	// copied them (the batcher, for decisions only); leader-kept: results
	// that a waiting caller keeps, new for every entry; follower: nobody
	// reads the results.
	for _, role := range []string{"leader", "leader-kept", "follower"} {
		b.Run(role, func(b *testing.B) {
			f := newStateMachine(store.New(16), nil, nil)
			f.proposals = &proposals{}
			if role != "follower" {
				for _, e := range entries {
					f.proposals.add(e)
				}
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				resp := f.Apply(&raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: entries[i%len(entries)]})
				if r, ok := resp.(applyResponse); ok && role == "leader" {
					f.proposals.giveBack(r.results)
				}
			}
		})
	}
}

// BenchmarkEncodeEntry packs an entry as the leader does at P16: 25
// clients' batches of 16 RL.TOKEN decisions each, submitted (DecideAsync)
// and encoded (the batcher). ns/op and B/op are per entry.
func BenchmarkEncodeEntry(b *testing.B) {
	const clients, perClient = 25, 16
	batches := make([][]algorithms.Request, clients)
	for c := range batches {
		reqs := make([]algorithms.Request, perClient)
		for i := range reqs {
			reqs[i] = token([]byte("k"+strconv.Itoa(c*perClient+i)), 0).req
		}
		batches[c] = reqs
	}
	var bt batcher
	var buf []byte
	subs := make([]*submission, clients)
	b.ReportAllocs()
	for b.Loop() {
		for c, reqs := range batches {
			subs[c] = &submission{now: 1_800_000_000e9, reqs: reqs}
		}
		buf = bt.encode(buf[:0], subs)
	}
}

// BenchmarkDecodeEntry decodes an entry of 400 RL.TOKEN decisions into a
// state machine's scratch, as every replica does before applying it: as
// ops (any entry) and as requests (an entry of decisions only). ns/op is
// per entry.
func BenchmarkDecodeEntry(b *testing.B) {
	ops := make([]op, 400)
	for i := range ops {
		ops[i] = token([]byte("k"+strconv.Itoa(i)), 0)
	}
	entry := appendBatch(nil, 1_800_000_000e9, ops)
	b.Run("ops", func(b *testing.B) {
		var scratch []op
		b.ReportAllocs()
		for b.Loop() {
			_, scratch, _ = decodeBatchInto(entry, scratch)
		}
	})
	b.Run("decisions", func(b *testing.B) {
		var scratch []algorithms.Request
		b.ReportAllocs()
		for b.Loop() {
			_, scratch, _ = decodeDecisionsInto(entry, scratch)
		}
	})
}
