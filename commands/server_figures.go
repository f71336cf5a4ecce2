package commands

import (
	"runtime/metrics"

	"github.com/sluice-rl/sluice/compat"
	"github.com/sluice-rl/sluice/internal/figure"
	"github.com/sluice-rl/sluice/server"
)

// The server's own figures beyond the key space's (which are the store's
// table): one row each, printed by INFO after its section's other fields
// and exported by the metrics endpoint when they have a metric.

// serverReading is what the rows read, taken at one moment.
type serverReading struct {
	ts       server.Stats
	heap     int64 // used_memory: the Go heap's objects
	peak     int64
	rss      int64
	keyspace int64 // the key space's bytes (off the Go heap)
}

// serverFigures are the rows. Redis's used_memory holds its data set; sluice's
// key space lives outside the Go heap, so the fragmentation figures compare
// the RSS with the heap and the key space together.
var serverFigures = []figure.Row[*serverReading]{
	{Desc: figure.Desc{Name: "used_memory_peak", In: figure.Memory},
		Read: func(r *serverReading) figure.Value { return figure.Int(r.peak) }},
	{Desc: figure.Desc{Name: "mem_fragmentation_ratio", In: figure.Memory},
		Read: func(r *serverReading) figure.Value {
			if used := r.heap + r.keyspace; used > 0 {
				return figure.Ratio(float64(r.rss) / float64(used))
			}
			return figure.Ratio(0)
		}},
	{Desc: figure.Desc{Name: "mem_fragmentation_bytes", In: figure.Memory},
		Read: func(r *serverReading) figure.Value { return figure.Int(r.rss - r.heap - r.keyspace) }},
	{Desc: figure.Desc{Name: "number_of_cached_scripts", In: figure.Memory},
		Read: func(*serverReading) figure.Value { return figure.Int(int64(len(compat.Known.Scripts()))) }},
	{Desc: figure.Desc{Name: "total_reads_processed", In: figure.Stats, Kind: figure.Counter, Metric: "reads_total",
		Help: "Reads from clients' connections that brought bytes."},
		Read: func(r *serverReading) figure.Value { return figure.Int(r.ts.Reads) }},
	{Desc: figure.Desc{Name: "total_writes_processed", In: figure.Stats, Kind: figure.Counter, Metric: "writes_total",
		Help: "Writes to clients' connections that sent bytes."},
		Read: func(r *serverReading) figure.Value { return figure.Int(r.ts.Writes) }},
}

// serverFiguresNow reads the rows, with the key space's figures ks (nil
// without a StatsReporter).
func (h *Handler) serverFiguresNow(ks []figure.Figure) []figure.Figure {
	r := serverReading{ts: h.transportStats(), heap: heapObjects(), rss: rss(),
		keyspace: figure.Find(ks, "keyspace_used_memory")}
	r.peak = h.notePeak(r.heap)
	return figure.Read(serverFigures, &r)
}

// serverSection returns the server's figures that print in section.
func (h *Handler) serverSection(section figure.Section) []Param {
	var ks []figure.Figure
	if r := h.cfg.Stats; r != nil && section == figure.Memory {
		ks = r.KeyspaceFigures()
	}
	return params(h.serverFiguresNow(ks), section)
}

// params returns the INFO lines of the figures of fs that print in section.
func params(fs []figure.Figure, section figure.Section) []Param {
	var out []Param
	for _, f := range fs {
		if f.In&section != 0 {
			out = append(out, Param{f.Name, f.Text})
		}
	}
	return out
}

// notePeak records heap as a used_memory sample and returns the largest
// seen: at every INFO, scrape and sweep tick (ten a second).
func (h *Handler) notePeak(heap int64) int64 {
	for {
		p := h.memPeak.Load()
		if heap <= p {
			return p
		}
		if h.memPeak.CompareAndSwap(p, heap) {
			return heap
		}
	}
}

// heapObjects reads used_memory (the Go heap's objects' bytes) without
// stopping the world.
func heapObjects() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}
