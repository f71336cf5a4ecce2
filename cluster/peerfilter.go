package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// peerFilter decides which connections the Raft port keeps. Raft's RPCs
// carry no credentials: anyone who reaches the port can start elections
// (TimeoutNow), or pose as a leader. The filter refuses what is obviously
// foreign, by the connecting IP address alone; with --tls-replication yes,
// mutual TLS (tlsport.go) then refuses every connection that does not
// present a certificate from the group's CA. It admits a connection when
// its remote IP is
//
//  1. the IP of a server in raft's latest configuration (host names are
//     resolved, and cached for hostTTL; a connection none admits makes the
//     names be looked up again, at most every reresolveEvery, so a member
//     that came back at a new address under its name is admitted), or
//  2. vouched for: the IP of a member that a trusted node listed in its
//     RAFT.MEMBERS reply within vouchTTL. Trusted nodes are --join,
//     --peers and this node's configured members (their RESP addresses,
//     from the state machine or, before a restarted node has applied its
//     log, from the log). A joiner asks before each RAFT.JOIN, because the
//     leader connects to the joiner before the joiner has any
//     configuration (but vouches for no one while its own id is still a
//     member: see joinLoop); a node that refused a connection asks again
//     (at most every askEvery), because its configuration may be older
//     than the group's (it was down while the group added a member that
//     now leads), or
//  3. inside a --raft-allow prefix, or
//  4. anything, while this node has no configuration, no --join, no
//     --bootstrap and no marker of a past membership: a node waiting for
//     a RAFT.JOIN issued by hand cannot know who will adopt it. It holds
//     no state and no vote, so nothing can be disrupted through it; it is
//     filtered from the moment a configuration names anyone.
//
// Members are connected to by each other, never by clients; a member
// removed from the configuration is refused too. The check is per IP: where
// members share an address (a group on 127.0.0.1, containers behind one
// NAT address) it admits every process on it.
//
// Concurrency: admit is called by the transport's accept loop; vouch and
// the counters are safe from any goroutine.
type peerFilter struct {
	log      *slog.Logger
	allowAll bool
	nets     []netip.Prefix
	standby  bool          // rule 4 applies while the configuration is empty
	armed    chan struct{} // closed by arm; Accept waits for it
	config   func() raft.Configuration
	kick     chan struct{} // a refusal asks the vouch loop to ask again (capacity 1)

	*refusals // the port's: shared by the groups of a RaftPort (mux.go)

	// lookup resolves a host name (net.DefaultResolver's; tests replace it).
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)

	mu      sync.Mutex
	vouched map[netip.Addr]time.Time // until when
	hosts   map[string]resolved
}

// refusals counts the connections a Raft port refused and logs them, at
// most one line per logEvery. Safe from any goroutine.
type refusals struct {
	log     *slog.Logger
	refused atomic.Int64

	mu       sync.Mutex
	lastLog  time.Time
	unlogged int64 // refusals since the last log line
}

type resolved struct {
	addrs []netip.Addr
	at    time.Time // when it was looked up
	until time.Time
}

const (
	hostTTL = 30 * time.Second
	// reresolveEvery bounds how often a refused connection makes the
	// filter look the members' host names up again before hostTTL.
	reresolveEvery = time.Second
	vouchTTL       = 2 * time.Minute
	logEvery       = 10 * time.Second
	askEvery       = 2 * time.Second
)

