package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// A group member's Raft events, beyond the state INFO replication gives
// (collector.go's sluice_raft_*): leader changes, forwarded submissions,
// and the apply latency of the entries it wrote as leader.

// RaftEvents are a group member's Raft event counts, read at each scrape.
type RaftEvents struct {
	LeaderChanges int64 // leaders the node saw elected or lost
	Forwarded     int64 // submissions forwarded to the leader (per client batch and attempt)
	ForwardedOps  int64 // the operations in them
	// ApplyBounds are the apply-latency buckets' upper bounds in seconds,
	// ascending; ApplyCounts the entries per bucket (not cumulative), one
	// more than the bounds (the last: above every bound); ApplySum their
	// total time in seconds.
	ApplyBounds []float64
	ApplyCounts []uint64
	ApplySum    float64
}

var (
	dRaftLeaderChanges = desc("raft_leader_changes_total", "Leader changes this node saw (a leader elected, or lost).")
	dRaftForwarded     = desc("raft_forwarded_submissions_total", "Client batches this follower forwarded to the leader, retries included.")
	dRaftForwardedOps  = desc("raft_forwarded_operations_total", "Operations (decisions, resets) in the forwarded batches.")
	dRaftApply         = desc("raft_apply_duration_seconds", "Time from raft.Apply to applied of the log entries this node wrote as leader.")
)

// raftCollector collects a member's RaftEvents.
type raftCollector struct{ read func() RaftEvents }

func (c raftCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{dRaftLeaderChanges, dRaftForwarded, dRaftForwardedOps, dRaftApply} {
		ch <- d
	}
}

func (c raftCollector) Collect(ch chan<- prometheus.Metric) {
	e := c.read()
	ch <- prometheus.MustNewConstMetric(dRaftLeaderChanges, prometheus.CounterValue, float64(e.LeaderChanges))
	ch <- prometheus.MustNewConstMetric(dRaftForwarded, prometheus.CounterValue, float64(e.Forwarded))
	ch <- prometheus.MustNewConstMetric(dRaftForwardedOps, prometheus.CounterValue, float64(e.ForwardedOps))
	buckets := make(map[float64]uint64, len(e.ApplyBounds))
	var cum uint64
	for i, b := range e.ApplyBounds {
		cum += e.ApplyCounts[i]
		buckets[b] = cum
	}
	for _, n := range e.ApplyCounts[len(e.ApplyBounds):] {
		cum += n
	}
	ch <- prometheus.MustNewConstHistogram(dRaftApply, cum, e.ApplySum, buckets)
}

// AttachRaft registers the collector of a group member's Raft events,
// which read returns at each scrape (any goroutine).
func (s *Server) AttachRaft(read func() RaftEvents) error {
	return s.reg.Register(raftCollector{read: read})
}
