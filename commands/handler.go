package commands

import (
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/server"
)

// Handler runs the commands of the connections a server.Server serves
// (it is a server.Handler): it looks each command up, checks it, and runs
// it against the Keyspace with the batch's instant. Decisions are deferred
// to the end of the batch and carried out together (deferred.go).
//
// Concurrency: the server calls it for many connections at once; each
// connection's calls come one at a time, and its session is its own.
type Handler struct {
	cfg   Config
	ks    Keyspace
	ovr   OverrideHolder // ks, if it is one; else nil
	clock *Clock
	// waits says that commands wait for something else (a replicated
	// node's Raft log); async is the keyspace's way of deciding without
	// waiting, if it has one. On an event loop, a waiting command is
	// handed to a goroutine (server.Conn.HandOff) and decisions are
	// suspended until their entry commits (server.Conn.Suspend).
	waits bool
	async AsyncDecider
	log   *slog.Logger
	start time.Time
	// memPeak is the largest used_memory sampled (INFO used_memory_peak).
	memPeak atomic.Int64
	acl     aclState            // users and the ACL LOG (acl_wiring.go)
	table   map[string]*command // with rename-command, the renamed table (rename.go); nil: the global one

	transport atomic.Pointer[transportRef] // set by Attach
	ended     totals                       // the counters of sessions that have closed
	stats     *cmdStats                    // per-command figures (cmdstats.go)
	errs      errStats                     // error replies by code (errstats.go)
	slowlog   slowlog                      // SLOWLOG (slowlog.go)
	top       topKeys                      // the heaviest keys (topkeys.go, RL.TOP)
	polStats  policyStats                  // decisions by policy (policystats.go)
	ttls      ttlSampler                   // INFO keyspace's avg_ttl sample (keyspace_sample.go)
	mon       monitors                     // the connections that ran MONITOR (cmd_monitor.go)
	pause     pauseState                   // CLIENT PAUSE (client_pause.go)

	// shadowDenied counts the decisions of shadow policies that would
	// have been denied (INFO policies).
	shadowDenied atomic.Int64
}

// Transport is what the commands need of the network layer that serves
// them: the other connections (CLIENT LIST, CLIENT KILL) and its figures
// (INFO). *server.Server implements it.
type Transport interface {
	// Conns calls fn for every connection being served.
	Conns(fn func(c *server.Conn))
	// Kill closes the connections with this id once their batch in hand is
	// done, and returns how many there were.
	Kill(id int64) int
	// Stats returns the transport's figures.
	Stats() server.Stats
}

type transportRef struct{ Transport }

// New returns a Handler for ks that reads time from clock. It refuses a
// Config that Validate refuses.
func New(cfg Config, ks Keyspace, clock *Clock) (*Handler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Policies == nil {
		cfg.Policies = policy.NewRegistry()
	}
	users, err := newACL(&cfg)
	if err != nil {
		return nil, err
	}
	table, err := renamedTable(cfg.Renames)
	if err != nil {
		return nil, err
	}
	h := &Handler{cfg: cfg, ks: ks, clock: clock, log: cfg.Logger, start: time.Now(), acl: users, table: table, stats: newCmdStats()}
	if h.waits = cfg.Cluster != nil; h.waits {
		h.async, _ = ks.(AsyncDecider)
	}
	h.ovr, _ = ks.(OverrideHolder)
	users.users.OnRetire(h.closeRetired)
	h.slowlog.slower.Store(cfg.SlowlogSlowerThan)
	h.slowlog.maxLen.Store(cfg.SlowlogMaxLen)
	h.top.k = cfg.TopKeys
	return h, nil
}

// Attach tells h the transport that serves it, for CLIENT LIST, CLIENT
// KILL and INFO. Until then (and in tests that run a Handler on bytes
// alone) those see only the connection asking.
func (h *Handler) Attach(t Transport) { h.transport.Store(&transportRef{t}) }

// Clock returns the clock the Handler and its transport read.
func (h *Handler) Clock() *Clock { return h.clock }

// Open starts a connection's session.
func (h *Handler) Open(c *server.Conn) {
	s := newSession(h, c)
	s.refused = h.cfg.ProtectedMode && !c.Loopback() && !h.acl.users.NeedsAuth()
	c.SetSession(s)
	c.SetUnauthenticated(!s.authed)
	c.SetSessionBytes(s.footprint())
}

// Command runs one command of c's batch.
func (h *Handler) Command(c *server.Conn, args [][]byte) {
	c.Session().(*session).exec(args)
}

// EndBatch carries out the batch's deferred work and publishes its
// counters.
func (h *Handler) EndBatch(c *server.Conn) {
	c.Session().(*session).endBatch()
}

// Close adds the session's counters to the totals of sessions that ended.
func (h *Handler) Close(c *server.Conn) {
	s, ok := c.Session().(*session)
	if !ok {
		return
	}
	s.flushStats()
	s.publish()
	h.ended.add(&s.totals)
	if s.monitoring {
		h.stopMonitoring(s)
	}
}

// conns calls fn for every session the transport serves; without a
// transport, for self alone.
func (h *Handler) conns(self *session, fn func(s *session)) {
	t := h.transport.Load()
	if t == nil {
		if self != nil {
			fn(self)
		}
		return
	}
	t.Conns(func(c *server.Conn) {
		if s, ok := c.Session().(*session); ok {
			fn(s)
		}
	})
}

// transportStats returns the transport's figures, zero without one.
func (h *Handler) transportStats() server.Stats {
	if t := h.transport.Load(); t != nil {
		return t.Stats()
	}
	return server.Stats{}
}

// kill closes the connections with id; without a transport, only self can
// be found.
func (h *Handler) kill(self *session, id int64) int64 {
	if t := h.transport.Load(); t != nil {
		return int64(t.Kill(id))
	}
	if id == self.conn.ID() {
		return 1
	}
	return 0
}

// Sweep runs the keyspace's active expiry ten times a second, as Redis's hz
// 10 does, at the clock's instant, until stop is closed. One loop serves the whole server,
// whatever the number of listeners.
func (h *Handler) Sweep(stop <-chan struct{}) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			h.ks.Sweep(h.clock.Now())
			h.notePeak(heapObjects())
		}
	}
}
