package process

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"time"

	"github.com/sluice-rl/sluice/cluster"
	"github.com/sluice-rl/sluice/commands"
	"github.com/sluice-rl/sluice/metrics"
)

// The Prometheus endpoint (--metrics-bind): started before the state
// loads, so that /healthz answers at once and /readyz says "not ready"
// until the commands can decide.

// observer is the running metrics endpoint; a nil one does nothing.
type observer struct {
	srv  *metrics.Server
	log  *slog.Logger
	addr string // the address it listens on
}

// errNotServing is /readyz's answer once the server stops.
var errNotServing = errors.New("shutting down")

// startMetrics listens on --metrics-bind and serves the endpoint; it
// returns a nil observer without --metrics-bind.
func startMetrics(log *slog.Logger, cfg Options) (*observer, error) {
	if cfg.metricsBind == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", cfg.metricsBind)
	if err != nil {
		return nil, err
	}
	if host, _, _ := net.SplitHostPort(cfg.metricsBind); !isLoopback(host) {
		log.Warn("the metrics endpoint listens on " + host + ": anyone who can reach it can read the server's figures")
	}
	o := &observer{srv: metrics.NewServer(), log: log, addr: ln.Addr().String()}
	go func() {
		if err := o.srv.Serve(ln); err != nil {
			log.Error("the metrics endpoint failed", "err", err)
		}
	}()
	log.Info("metrics endpoint listening", "url", "http://"+ln.Addr().String()+"/metrics")
	return o, nil
}

// attach adds the commands' figures and makes /readyz answer: ready on a
// single node, and in a group while the node knows a leader and has
// applied the log (metrics.GroupReady).
func (o *observer) attach(cmds *commands.Handler, node *cluster.Node) error {
	if o == nil {
		return nil
	}
	if err := o.srv.Attach(cmds); err != nil {
		return err
	}
	if node == nil {
		o.srv.SetReady(func() error { return nil })
		return nil
	}
	o.srv.SetReady(func() error { return metrics.GroupReady(node.InfoReplication()) })
	return o.srv.AttachRaft(func() metrics.RaftEvents { return raftEvents(node.Metrics()) })
}

// raftEvents converts a node's Raft event counts for the metrics endpoint.
func raftEvents(m cluster.Metrics) metrics.RaftEvents {
	e := metrics.RaftEvents{LeaderChanges: m.LeaderChanges, Forwarded: m.Forwarded, ForwardedOps: m.ForwardedOps,
		ApplySum: m.ApplySum.Seconds(), ApplyBounds: make([]float64, cluster.ApplyBuckets),
		ApplyCounts: make([]uint64, cluster.ApplyBuckets+1)}
	for k := range e.ApplyBounds {
		e.ApplyBounds[k] = cluster.ApplyBound(k).Seconds()
	}
	for k, n := range m.Apply {
		e.ApplyCounts[k] = uint64(n)
	}
	return e
}

// stop makes /readyz answer "not ready" and closes the endpoint.
func (o *observer) stop() {
	if o == nil {
		return
	}
	o.srv.SetReady(func() error { return errNotServing })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := o.srv.Shutdown(ctx); err != nil {
		o.log.Warn("the metrics endpoint did not stop in time", "err", err)
	}
}
