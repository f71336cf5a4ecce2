package commands

import (
	"sync/atomic"
	"time"
)

// Reading the per-command figures (cmdstats.go): the stripes summed, for
// INFO and the metrics endpoint. Any goroutine; the figures of batches in
// hand are not in them yet.

// CommandStat is one command's figures since the server started.
type CommandStat struct {
	Name   string // lower case, as COMMAND names it
	Family string // the family its latency is reported under
	// Calls run; Rejected before running (arity, authentication); Failed:
	// ran and answered an error.
	Calls, Rejected, Failed int64
	// Allowed and Denied: the decisions among its calls.
	Allowed, Denied int64
	Time            time.Duration // its share of its batches' time
	Latency         Histogram
}

// Histogram is a latency histogram.
type Histogram struct {
	// Counts holds the observations in each bucket (not cumulative): the
	// bucket k holds those up to LatencyBound(k), the last one the rest.
	Counts [latBuckets + 1]int64
	Sum    time.Duration // of the observed times
}

// LatencyBuckets is the number of bounded latency buckets, and
// LatencyPerDoubling the number of them per doubling of the bound.
const (
	LatencyBuckets     = latBuckets
	LatencyPerDoubling = latPerDoubling
)

// LatencyBound returns the upper bound of bucket k < LatencyBuckets.
func LatencyBound(k int) time.Duration { return time.Duration(latBounds[k]) }

// Count returns the number of observations.
func (l *Histogram) Count() int64 {
	var n int64
	for _, c := range l.Counts {
		n += c
	}
	return n
}

// Add adds o's observations to l.
func (l *Histogram) Add(o *Histogram) {
	for k := range l.Counts {
		l.Counts[k] += o.Counts[k]
	}
	l.Sum += o.Sum
}

// Quantile returns the upper bound of the bucket that holds the q-th
// quantile (0 < q ≤ 1): at most 19% above the true value, and never below
// it. It returns 0 with no observations and the last bound for those above
// it.
func (l *Histogram) Quantile(q float64) time.Duration {
	n := l.Count()
	if n == 0 {
		return 0
	}
	rank := int64(q*float64(n) + 0.5)
	rank = max(rank, 1)
	var seen int64
	for k, c := range l.Counts {
		if seen += c; seen >= rank {
			return time.Duration(latBounds[min(k, latBuckets-1)])
		}
	}
	return time.Duration(latBounds[latBuckets-1])
}

// CommandStats returns the figures of every command called or rejected
// since the start (or the last CONFIG RESETSTAT), in registration order.
func (h *Handler) CommandStats() []CommandStat {
	var out []CommandStat
	for i := range statList {
		cs := h.commandStat(i)
		if cs.Calls+cs.Rejected == 0 {
			continue
		}
		out = append(out, cs)
	}
	return out
}

// commandStat sums command i's figures over the stripes.
func (h *Handler) commandStat(i int) CommandStat {
	cmd := statList[i]
	cs := CommandStat{Name: cmd.name, Family: families[familyOf(cmd)]}
	for j := range h.stats.stripes {
		c := &h.stats.stripes[j].cmds[i]
		cs.Rejected += c.rejected.Load()
		cs.Failed += c.failed.Load()
		cs.Allowed += c.allowed.Load()
		cs.Denied += c.denied.Load()
		cs.Time += time.Duration(c.nanos.Load())
		for k := range cs.Latency.Counts {
			cs.Latency.Counts[k] += c.lat[k].Load()
		}
		cs.Latency.Sum += time.Duration(c.latSum.Load())
	}
	cs.Calls = cs.Latency.Count()
	return cs
}

// Families returns the command families latencies are reported under.
func Families() []string { return append([]string(nil), families...) }

// FamilyLatency returns each family's latency histogram, the sum of its
// commands', in the order of Families.
func (h *Handler) FamilyLatency() []Histogram {
	out := make([]Histogram, len(families))
	for i, cmd := range statList {
		cs := h.commandStat(i)
		out[familyOf(cmd)].Add(&cs.Latency)
	}
	return out
}

// resetStats zeroes the per-command figures, the error replies by code and
// the commands, errors and decisions totals (CONFIG RESETSTAT). Counts
// that batches in hand add while it runs may survive it, as a batch's
// counts reach the stripes at its end.
func (h *Handler) resetStats() {
	for j := range h.stats.stripes {
		for i := range h.stats.stripes[j].cmds {
			c := &h.stats.stripes[j].cmds[i]
			for _, v := range []*atomic.Int64{&c.rejected, &c.failed, &c.allowed, &c.denied, &c.nanos, &c.latSum} {
				v.Store(0)
			}
			for k := range c.lat {
				c.lat[k].Store(0)
			}
		}
	}
	h.errs.reset()
	zero := func(t *totals) {
		t.cmds.Store(0)
		t.errors.Store(0)
		t.allowed.Store(0)
		t.denied.Store(0)
	}
	zero(&h.ended)
	h.conns(nil, func(s *session) { zero(&s.totals) })
}
