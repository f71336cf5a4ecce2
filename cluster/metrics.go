package cluster

import (
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// The node's Raft figures beyond INFO replication's, for the metrics
// endpoint: leader changes this node saw, submissions it forwarded to the
// leader, and how long its log entries took from raft.Apply to applied
// (on the leader). Each is counted once per event (an election, a
// forwarded batch, a log entry), never per decision.

// ApplyBuckets is the number of apply-latency buckets: 2^k µs for
// k = 0 … ApplyBuckets-1 (1 µs … 8.4 s), then +Inf.
const ApplyBuckets = 24

// Metrics are a node's Raft event counts.
type Metrics struct {
	LeaderChanges int64 // leaders this node saw elected (or lost: an empty leader counts)
	Forwarded     int64 // submissions this node forwarded to the leader (one per client batch and attempt)
	ForwardedOps  int64 // the operations in them
	// Apply latency of this node's log entries as leader: counts per
	// bucket (the last one +Inf), their number and their sum.
	Apply      [ApplyBuckets + 1]int64
	ApplyCount int64
	ApplySum   time.Duration
}

// ApplyBound returns the upper bound of apply bucket k.
func ApplyBound(k int) time.Duration { return time.Microsecond << k }

// nodeMetrics are the counters behind Metrics. Any goroutine.
type nodeMetrics struct {
	leaderChanges, forwarded, forwardedOps atomic.Int64
	apply                                  [ApplyBuckets + 1]atomic.Int64
	applySum                               atomic.Int64
}

// observeApply counts one entry's apply time.
func (m *nodeMetrics) observeApply(d time.Duration) {
	us := uint64((max(d, 0) + time.Microsecond - 1) / time.Microsecond) // rounded up
	k := 0
	if us > 1 {
		k = bits.Len64(us - 1) // the first k with 2^k µs >= d
	}
	m.apply[min(k, ApplyBuckets)].Add(1)
	m.applySum.Add(int64(d))
}

// Metrics returns the node's Raft event counts. Any goroutine.
func (n *Node) Metrics() Metrics {
	m := &n.batcher.metrics
	out := Metrics{LeaderChanges: m.leaderChanges.Load(), Forwarded: m.forwarded.Load(),
		ForwardedOps: m.forwardedOps.Load(), ApplySum: time.Duration(m.applySum.Load())}
	for k := range out.Apply {
		out.Apply[k] = m.apply[k].Load()
		out.ApplyCount += out.Apply[k]
	}
	return out
}

// watchLeaders counts the leader changes raft reports, until the node
// stops.
func (n *Node) watchLeaders(ch <-chan raft.Observation, obs *raft.Observer) {
	defer n.stopped.Done()
	defer n.raft.DeregisterObserver(obs)
	var last raft.ServerID
	for {
		select {
		case <-n.stop:
			return
		case o := <-ch:
			if lo, ok := o.Data.(raft.LeaderObservation); ok && lo.LeaderID != last {
				last = lo.LeaderID
				n.batcher.metrics.leaderChanges.Add(1)
			}
		}
	}
}

// startLeaderWatch registers watchLeaders's observer.
func (n *Node) startLeaderWatch() {
	ch := make(chan raft.Observation, 16)
	obs := raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	n.raft.RegisterObserver(obs)
	n.stopped.Add(1)
	go n.watchLeaders(ch, obs)
}
