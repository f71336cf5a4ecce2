package cluster

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"
)

// One Raft port for the several groups a process hosts: each Node opened
// with Config.Port and Config.Group gets a transport of its own over the
// port's one listener.
//
// Wire format. After the TLS handshake (under mutual TLS the preamble
// travels inside the session), a connection for group g ≥ 1 starts with
// two bytes, muxMagic and g, and then carries the group's transport
// stream (entrytransport.go). A connection for group 0 starts with that
// stream directly, exactly as a node without a RaftPort speaks: the first
// byte of that stream is a raft RPC type, 0 to lastRPCType, or entryMagic,
// neither of which is muxMagic, so old and new peers of group 0
// interoperate. (muxMagic followed by 0 is group 0 too.) Any other first
// byte is refused. A later format with wider group
// ids takes another magic byte.
//
// Admission, per group. A connection for group g reaches g's raft only if
// its remote address passes g's own peer filter (peerfilter.go): an IP of
// a server in g's configuration, one vouched for by g's trusted nodes,
// inside a --raft-allow prefix, or anything while g is a standby node with
// no configuration. The group byte is not trusted on its own: a member of
// group 1 that announces group 2 is refused unless it is also a member of
// (or vouched for by) group 2, or --raft-allow admits it. The check is by
// IP, as peerFilter's, and under mutual TLS every group trusts the same CA,
// so the groups of one process are separated from each other's members
// only where those members have addresses of their own. Before the TLS
// handshake, a connection whose address no hosted group admits is closed,
// so that a stranger costs no handshake.
//
// Every refusal, whatever the group, counts in the port's one counter
// (RefusedConnections, and each of its Nodes' RefusedConnections).

const (
	// muxMagic starts a connection's group preamble. raft v1.7.3's RPC
	// types (net_transport.go: rpcAppendEntries = 0 … rpcRequestPreVote =
	// 4) never are this byte, and neither is a TLS record (0x14–0x17) or
	// ASCII text.
	muxMagic byte = 0xB7
	// lastRPCType is the highest RPC type of raft's NetworkTransport
	// (rpcRequestPreVote in v1.7.3); a raft that adds one needs it raised.
	lastRPCType byte = 4
	// preambleTimeout bounds the wait for a connection's first bytes, and
	// for its group's node to be armed.
	preambleTimeout = 10 * time.Second
	// maxPreambles bounds the connections waiting in their preamble, as
	// maxHandshakes does the TLS handshakes.
	maxPreambles = 64
)

var (
	errPreamble = errors.New("not a Raft connection: its first byte is neither a raft RPC type nor the group preamble")
	errSilent   = errors.New("closed before its first byte")
)

// PortConfig configures a RaftPort.
type PortConfig struct {
	Bind      string   // host:port to listen on (port 0: one the kernel chooses)
	Advertise string   // the address peers dial; Bind's bound address if empty
	Allow     []string // --raft-allow: IPs and prefixes every group admits besides its members ("any": all)
	// ServerTLS and ClientTLS put the port under mutual TLS, as
	// Config.RaftServerTLS and RaftClientTLS do for a Node's own port.
	// Both or neither.
	ServerTLS, ClientTLS *tls.Config
	Logger               *slog.Logger // slog.Default() if nil
}

// RaftPort is one Raft listener shared by the groups of a process (see
// the wire format above). Open a Node on it with Config.Port and
// Config.Group; a Node's Close detaches its group and leaves the port
// open. The owner closes the port after its Nodes.
//
// Concurrency: all methods are safe for concurrent use.
type RaftPort struct {
	log       *slog.Logger
	allow     []string
	refusals  *refusals
	advertise net.Addr // *net.TCPAddr, or namedAddr for a host name
	dialer    net.Dialer
	clientTLS *tls.Config
	raw       net.Listener
	ln        net.Listener  // raw behind the address pre-filter and TLS
	started   chan struct{} // closed when the first group attaches
	startOnce sync.Once
	done      chan struct{}
	closeOnce sync.Once
	slots     chan struct{}  // a token per connection in its preamble
	serving   sync.WaitGroup // the accept loop and the routing goroutines

	mu      sync.Mutex
	groups  map[uint8]*groupListener
	pending openConns // connections in their preamble
}

