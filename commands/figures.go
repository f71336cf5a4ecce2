package commands

import (
	"github.com/sluice-rl/sluice/internal/figure"
	"github.com/sluice-rl/sluice/server"
)

// Figures are everything INFO reports, typed, for the metrics endpoint:
// read at one moment from the transport, the sessions, the key space, the
// persister and the cluster. Any goroutine.
type Figures struct {
	Transport server.Stats
	// Commands run, error replies, and decisions, over every session.
	Commands, Errors, Allowed, Denied int64
	Keyspace                          []figure.Figure   // nil without a StatsReporter
	Server                            []figure.Figure   // the server's own rows (server_figures.go)
	Leases                            []figure.Figure   // a lease tier's (LeaseReporter), else nil
	Persistence                       *PersistenceStats // nil without a Persister (a replicated node)
	AppendOnly                        *AppendOnlyStats  // nil with the append-only log off
	// WritesRefused: changes are refused with MISCONF now (durable.go).
	WritesRefused bool
	Replication   [][2]string // INFO replication's fields in a group, else nil
}

// Figures returns the server's figures at this moment.
func (h *Handler) Figures() Figures {
	t := h.totals(nil)
	f := Figures{Transport: h.transportStats(), Commands: t.cmds, Errors: t.errors, Allowed: t.allowed, Denied: t.denied}
	if r := h.cfg.Stats; r != nil {
		f.Keyspace = r.KeyspaceFigures()
	}
	f.Server = h.serverFiguresNow(f.Keyspace)
	if lr, ok := h.ks.(LeaseReporter); ok {
		f.Leases = lr.LeaseFigures()
	}
	if p := h.cfg.Persister; p != nil {
		ps := p.PersistenceStats()
		f.Persistence = &ps
	}
	if ao := h.cfg.AppendOnly; ao != nil {
		as := ao.AppendOnlyStats()
		f.AppendOnly = &as
	}
	f.WritesRefused = h.writeRefusal() != nil
	if c := h.cfg.Cluster; c != nil {
		f.Replication = c.InfoReplication()
	}
	return f
}