// parseAllow reads --raft-allow: IP addresses and CIDR prefixes, or "any".
func parseAllow(words []string) (all bool, nets []netip.Prefix, err error) {
	for _, w := range words {
		if strings.EqualFold(w, "any") {
			all = true
			continue
		}
		if p, err := netip.ParsePrefix(w); err == nil {
			nets = append(nets, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(w)
		if err != nil {
			return false, nil, fmt.Errorf("cluster: --raft-allow %q is not an IP address, a prefix like 10.0.0.0/8, or any", w)
		}
		a = a.Unmap()
		nets = append(nets, netip.PrefixFrom(a, a.BitLen()))
	}
	return all, nets, nil
}

func newPeerFilter(log *slog.Logger, allow []string, standby bool) (*peerFilter, error) {
	all, nets, err := parseAllow(allow)
	if err != nil {
		return nil, err
	}
	return &peerFilter{log: log, allowAll: all, nets: nets, standby: standby, armed: make(chan struct{}),
		kick: make(chan struct{}, 1), refusals: &refusals{log: log}, vouched: map[netip.Addr]time.Time{},
		hosts: map[string]resolved{}, lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}}, nil
}

// arm gives the filter raft's configuration; until then nothing is
// accepted (connections wait in the listen backlog). Call it once.
func (f *peerFilter) arm(config func() raft.Configuration) {
	f.config = config
	close(f.armed)
}

// admit reports whether a connection from remote may reach raft, and
// counts and logs (rate-limited) the ones it refuses.
func (f *peerFilter) admit(remote net.Addr) bool {
	if f.admits(remote) {
		return true
	}
	f.askAgain()
	f.refuse("raft: refused a connection from an address that is not a member's (firewall the Raft port; --raft-allow admits more)",
		remote, nil)
	return false
}

// admits reports whether the filter admits remote, without counting a
// refusal. It requires that the filter is armed.
func (f *peerFilter) admits(remote net.Addr) bool {
	if f.allowAll {
		return true
	}
	ap, err := netip.ParseAddrPort(remote.String())
	if err != nil {
		return false
	}
	return f.allowed(ap.Addr().Unmap().WithZone(""), time.Now())
}

// askAgain asks the vouch loop to ask the trusted nodes for their members
// again: a refused address may be a member this node does not know yet.
func (f *peerFilter) askAgain() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// refuse counts a refused connection and logs why, at most one line per
// logEvery (the count of the others goes with the next line).
func (r *refusals) refuse(why string, remote net.Addr, err error) {
	r.refused.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unlogged++
	if now := time.Now(); now.Sub(r.lastLog) >= logEvery {
		args := []any{"remote", remote.String(), "refused_since_last_log", r.unlogged, "refused_total", r.refused.Load()}
		if err != nil {
			args = append(args, "err", err.Error())
		}
		r.log.Warn(why, args...)
		r.lastLog, r.unlogged = now, 0
	}
}

func (f *peerFilter) allowed(ip netip.Addr, now time.Time) bool {
	for _, p := range f.nets {
		if p.Contains(ip) {
			return true
		}
	}
	servers := f.config().Servers
	if len(servers) == 0 && f.standby {
		return true
	}
	for _, s := range servers {
		for _, a := range f.resolve(string(s.Address), now) {
			if a == ip {
				return true
			}
		}
	}
	f.mu.Lock()
	until, ok := f.vouched[ip]
	f.mu.Unlock()
	if ok && now.Before(until) {
		return true
	}
	// A member named by a host name may have come back at a new address (a
	// rescheduled pod): look its name up again, at most every
	// reresolveEvery, before refusing.
	for _, s := range servers {
		for _, a := range f.reresolve(string(s.Address), now) {
			if a == ip {
				return true
			}
		}
	}
	return false
}

// resolve returns the IP addresses of a host:port's host, from the cache
// when it is fresh. A failed lookup is cached as no addresses.
func (f *peerFilter) resolve(hostport string, now time.Time) []netip.Addr {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a.Unmap().WithZone("")}
	}
	f.mu.Lock()
	r, ok := f.hosts[host]
	f.mu.Unlock()
	if ok && now.Before(r.until) {
		return r.addrs
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	ips, _ := f.lookup(ctx, host)
	for i := range ips {
		ips[i] = ips[i].Unmap().WithZone("")
	}
	f.mu.Lock()
	f.hosts[host] = resolved{addrs: ips, at: now, until: now.Add(hostTTL)}
	f.mu.Unlock()
	return ips
}

// reresolve looks a host name's addresses up again if the cached lookup
// is older than reresolveEvery (and returns nothing otherwise, nor for an
// IP address, which resolve has already matched).
func (f *peerFilter) reresolve(hostport string, now time.Time) []netip.Addr {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return nil
	}
	f.mu.Lock()
	r, ok := f.hosts[host]
	if ok && now.Sub(r.at) < reresolveEvery {
		f.mu.Unlock()
		return nil
	}
	delete(f.hosts, host)
	f.mu.Unlock()
	return f.resolve(hostport, now)
}