// OpenRaftPort listens on cfg.Bind. Connections wait in the listen backlog
// until the first Node attaches.
func OpenRaftPort(cfg PortConfig) (*RaftPort, error) {
	if (cfg.ServerTLS == nil) != (cfg.ClientTLS == nil) {
		return nil, errors.New("cluster: the Raft port's mutual TLS needs both a server and a client configuration")
	}
	if _, _, err := parseAllow(cfg.Allow); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	adv := cfg.Advertise
	if adv == "" {
		adv = cfg.Bind
	}
	if err := checkAdvertise(cfg.Advertise); err != nil {
		return nil, err
	}
	raw, err := net.Listen("tcp", cfg.Bind)
	if err != nil {
		return nil, fmt.Errorf("cluster: raft port on %s: %w", cfg.Bind, err)
	}
	advertise, err := advertiseAddr(adv, raw.Addr()) // port 0: the port the kernel chose
	if err != nil {
		raw.Close()
		return nil, err
	}
	p := &RaftPort{log: cfg.Logger, allow: cfg.Allow, refusals: &refusals{log: cfg.Logger}, advertise: advertise,
		clientTLS: cfg.ClientTLS, raw: raw, started: make(chan struct{}), done: make(chan struct{}),
		slots: make(chan struct{}, maxPreambles), groups: map[uint8]*groupListener{}}
	if ip := raw.Addr().(*net.TCPAddr).IP; !ip.IsUnspecified() {
		p.dialer.LocalAddr = &net.TCPAddr{IP: ip}
	}
	p.ln = &prefilteredListener{Listener: raw, p: p}
	if cfg.ServerTLS != nil {
		p.ln = newTLSListener(p.ln, cfg.ServerTLS, p.refusals)
	}
	p.serving.Add(1)
	go p.serve()
	return p, nil
}

// Addr is the address peers dial: PortConfig.Advertise, or the bound
// address.
func (p *RaftPort) Addr() string { return p.advertise.String() }

// Bound is the address the port listens on, with the port the kernel chose
// for a Bind with port 0.
func (p *RaftPort) Bound() string { return p.raw.Addr().String() }

// RefusedConnections counts the connections the port refused, for any
// group.
func (p *RaftPort) RefusedConnections() int64 { return p.refusals.refused.Load() }

// Close stops listening and closes the connections not yet handed to a
// group. Close the port's Nodes first: a group's transport whose port is
// closed fails to accept.
func (p *RaftPort) Close() error {
	var err error
	p.closeOnce.Do(func() {
		close(p.done)
		err = p.ln.Close()
		p.pending.closeAll()
		p.serving.Wait()
	})
	return err
}

// transport attaches group to the port: it returns raft's transport for
// the group, and the group's peer filter, which the caller arms with the
// group's configuration. Closing the transport detaches the group.
func (p *RaftPort) transport(group uint8, standby bool) (*entryTransport, *peerFilter, *streamLayer, error) {
	f, err := newPeerFilter(p.log, p.allow, standby)
	if err != nil {
		return nil, nil, nil, err
	}
	f.refusals = p.refusals
	l := &groupListener{p: p, group: group, filter: f, conns: make(chan net.Conn), done: make(chan struct{})}
	p.mu.Lock()
	select {
	case <-p.done:
		p.mu.Unlock()
		return nil, nil, nil, fmt.Errorf("cluster: the Raft port %s is closed", p.Addr())
	default:
	}
	if _, ok := p.groups[group]; ok {
		p.mu.Unlock()
		return nil, nil, nil, fmt.Errorf("cluster: group %d already has a node on the Raft port %s", group, p.Addr())
	}
	p.groups[group] = l
	p.mu.Unlock()
	p.startOnce.Do(func() { close(p.started) })
	s := &streamLayer{ln: l, advertise: p.advertise, dialer: p.dialer, clientTLS: p.clientTLS, group: group}
	return newEntryTransport(s, p.log), f, s, nil
}

func (p *RaftPort) serve() {
	defer p.serving.Done()
	for {
		c, ok := nextConn(p.ln, p.done)
		if !ok {
			return
		}
		select {
		case p.slots <- struct{}{}:
			p.serving.Add(1)
			go p.route(c)
		default:
			p.refusals.refuse("raft: refused a connection: too many connections in their preamble", c.RemoteAddr(), nil)
			c.Close()
		}
	}
}

// route reads c's preamble and hands c to its group's transport if the
// group's filter admits c's address.
func (p *RaftPort) route(c net.Conn) {
	defer func() { <-p.slots; p.serving.Done() }()
	if !p.pending.add(c) {
		c.Close()
		return
	}
	group, rc, err := readPreamble(c)
	p.pending.remove(c)
	if err != nil {
		select {
		case <-p.done: // closed by Close, not refused
		default:
			if !errors.Is(err, errSilent) { // a TLS probe (tlsport.go) says nothing
				p.refusals.refuse("raft: refused a connection without a valid preamble", c.RemoteAddr(), err)
			}
		}
		c.Close()
		return
	}
	p.mu.Lock()
	l := p.groups[group]
	p.mu.Unlock()
	if l == nil {
		p.refusals.refuse(fmt.Sprintf("raft: refused a connection for group %d, which this Raft port does not host", group),
			c.RemoteAddr(), nil)
		c.Close()
		return
	}
	wait := time.NewTimer(preambleTimeout)
	defer wait.Stop()
	select {
	case <-l.filter.armed:
	case <-l.done:
		c.Close()
		return
	case <-p.done:
		c.Close()
		return
	case <-wait.C:
		p.refusals.refuse(fmt.Sprintf("raft: refused a connection for group %d, whose node did not start in time", group),
			c.RemoteAddr(), nil)
		c.Close()
		return
	}
	if !l.filter.admits(c.RemoteAddr()) {
		l.filter.askAgain()
		p.refusals.refuse(fmt.Sprintf("raft: refused a connection for group %d from an address that is not a member's of it "+
			"(firewall the Raft port; --raft-allow admits more)", group), c.RemoteAddr(), nil)
		c.Close()
		return
	}
	select {
	case l.conns <- rc:
	case <-l.done:
		c.Close()
	case <-p.done:
		c.Close()
	}
}

