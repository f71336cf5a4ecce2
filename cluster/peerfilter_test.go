package cluster

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// The Raft port's filter over real sockets: members connect from
// 127.0.0.1, an outsider from 127.0.0.2 (any 127.x address is loopback on
// Linux).

// syncBuffer is a log destination the test reads while the filter writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func configOf(addrs ...string) func() raft.Configuration {
	var c raft.Configuration
	for i, a := range addrs {
		c.Servers = append(c.Servers, raft.Server{ID: raft.ServerID(rune('a' + i)), Address: raft.ServerAddress(a)})
	}
	return func() raft.Configuration { return c }
}

// filteredPort listens on 127.0.0.1:0 through f and hands every accepted
// connection to the returned channel.
func filteredPort(t *testing.T, f *peerFilter) (string, <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fl := &filteredListener{Listener: ln, filter: f, closed: make(chan struct{})}
	t.Cleanup(func() { fl.Close() })
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := fl.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	return ln.Addr().String(), accepted
}

func dialFrom(t *testing.T, ip, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Skipf("cannot dial from %s (loopback aliases are needed): %v", ip, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedByPeer reports whether the server closed c (a read sees EOF or a
// reset) rather than keeping it open.
func closedByPeer(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

func TestRaftPortRefusesAddressesOfNonMembers(t *testing.T) {
	logs := &syncBuffer{}
	f, err := newPeerFilter(slog.New(slog.NewTextHandler(logs, nil)), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	f.arm(configOf("127.0.0.1:7001", "127.0.0.1:7002"))
	addr, accepted := filteredPort(t, f)

	// Five outsiders in a row: all refused, one log line.
	for i := 0; i < 5; i++ {
		if c := dialFrom(t, "127.0.0.2", addr); !closedByPeer(c) {
			t.Fatalf("connection %d from 127.0.0.2 was kept open", i)
		}
	}
	dialFrom(t, "127.0.0.1", addr)
	select {
	case c := <-accepted:
		if got := c.RemoteAddr().(*net.TCPAddr).IP.String(); got != "127.0.0.1" {
			t.Fatalf("accepted a connection from %s; want only 127.0.0.1's", got)
		}
		c.Close()
	case <-time.After(2 * time.Second):
		t.Fatal("a member's connection was not accepted")
	}
	if n := f.refused.Load(); n != 5 {
		t.Fatalf("refused = %d; want 5", n)
	}
	if lines := strings.Count(logs.String(), "refused a connection"); lines != 1 {
		t.Fatalf("%d log lines for 5 refusals within %v; want 1:\n%s", lines, logEvery, logs)
	}
	if !strings.Contains(logs.String(), "127.0.0.2") {
		t.Fatalf("the log does not name the refused address:\n%s", logs)
	}
}

func TestRaftPortAcceptsNothingUntilArmed(t *testing.T) {
	f, err := newPeerFilter(quiet, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	addr, accepted := filteredPort(t, f)
	dialFrom(t, "127.0.0.1", addr) // waits in the backlog
	select {
	case <-accepted:
		t.Fatal("a connection was accepted before the filter knew the members")
	case <-time.After(200 * time.Millisecond):
	}
	f.arm(configOf("127.0.0.1:7001"))
	select {
	case c := <-accepted:
		c.Close()
	case <-time.After(2 * time.Second):
		t.Fatal("the waiting connection was not accepted once the filter was armed")
	}
}

func TestRaftPortRules(t *testing.T) {
	t0 := time.Now()
	ip := func(s string) netip.Addr { return netip.MustParseAddr(s) }
	cases := []struct {
		name    string
		allow   []string
		standby bool
		members []string
		vouched []string
		at      time.Time
		ip      string
		want    bool
	}{
		{name: "member", members: []string{"10.0.0.1:7000", "10.0.0.2:7000"}, ip: "10.0.0.2", want: true},
		{name: "non-member", members: []string{"10.0.0.1:7000"}, ip: "10.0.0.9", want: false},
		{name: "member by host name", members: []string{"localhost:7000"}, ip: "127.0.0.1", want: true},
		{name: "IPv4-mapped member", members: []string{"[::ffff:10.0.0.1]:7000"}, ip: "10.0.0.1", want: true},
		{name: "empty configuration, joining", ip: "10.0.0.9", want: false},
		{name: "empty configuration, waiting to be added", standby: true, ip: "10.0.0.9", want: true},
		{name: "configured, standby no longer applies", standby: true, members: []string{"10.0.0.1:7000"}, ip: "10.0.0.9", want: false},
		{name: "vouched", vouched: []string{"10.0.0.5:7000"}, ip: "10.0.0.5", want: true},
		{name: "vouched, expired", vouched: []string{"10.0.0.5:7000"}, at: t0.Add(vouchTTL + time.Second), ip: "10.0.0.5", want: false},
		{name: "allowed prefix", allow: []string{"192.168.0.0/16"}, members: []string{"10.0.0.1:7000"}, ip: "192.168.4.2", want: true},
		{name: "allowed address", allow: []string{"192.168.4.2"}, ip: "192.168.4.2", want: true},
		{name: "allowed address, another", allow: []string{"192.168.4.2"}, ip: "192.168.4.3", want: false},
	}
	for _, c := range cases {
		f, err := newPeerFilter(quiet, c.allow, c.standby)
		if err != nil {
			t.Fatal(err)
		}
		f.arm(configOf(c.members...))
		var vs []peerMember
		for _, v := range c.vouched {
			vs = append(vs, peerMember{RaftAddr: v})
		}
		f.vouch(vs)
		at := c.at
		if at.IsZero() {
			at = t0.Add(time.Second)
		}
		if got := f.allowed(ip(c.ip), at); got != c.want {
			t.Errorf("%s: allowed(%s) = %v; want %v", c.name, c.ip, got, c.want)
		}
	}
	// A link-local peer's connection carries its interface; the member's address does not.
	f, _ := newPeerFilter(quiet, nil, false)
	f.arm(configOf("[fe80::1]:7000"))
	if !f.admit(&net.TCPAddr{IP: net.ParseIP("fe80::1"), Zone: "eth0", Port: 40000}) {
		t.Error("fe80::1 on eth0 was refused; the member is fe80::1")
	}
}

func TestRaftAllowAny(t *testing.T) {
	f, err := newPeerFilter(quiet, []string{"any"}, false)
	if err != nil {
		t.Fatal(err)
	}
	f.arm(configOf("10.0.0.1:7000"))
	if !f.admit(&net.TCPAddr{IP: net.ParseIP("203.0.113.7"), Port: 1234}) {
		t.Fatal("--raft-allow any refused a connection")
	}
	for _, bad := range []string{"10.0.0.0/33", "10.0.0", "anyone", "example.com", ""} {
		if _, err := newPeerFilter(quiet, []string{bad}, false); err == nil {
			t.Errorf("--raft-allow %q was accepted", bad)
		}
	}
}

// TestMemberNamedByHostNameIsFollowedToANewAddress: a member whose Raft
// address is a host name (--raft-advertise pod-1.peers:7000) and that
// comes back at a new IP address under it (a rescheduled pod) is admitted
// at the new address once the cached lookup is reresolveEvery old, not
// hostTTL; between lookups a refused address does not look the name up
// again.
func TestMemberNamedByHostNameIsFollowedToANewAddress(t *testing.T) {
	f, err := newPeerFilter(quiet, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	current, lookups := netip.MustParseAddr("10.1.0.7"), 0
	f.lookup = func(context.Context, string) ([]netip.Addr, error) {
		lookups++
		return []netip.Addr{current}, nil
	}
	f.arm(configOf("pod-1.peers:7000"))
	t0 := time.Now()
	if !f.allowed(netip.MustParseAddr("10.1.0.7"), t0) {
		t.Fatal("the member at its first address was refused")
	}
	current = netip.MustParseAddr("10.1.3.9") // the pod was rescheduled
	if f.allowed(netip.MustParseAddr("10.1.3.9"), t0.Add(reresolveEvery/2)) || lookups != 1 {
		t.Fatalf("looked the name up %d times within reresolveEvery; want 1 and a refusal", lookups)
	}
	if !f.allowed(netip.MustParseAddr("10.1.3.9"), t0.Add(reresolveEvery+time.Millisecond)) {
		t.Fatal("the member at its new address was refused after reresolveEvery")
	}
	if f.allowed(netip.MustParseAddr("10.1.0.7"), t0.Add(reresolveEvery+2*time.Millisecond)) {
		t.Fatal("the member's old address is still admitted")
	}
	if hostTTL <= reresolveEvery {
		t.Fatal("the test shows nothing unless hostTTL is longer than reresolveEvery")
	}
}
