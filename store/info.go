package store

import (
	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/shard"
)

// Info returns key's state at now as RL.INFO shows it: the algorithm, when
// the state becomes absent, and its fields as stored (Algo None if the key
// is absent). The lists are copies. The error is always nil; the signature
// is the one the edge's Keyspace shares with the Raft node.
func (st *Store) Info(now int64, key []byte) (algorithms.KeyInfo, error) {
	sh := st.shardOf(key)
	sh.Lock()
	defer sh.Unlock()
	_, e := sh.Find(key, now)
	if e.Algo == algorithms.None {
		return algorithms.KeyInfo{}, nil
	}
	return algorithms.KeyInfo{Algo: e.Algo, Expire: e.Expire, Fields: fields(e)}, nil
}

// fields names the parts of e's state, per the layout in apply.go. It copies
// what it keeps of e.Ext.
func fields(e shard.Entry) []algorithms.Field {
	one := func(name string, v int64) algorithms.Field { return algorithms.Field{Name: name, Value: v} }
	switch e.Algo {
	case algorithms.Token, algorithms.Leaky, algorithms.Throttle:
		return []algorithms.Field{one("tat_ns", e.State[0])}
	case algorithms.Fixed:
		return []algorithms.Field{one("window_start_ns", e.State[0]), one("count", e.State[1])}
	case algorithms.Sliding:
		return []algorithms.Field{one("window_start_ns", e.State[0]), one("current", e.State[1]),
			one("previous", e.State[2])}
	case algorithms.Log:
		s := logState(&e)
		return []algorithms.Field{one("count", s.Count), one("capacity", int64(len(s.Ring))),
			{Name: "entries_ns", List: s.Entries(make([]int64, 0, s.Count))}}
	case algorithms.Override:
		kind, l := algorithms.OverrideOf(overrideWords(&e))
		return []algorithms.Field{one("kind", int64(kind)), one("algo", int64(l.Algo)), one("count", l.Count),
			one("period_ns", l.Period)}
	case algorithms.Concurrency:
		return []algorithms.Field{{Name: "leases", List: append(make([]int64, 0, len(e.Ext)), e.Ext...), Pairs: true}}
	default:
		return nil
	}
}
