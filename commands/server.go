package commands

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluice-rl/sluice/algorithms"
)

// Keyspace is what the commands need from the state behind them: the store
// on a single node, the Raft node in a replicated group. Every method takes
// the instant the edge read for the batch. Errors are reply errors with a
// Redis error code (WRONGTYPE, OOM, CLUSTERDOWN, TRYAGAIN …).
type Keyspace interface {
	// Decide carries out reqs in order and writes each outcome to the same
	// index of out.
	Decide(now int64, reqs []algorithms.Request, out []algorithms.Outcome)
	Delete(now int64, keys [][]byte) (int64, error)
	Exists(now int64, keys [][]byte) (int64, error)
	// Type returns the algorithm of key's state, None if absent.
	Type(now int64, key []byte) (algorithms.Algo, error)
	// TTL returns the time until key's state expires, or -1 if absent.
	TTL(now int64, key []byte) (int64, error)
	// Scan visits about count entries from cursor and returns the cursor to
	// continue from, 0 when done. It calls fn with no lock held; when fn
	// returns false it stops, and the cursor it returns resumes at that key.
	Scan(now int64, cursor uint64, count int, fn func(key []byte, algo algorithms.Algo) bool) (uint64, error)
	DBSize(now int64) (int64, error)
	Flush(now int64) error
	// Info returns key's stored state (Algo None if absent), for RL.INFO.
	Info(now int64, key []byte) (algorithms.KeyInfo, error)
}

// Sweeper is implemented by keyspaces that expire entries actively; the
// server calls Sweep with its clock a few times a second.
type Sweeper interface {
	Sweep(now int64)
}

// Config is the server's configuration. The zero value of a field means its
// default (see DefaultConfig).
type Config struct {
	Password         string
	MaxClients       int
	IdleTimeout      time.Duration // 0: never close idle clients
	Limits           ReaderLimits
	QueryBufferLimit int // most bytes buffered for one client's unfinished command
	// MaxMemoryClients is the most bytes all clients' buffers may hold
	// together (maxmemory-clients); past it the clients holding the most are
	// closed. Negative: no limit.
	MaxMemoryClients int64
	Debug            string // enable-debug-command: "no", "yes" or "local"
	Logger           *slog.Logger
	// Params are the resolved settings that CONFIG GET reports.
	Params []Param
	// Info adds lines to INFO's server section (shards, mode, config file).
	Info []Param
	// Cluster is the replicated node, nil on a single node.
	Cluster Cluster
	// Persister carries out SAVE and BGSAVE; nil refuses them.
	Persister Persister
	// Shutdowner carries out SHUTDOWN; nil refuses it.
	Shutdowner Shutdowner
	// LogMaxLimit is the largest limit RL.LOG and RL.ACQUIRE accept
	// (log-max-limit): their state holds one entry per unit or holder.
	LogMaxLimit int64
	// AllMaxLimits is the most limits one RL.ALL may name (all-max-limits),
	// and AllMaxLogUnits the most units its LOG limits may log together, n
	// times their number (all-max-log-units): a group holds the locks of
	// every shard it touches while it decides, and its scratch state grows
	// with its size.
	AllMaxLimits   int64
	AllMaxLogUnits int64
	// EventLoops is how many epoll loops serve the clients (Linux, and only
	// without Cluster: a replicated node's commands wait for Raft). 0 gives
	// every client its own goroutine; Server.EventLoops says what is in force.
	EventLoops int
}

// Persister writes the keyspace's snapshot: SAVE, BGSAVE and LASTSAVE.
// Errors are reply errors in Redis's words.
type Persister interface {
	Save() error
	BackgroundSave() error
	// LastSave returns the unix time of the last successful save.
	LastSave() int64
}

// Param is one name/value pair of configuration.
type Param struct{ Name, Value string }

// DefaultConfig returns the defaults: Redis's where they make sense for a
// server that stores no values.
func DefaultConfig() Config {
	return Config{
		MaxClients: 10000,
		Limits: ReaderLimits{
			MaxBulk:   1 << 20,
			MaxArgs:   1 << 20,
			MaxInline: 64 * 1024,
		},
		QueryBufferLimit: 8 << 20,
		// Redis has none by default; sluice has one, because its commands
		// are small and a few hundred connections each holding an
		// unfinished 8 MiB command must not exhaust the machine. 256 MiB
		// holds the first 16 KiB buffers of the default 10000 clients
		// (170 MB) with room for a dozen at the query buffer limit.
		MaxMemoryClients: 256 << 20,
		Debug:            "no",
		LogMaxLimit:      10000,
		AllMaxLimits:     10000,
		AllMaxLogUnits:   1_000_000,
	}
}

