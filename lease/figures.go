package lease

import "github.com/sluice-rl/sluice/internal/figure"

// figures are INFO leases' fields and their metrics, one row each: the
// stock and the batch sizes, the refills (RL.TAKE calls), returns, lapsed
// units, upstream errors, and the decisions by how they were made.
var figures = []figure.Row[*Stats]{
	{Desc: figure.Desc{Name: "upstream", In: figure.Leases},
		Read: func(s *Stats) figure.Value { return figure.Text(s.Upstream) }},
	{Desc: figure.Desc{Name: "upstream_up", In: figure.Leases, Kind: figure.Gauge, Metric: "lease_upstream_up",
		Help: "1 while the lease tier's upstream answers, 0 while it counts as unreachable."},
		Read: func(s *Stats) figure.Value { return figure.Int(b2i(s.UpstreamUp)) }},
	{Desc: figure.Desc{Name: "upstream_fallback", In: figure.Leases},
		Read: func(s *Stats) figure.Value { return figure.Text(s.Fallback) }},
	{Desc: figure.Desc{Name: "leased_keys", In: figure.Leases, Kind: figure.Gauge, Metric: "lease_keys",
		Help: "Keys the lease tier holds a lease on."},
		Read: func(s *Stats) figure.Value { return figure.Int(int64(s.Keys)) }},
	{Desc: figure.Desc{Name: "lease_hot_keys", In: figure.Leases, Kind: figure.Gauge, Metric: "lease_hot_keys",
		Help: "Keys --upstream-lease-hot chose to lease now (0 without it)."},
		Read: func(s *Stats) figure.Value { return figure.Int(int64(s.HotKeys)) }},
	{Desc: figure.Desc{Name: "lease_stock", In: figure.Leases, Kind: figure.Gauge, Metric: "lease_stock_units",
		Help: "Units taken from the upstream and not yet spent, over every leased key."},
		Read: func(s *Stats) figure.Value { return figure.Int(s.Stock) }},
	{Desc: figure.Desc{Name: "lease_last_batch", In: figure.Leases, Kind: figure.Gauge, Metric: "lease_last_batch_units",
		Help: "The batch L the last granted take asked for."},
		Read: func(s *Stats) figure.Value { return figure.Int(s.LastBatch) }},
	{Desc: figure.Desc{Name: "lease_refills", In: figure.Leases, Kind: figure.Counter, Metric: "lease_refills_total",
		Help: "Takes (RL.TAKE) the upstream granted units for."},
		Read: func(s *Stats) figure.Value { return figure.Int(s.Refills) }},
	{Desc: figure.Desc{Name: "lease_refill_units", In: figure.Leases, Kind: figure.Counter, Metric: "lease_refilled_units_total",
		Help: "Units the upstream granted; over sluice_lease_refills_total, the mean lease size."},
		Read: func(s *Stats) figure.Value { return figure.Int(s.RefillUnits) }},
	{Desc: figure.Desc{Name: "lease_returns", In: figure.Leases, Kind: figure.Counter, Metric: "lease_returns_total",
		Help: "Refunds of unspent units to the upstream (a lease's end, shutdown)."},
		Read: func(s *Stats) figure.Value { return figure.Int(s.Returns) }},
	{Desc: figure.Desc{Name: "lease_returned_units", In: figure.Leases, Kind: figure.Counter, Metric: "lease_returned_units_total",
		Help: "Units given back to the upstream."},
		Read: func(s *Stats) figure.Value { return figure.Int(s.ReturnedUnits) }},
	{Desc: figure.Desc{Name: "lease_lapsed_units", In: figure.Leases, Kind: figure.Counter, Metric: "lease_lapsed_units_total",
		Help: "Units neither spent nor given back: a fixed window's at its end, or a refund that failed."},
		Read: func(s *Stats) figure.Value { return figure.Int(s.LapsedUnits) }},
	{Desc: figure.Desc{Name: "lease_upstream_errors", In: figure.Leases, Kind: figure.Counter, Metric: "lease_upstream_errors_total",
		Help: "Upstream round trips that failed (refused, timed out, broken, or the upstream refused the tier's AUTH)."},
		Read: func(s *Stats) figure.Value { return figure.Int(s.UpstreamErrors) }},
	{Desc: figure.Desc{Name: "lease_local_decisions", In: figure.Leases, Kind: figure.Counter, Metric: "lease_local_decisions_total",
		Help: "Decisions admitted from leased stock."},
		Read: func(s *Stats) figure.Value { return figure.Int(s.LocalDecisions) }},
	{Desc: figure.Desc{Name: "lease_sync_takes", In: figure.Leases, Kind: figure.Counter, Metric: "lease_sync_takes_total",
		Help: "Takes a decision waited for (a key's first)."},
		Read: func(s *Stats) figure.Value { return figure.Int(s.SyncTakes) }},
	{Desc: figure.Desc{Name: "lease_fallback_decisions", In: figure.Leases, Kind: figure.Counter, Metric: "lease_fallback_decisions_total",
		Help: "Decisions made by --upstream-fallback while the upstream was unreachable and the stock spent."},
		Read: func(s *Stats) figure.Value { return figure.Int(s.FallbackDecisions) }},
	{Desc: figure.Desc{Name: "lease_forwarded", In: figure.Leases, Kind: figure.Counter, Metric: "lease_forwarded_total",
		Help: "Requests forwarded to the upstream (keys not leased, and the commands a tier passes on)."},
		Read: func(s *Stats) figure.Value { return figure.Int(s.Forwarded) }},
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// LeaseFigures returns the tier's figures now: INFO leases prints them,
// the metrics endpoint exports those with a metric. Any goroutine.
func (t *Tier) LeaseFigures() []figure.Figure {
	s := t.Stats()
	return figure.Read(figures, &s)
}