// vouch admits the IPs of members's Raft addresses for vouchTTL.
func (f *peerFilter) vouch(members []peerMember) {
	now := time.Now()
	var ips []netip.Addr
	for _, m := range members {
		ips = append(ips, f.resolve(m.RaftAddr, now)...)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for ip, until := range f.vouched {
		if !now.Before(until) {
			delete(f.vouched, ip)
		}
	}
	for _, ip := range ips {
		f.vouched[ip] = now.Add(vouchTTL)
	}
}

// filteredListener is a listener whose Accept returns only connections
// the filter admits, and none before the filter is armed.
type filteredListener struct {
	net.Listener
	filter *peerFilter
	closed chan struct{}
	once   sync.Once
}

func (l *filteredListener) Accept() (net.Conn, error) {
	select {
	case <-l.filter.armed:
	case <-l.closed:
		return nil, net.ErrClosed
	}
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.filter.admit(c.RemoteAddr()) {
			return c, nil
		}
		c.Close()
	}
}

func (l *filteredListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// vouchLoop asks the trusted nodes for their members each time the Raft
// port refused a connection, at most every askEvery: the group may have
// added a member this node's configuration does not name yet.
func (n *Node) vouchLoop() {
	defer n.stopped.Done()
	for {
		select {
		case <-n.stop:
			return
		case <-n.filter.kick:
		}
		for _, addr := range n.trustedAddrs() {
			if members, err := askMembers(addr, n.command("MEMBERS"), n.cfg.Password, n.cfg.RESPTLS); err == nil && !n.lostMembership(members) {
				n.filter.vouch(members)
			}
		}
		select {
		case <-n.stop:
			return
		case <-time.After(askEvery):
		}
	}
}

// lostMembership reports whether members, a trusted node's list, names
// this node's id while this node holds no configuration: its Raft state was
// lost (a wiped --dir), and admitting the group's leader would make it that
// voter again, forgetting what it acknowledged. The vouch loop then vouches
// for no one, as joinLoop does, until RAFT.REMOVE has run.
func (n *Node) lostMembership(members []peerMember) bool {
	return hasMember(members, n.cfg.ID) && len(n.raft.GetConfiguration().Configuration().Servers) == 0
}

// trustedAddrs are the RESP addresses whose RAFT.MEMBERS replies the
// filter trusts: --join, --peers, and the configured members' other than
// this node's own.
func (n *Node) trustedAddrs() []string {
	seen := map[string]bool{n.cfg.RESPAddr: true, "": true}
	var out []string
	add := func(addr string) {
		if !seen[addr] {
			seen[addr] = true
			out = append(out, addr)
		}
	}
	add(n.cfg.Join)
	for _, p := range n.cfg.Peers {
		add(p)
	}
	missing := map[string]bool{}
	for _, s := range n.raft.GetConfiguration().Configuration().Servers {
		if id := string(s.ID); id != n.cfg.ID {
			if addr := n.fsm.Member(id); addr != "" {
				add(addr)
			} else {
				missing[id] = true
			}
		}
	}
	if len(missing) > 0 {
		for _, addr := range n.memberAddrsFromLog(missing) {
			add(addr)
		}
	}
	return out
}

// maxLogScan bounds memberAddrsFromLog's walk: about the entries a log
// keeps between snapshots (TrailingLogs + SnapshotThreshold).
const maxLogScan = 20000

// memberAddrsFromLog finds, newest entry first, the latest RESP address of
// each id in this node's own log. A restarted node needs it: raft applies
// the log past the last snapshot only once a leader has told it the commit
// index, so until then the state machine may not know its peers' addresses.
// Uncommitted entries only widen whom it asks.
func (n *Node) memberAddrsFromLog(ids map[string]bool) map[string]string {
	out := map[string]string{}
	first, err := n.cfg.Logs.FirstIndex()
	if err != nil {
		return out
	}
	last, err := n.cfg.Logs.LastIndex()
	if err != nil {
		return out
	}
	var l raft.Log
	for i := last; i > 0 && i >= first && last-i < maxLogScan && len(out) < len(ids); i-- {
		if n.cfg.Logs.GetLog(i, &l) != nil || l.Type != raft.LogCommand {
			continue
		}
		_, ops, err := decodeBatch(l.Data)
		if err != nil {
			continue
		}
		for j := len(ops) - 1; j >= 0; j-- {
			if o := &ops[j]; o.code == opMember && ids[o.id] {
				if _, found := out[o.id]; !found {
					out[o.id] = o.addr // "" if it was removed
				}
			}
		}
	}
	return out
}

// RefusedConnections counts the connections the Raft port refused; with
// Config.Port, those the shared port refused for any group.
func (n *Node) RefusedConnections() int64 {
	if n.filter == nil {
		return 0
	}
	return n.filter.refused.Load()
}