// errTooManyFiles is accept's error when the process is out of descriptors:
// a reason to back off and retry rather than stop serving.
var errTooManyFiles = syscall.EMFILE

// Server accepts Redis-protocol clients and runs their commands against a
// Keyspace. Each client is served by an event loop (Config.EventLoops) or
// by its own goroutine; either reads whatever bytes have arrived, runs
// every complete command in them with one clock read, and writes the
// replies once. A client that breaks the protocol or a
// limit gets an error and is closed; a panic while serving a client is
// recovered and closes that client only.
type Server struct {
	cfg   Config
	ks    Keyspace
	clock *Clock
	log   *slog.Logger
	start time.Time

	mu      sync.Mutex
	lns     []net.Listener
	clients map[int64]*Client
	closed  bool
	wg      sync.WaitGroup
	loops   []*eventLoop // started by the first Serve, stopped by Shutdown

	// The clients' footprints (client_memory.go): the total, changed under
	// mu and read by anyone, and the part of it held by clients chosen for
	// eviction and not yet closed, guarded by mu.
	clientMem   atomic.Int64
	evictingMem int64

	nextID atomic.Int64
	stats  serverStats
}

type serverStats struct {
	connections atomic.Int64 // accepted connections
	rejected    atomic.Int64 // refused at maxclients
	// Totals of clients that have left; INFO adds the live clients' own.
	commands       atomic.Int64
	errors         atomic.Int64
	allowed        atomic.Int64
	denied         atomic.Int64
	protoErrors    atomic.Int64
	panics         atomic.Int64
	evictedClients atomic.Int64 // closed for maxmemory-clients
	netIn          atomic.Int64
	netOut         atomic.Int64
}

// NewServer returns a server for ks that reads time from clock.
func NewServer(cfg Config, ks Keyspace, clock *Clock) *Server {
	def := DefaultConfig()
	if cfg.MaxClients <= 0 {
		cfg.MaxClients = def.MaxClients
	}
	if cfg.Limits.MaxBulk <= 0 {
		cfg.Limits.MaxBulk = def.Limits.MaxBulk
	}
	if cfg.Limits.MaxArgs <= 0 {
		cfg.Limits.MaxArgs = def.Limits.MaxArgs
	}
	if cfg.Limits.MaxInline <= 0 {
		cfg.Limits.MaxInline = def.Limits.MaxInline
	}
	if cfg.QueryBufferLimit <= 0 {
		cfg.QueryBufferLimit = def.QueryBufferLimit
	}
	if cfg.MaxMemoryClients == 0 {
		cfg.MaxMemoryClients = def.MaxMemoryClients
	}
	if cfg.Debug == "" {
		cfg.Debug = def.Debug
	}
	if cfg.LogMaxLimit <= 0 {
		cfg.LogMaxLimit = def.LogMaxLimit
	}
	if cfg.AllMaxLimits <= 0 {
		cfg.AllMaxLimits = def.AllMaxLimits
	}
	if cfg.AllMaxLogUnits <= 0 {
		cfg.AllMaxLogUnits = def.AllMaxLogUnits
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.EventLoops < 0 || cfg.Cluster != nil || !loopsSupported {
		cfg.EventLoops = 0
	}
	if idle := int64(cfg.MaxClients) * baseFootprint; cfg.MaxMemoryClients > 0 && idle > cfg.MaxMemoryClients {
		cfg.Logger.Warn("maxclients idle clients would hold more than maxmemory-clients: clients will be evicted before maxclients is reached",
			"maxclients", cfg.MaxClients, "idle_clients_memory", idle, "maxmemory_clients", cfg.MaxMemoryClients)
	}
	return &Server{
		cfg:     cfg,
		ks:      ks,
		clock:   clock,
		log:     cfg.Logger,
		start:   time.Now(),
		clients: make(map[int64]*Client),
	}
}

// EventLoops returns how many event loops serve the clients; 0 means a
// goroutine per client.
func (s *Server) EventLoops() int { return s.cfg.EventLoops }

// Clock returns the server's clock.
func (s *Server) Clock() *Clock { return s.clock }

// Serve accepts clients on ln until Shutdown. It returns nil after
// Shutdown and the accept error otherwise.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return net.ErrClosed
	}
	s.lns = append(s.lns, ln)
	if n := s.cfg.EventLoops; n > 0 && s.loops == nil {
		loops, err := startLoops(s, n)
		if err != nil {
			s.mu.Unlock()
			return err
		}
		s.loops = loops
	}
	s.mu.Unlock()

	stopSweep := make(chan struct{})
	defer close(stopSweep)
	if sw, ok := s.ks.(Sweeper); ok {
		go s.sweepLoop(sw, stopSweep)
	}

	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.isClosed() {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, errTooManyFiles) {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.log.Warn("accept failed; retrying", "err", err, "in", delay)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		s.accept(nc)
	}
}