// admitsAny reports whether some attached group may admit a connection
// from remote: its filter admits it, or it is not armed yet and cannot
// tell. It counts a refusal otherwise, and asks every group's vouch loop
// to ask again.
func (p *RaftPort) admitsAny(remote net.Addr) bool {
	p.mu.Lock()
	filters := make([]*peerFilter, 0, len(p.groups))
	for _, l := range p.groups {
		filters = append(filters, l.filter)
	}
	p.mu.Unlock()
	for _, f := range filters {
		select {
		case <-f.armed:
		default:
			return true
		}
		if f.admits(remote) {
			return true
		}
	}
	for _, f := range filters {
		f.askAgain()
	}
	p.refusals.refuse("raft: refused a connection from an address that is not a member's of any group on this Raft port "+
		"(firewall the Raft port; --raft-allow admits more)", remote, nil)
	return false
}

// readPreamble reads c's first bytes (within preambleTimeout) and returns
// the group c is for, and the connection to hand to its transport: for
// group 0 without a preamble, one that replays the first byte read.
func readPreamble(c net.Conn) (uint8, net.Conn, error) {
	c.SetReadDeadline(time.Now().Add(preambleTimeout))
	var b [2]byte
	if _, err := io.ReadFull(c, b[:1]); err != nil {
		if errors.Is(err, io.EOF) {
			return 0, nil, errSilent
		}
		return 0, nil, err
	}
	switch {
	case b[0] == muxMagic:
		if _, err := io.ReadFull(c, b[1:]); err != nil {
			return 0, nil, fmt.Errorf("reading the group: %w", err)
		}
		c.SetReadDeadline(time.Time{})
		return b[1], c, nil
	case b[0] <= lastRPCType, b[0] == entryMagic:
		c.SetReadDeadline(time.Time{})
		return 0, &replayConn{Conn: c, first: b[0]}, nil
	default:
		return 0, nil, fmt.Errorf("%w (%#x)", errPreamble, b[0])
	}
}

// writePreamble announces group on c, a new connection to a peer's port.
func writePreamble(c net.Conn, group uint8, timeout time.Duration) error {
	c.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte{muxMagic, group}); err != nil {
		return fmt.Errorf("cluster: the Raft preamble for group %d: %w", group, err)
	}
	return c.SetWriteDeadline(time.Time{})
}

// replayConn returns first before the rest of Conn's stream.
//
// Concurrency: one reader, as raft's connection handler.
type replayConn struct {
	net.Conn
	first    byte
	replayed bool
}

func (c *replayConn) Read(b []byte) (int, error) {
	if !c.replayed && len(b) > 0 {
		c.replayed = true
		b[0] = c.first
		return 1, nil
	}
	return c.Conn.Read(b)
}

// prefilteredListener returns the connections from addresses some group on
// the port may admit, and none before the first group attaches.
type prefilteredListener struct {
	net.Listener
	p *RaftPort
}

func (l *prefilteredListener) Accept() (net.Conn, error) {
	select {
	case <-l.p.started:
	case <-l.p.done:
		return nil, net.ErrClosed
	}
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.p.admitsAny(c.RemoteAddr()) {
			return c, nil
		}
		c.Close()
	}
}

// groupListener is one group's side of the port: raft's transport accepts
// from it the connections route hands it.
type groupListener struct {
	p      *RaftPort
	group  uint8
	filter *peerFilter
	conns  chan net.Conn
	done   chan struct{}
	once   sync.Once
}

func (l *groupListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-l.p.done:
		return nil, net.ErrClosed
	}
}

// Close detaches the group from the port; the port stays open.
func (l *groupListener) Close() error {
	l.once.Do(func() {
		close(l.done)
		l.p.mu.Lock()
		if l.p.groups[l.group] == l {
			delete(l.p.groups, l.group)
		}
		l.p.mu.Unlock()
	})
	return nil
}

func (l *groupListener) Addr() net.Addr { return l.p.raw.Addr() }
