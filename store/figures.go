package store

import (
	"github.com/sluice-rl/sluice/internal/figure"
	"github.com/sluice-rl/sluice/shard"
)

// reading is the store's figures read at one moment, for its table.
type reading struct {
	shard.Stats
	limit  int64
	policy Policy
	sweep  SweepTotals
	shards int
	saved  int64 // Changes as of the last save
}

const (
	inMemory      = figure.Memory
	inStats       = figure.Stats
	inPersistence = figure.Persistence
)

// figures is the key space's figures: a new one is a row here (and a line
// in docs/metrics.md if it has a metric). INFO prints them in this order
// after its own fields of each section.
var figures = []figure.Row[*reading]{
	{Desc: figure.Desc{Name: "keyspace_used_memory", In: inMemory, Kind: figure.Gauge, Metric: "keyspace_bytes",
		Help: "Bytes the key space holds (arenas and index, free space included)."},
		Read: func(r *reading) figure.Value { return figure.Int(r.Used()) }},
	{Desc: figure.Desc{Name: "keyspace_arena_bytes", In: inMemory},
		Read: func(r *reading) figure.Value { return figure.Int(r.ArenaBytes) }},
	{Desc: figure.Desc{Name: "keyspace_index_bytes", In: inMemory},
		Read: func(r *reading) figure.Value { return figure.Int(r.IndexBytes) }},
	{Desc: figure.Desc{Name: "keyspace_free_bytes", In: inMemory},
		Read: func(r *reading) figure.Value { return figure.Int(r.FreeBytes) }},
	{Desc: figure.Desc{Name: "keyspace_keys", In: inMemory, Kind: figure.Gauge, Metric: "keys",
		Help: "Keys in the key space."},
		Read: func(r *reading) figure.Value { return figure.Int(r.Keys) }},
	{Desc: figure.Desc{Name: "maxmemory", In: inMemory, Kind: figure.Gauge, Metric: "maxmemory_bytes",
		Help: "The key space's memory limit (0: none)."},
		Read: func(r *reading) figure.Value { return figure.Int(r.limit) }},
	{Desc: figure.Desc{Name: "maxmemory_policy", In: inMemory},
		Read: func(r *reading) figure.Value { return figure.Text(r.policy.String()) }},
	{Desc: figure.Desc{Name: "expired_keys", In: inStats, Kind: figure.Counter, Metric: "expired_keys_total",
		Help: "Keys removed at expiry."},
		Read: func(r *reading) figure.Value { return figure.Int(r.ExpiredKeys) }},
	{Desc: figure.Desc{Name: "evicted_keys", In: inMemory | inStats, Kind: figure.Counter, Metric: "evicted_keys_total",
		Help: "Keys evicted at maxmemory."},
		Read: func(r *reading) figure.Value { return figure.Int(r.Evicted) }},
	{Desc: figure.Desc{Name: "oom_refused_keys", In: inMemory | inStats, Kind: figure.Counter, Metric: "oom_refused_keys_total",
		Help: "New keys refused at maxmemory."},
		Read: func(r *reading) figure.Value { return figure.Int(r.Refused) }},
	{Desc: figure.Desc{Name: "sweep_examined", In: inStats, Kind: figure.Counter, Metric: "sweep_examined_keys_total",
		Help: "Keys the active expiry examined."},
		Read: func(r *reading) figure.Value { return figure.Int(r.SweepSteps) }},
	{Desc: figure.Desc{Name: "sweep_removed", In: inStats, Kind: figure.Counter, Metric: "sweep_removed_keys_total",
		Help: "Keys the active expiry removed."},
		Read: func(r *reading) figure.Value { return figure.Int(r.SweepRemoved) }},
	{Desc: figure.Desc{Name: "sweep_runs", In: inStats},
		Read: func(r *reading) figure.Value { return figure.Int(r.sweep.Runs) }},
	{Desc: figure.Desc{Name: "sweep_rounds", In: inStats},
		Read: func(r *reading) figure.Value { return figure.Int(r.sweep.Rounds) }},
	{Desc: figure.Desc{Name: "sweep_time_us", In: inStats, Kind: figure.Counter, Metric: "sweep_duration_seconds_total",
		Help: "Time the active expiry ran."},
		Read: func(r *reading) figure.Value { return figure.Micros(r.sweep.Time) }},
	{Desc: figure.Desc{Name: "sweep_last_us", In: inStats},
		Read: func(r *reading) figure.Value { return figure.Micros(r.sweep.Last) }},
	{Desc: figure.Desc{Name: "sweep_max_us", In: inStats},
		Read: func(r *reading) figure.Value { return figure.Micros(r.sweep.Most) }},
	{Desc: figure.Desc{Name: "keyspace_hits", In: inStats, Kind: figure.Counter, Metric: "keyspace_hits_total",
		Help: "Key lookups (decisions, GET, TTL …) that found the key's state."},
		Read: func(r *reading) figure.Value { return figure.Int(r.Hits) }},
	{Desc: figure.Desc{Name: "keyspace_misses", In: inStats, Kind: figure.Counter, Metric: "keyspace_misses_total",
		Help: "Key lookups that found no state (a decision on a new key, GET of an absent one …)."},
		Read: func(r *reading) figure.Value { return figure.Int(r.Misses) }},
	{Desc: figure.Desc{Name: "rdb_changes_since_last_save", In: inPersistence},
		Read: func(r *reading) figure.Value { return figure.Int(r.Changes - r.saved) }},
	{Desc: figure.Desc{Name: "shards", In: inStats},
		Read: func(r *reading) figure.Value { return figure.Int(int64(r.shards)) }},
}

// KeyspaceFigures returns the key space's figures now (the table above),
// for INFO memory and stats, MEMORY STATS and the metrics endpoint. Any
// goroutine.
func (st *Store) KeyspaceFigures() []figure.Figure {
	r := reading{saved: st.saved.Load(), Stats: st.Stats(), sweep: st.SweepTotals(), shards: st.Shards()}
	r.limit, r.policy = st.MaxMemory()
	return figure.Read(figures, &r)
}