func (s *Server) accept(nc net.Conn) {
	s.stats.connections.Add(1)
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	s.mu.Lock()
	if s.closed || len(s.clients) >= s.cfg.MaxClients {
		closed := s.closed
		s.mu.Unlock()
		if !closed {
			s.stats.rejected.Add(1)
			nc.SetWriteDeadline(time.Now().Add(time.Second))
			nc.Write([]byte("-" + string(errMaxClients) + "\r\n"))
		}
		nc.Close()
		return
	}
	c := newClient(s, nc, s.nextID.Add(1))
	if len(s.loops) > 0 {
		// Handed over under s.mu, so that Shutdown and CLIENT KILL find the
		// client either not yet listed or already queued on its loop.
		if fd, err := detach(nc); err == nil {
			c.conn, c.fd, c.listFD, c.loop = nil, fd, fd, s.loops[c.id%int64(len(s.loops))]
		} else {
			s.log.Warn("cannot hand the connection to an event loop; serving it from its own goroutine",
				"client", c.id, "err", err)
		}
	}
	s.clients[c.id] = c
	c.mem.Store(c.footprint())
	c.memIn.Store(int64(len(c.in)))
	s.clientMem.Add(c.mem.Load())
	victims := s.evictLocked()
	s.wg.Add(1)
	if c.loop != nil {
		c.loop.add(c)
	}
	s.mu.Unlock()
	s.closeEvicted(nil, victims)
	if c.loop == nil {
		go c.serve()
	}
}

func (s *Server) removeClient(c *Client) {
	s.mu.Lock()
	delete(s.clients, c.id)
	s.clientMem.Add(-c.mem.Load())
	if c.evicted {
		s.evictingMem -= c.mem.Load()
	}
	s.mu.Unlock()
	c.addTotals(0)
	s.stats.commands.Add(c.totals.cmds.Load())
	s.stats.errors.Add(c.totals.errors.Load())
	s.stats.allowed.Add(c.totals.allowed.Load())
	s.stats.denied.Add(c.totals.denied.Load())
	s.stats.netIn.Add(c.totals.netIn.Load())
	s.stats.netOut.Add(c.totals.netOut.Load())
	s.wg.Done()
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Shutdown stops accepting, lets every client finish the batch it is
// running, closes their connections and waits for their goroutines, or for
// ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	for _, ln := range s.lns {
		ln.Close()
	}
	for _, c := range s.clients {
		c.kill() // the batch in hand completes
	}
	loops := s.loops
	s.mu.Unlock()
	defer func() { // a loop closes the clients it still holds as it ends
		for _, l := range loops {
			l.shutdown()
			select {
			case <-l.done:
			case <-ctx.Done():
			}
		}
	}()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for _, c := range s.clients {
			if c.conn != nil {
				c.conn.Close()
			}
		}
		s.mu.Unlock()
		return ctx.Err()
	}
}

// sweepLoop runs active expiry ten times a second, as Redis's hz 10 does.
func (s *Server) sweepLoop(sw Sweeper, stop <-chan struct{}) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			sw.Sweep(s.clock.Now())
		}
	}
}

// forEachClient calls fn for every connected client, in id order not
// guaranteed.
func (s *Server) forEachClient(fn func(c *Client)) {
	s.mu.Lock()
	list := make([]*Client, 0, len(s.clients))
	for _, c := range s.clients {
		list = append(list, c)
	}
	s.mu.Unlock()
	for _, c := range list {
		fn(c)
	}
}
