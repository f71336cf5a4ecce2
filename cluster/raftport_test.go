package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/redis/go-redis/v9"
)

// An outsider on the Raft port: a process that is not a member speaks
// raft's own wire format (raft's NetworkTransport as a client) from
// another loopback address than the members'.

// outsiderStream is a raft StreamLayer whose connections leave from ip,
// under TLS with tls when it is not nil. It never accepts anything: the
// outsider only sends.
type outsiderStream struct {
	ln     net.Listener
	dialer net.Dialer
	tls    *tls.Config
}

func newOutsiderStream(t *testing.T, ip string) *outsiderStream {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Skipf("cannot listen on %s (loopback aliases are needed): %v", ip, err)
	}
	return &outsiderStream{ln: ln, dialer: net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}}
}

func (s *outsiderStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return dialTLS(s.dialer, string(address), s.tls, timeout)
}

func (s *outsiderStream) Accept() (net.Conn, error) { return s.ln.Accept() }
func (s *outsiderStream) Close() error              { return s.ln.Close() }
func (s *outsiderStream) Addr() net.Addr            { return s.ln.Addr() }

// sendTimeoutNow sends one TimeoutNow RPC, the message a leader sends to
// hand over leadership: its receiver starts an election at once.
func sendTimeoutNow(trans *raft.NetworkTransport, id, addr string) error {
	req := &raft.TimeoutNowRequest{RPCHeader: raft.RPCHeader{
		ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("outsider"), Addr: []byte(trans.LocalAddr()),
	}}
	return trans.TimeoutNow(raft.ServerID(id), raft.ServerAddress(addr), req, &raft.TimeoutNowResponse{})
}

func (p *proc) raftAddr() string { return fmt.Sprintf("%s:%d", p.raftIP, p.advPort) }

func TestProcessOutsiderTimeoutNowCausesNoElection(t *testing.T) {
	ps, _ := startProcGroup(t, false)
	ld := leaderOf(ps)
	if ld == nil {
		t.Fatal("no leader")
	}
	term := ld.info("term")

	// A client keeps deciding through a follower the whole time.
	var clientErrs []string
	var mu sync.Mutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		rdb := redis.NewClient(&redis.Options{Addr: othersThan(ps, ld)[0].addr(), Protocol: 2, MaxRetries: -1})
		defer rdb.Close()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := rdb.Do(context.Background(), "RL.TOKEN", "k", "1/h", 1000000).Err(); err != nil {
				mu.Lock()
				clientErrs = append(clientErrs, err.Error())
				mu.Unlock()
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()

	trans := raft.NewNetworkTransport(newOutsiderStream(t, "127.0.0.2"), 1, time.Second, io.Discard)
	defer trans.Close()
	const attempts = 10
	delivered := 0
	for i := 0; i < attempts; i++ {
		// Aim at a follower, which would win the election it starts.
		target := othersThan(ps, leaderOf(ps))[i%2]
		if err := sendTimeoutNow(trans, target.id, target.raftAddr()); err == nil {
			delivered++
		}
		time.Sleep(400 * time.Millisecond) // time for an election to run
	}
	close(stop)
	wg.Wait()

	now := leaderOf(ps)
	if now != ld || ld.info("term") != term {
		t.Fatalf("after %d TimeoutNow RPCs from 127.0.0.2 (%d delivered): leader %s term %s; before: leader %s term %s",
			attempts, delivered, idOf(now), ld.info("term"), ld.id, term)
	}
	if delivered != 0 {
		t.Fatalf("%d of %d TimeoutNow RPCs from a non-member were answered", delivered, attempts)
	}
	if len(clientErrs) > 0 {
		t.Fatalf("a client got %d errors during the attack, first %q", len(clientErrs), clientErrs[0])
	}
	refused := 0
	for _, p := range othersThan(ps, ld) {
		n, _ := strconv.Atoi(p.info("raft_refused_connections"))
		refused += n
	}
	if refused < attempts {
		t.Fatalf("the followers count %d refused connections; want at least %d", refused, attempts)
	}
	logged := false
	for _, p := range ps {
		if strings.Contains(p.logTail(), "refused a connection") && strings.Contains(p.logTail(), "127.0.0.2") {
			logged = true
		}
	}
	if !logged {
		t.Fatal("no node logged a refused connection from 127.0.0.2")
	}
	t.Logf("%d TimeoutNow RPCs refused (%d connections counted); leader %s, term %s unchanged", attempts, refused, ld.id, term)
}

func idOf(p *proc) string {
	if p == nil {
		return "(none)"
	}
	return p.id
}

// extraProc makes a fourth (fifth…) node beside a group from
// startProcGroup, with its own loopback address 127.0.0.(10+i).
func extraProc(t *testing.T, ps []*proc, i int) *proc {
	t.Helper()
	ip := fmt.Sprintf("127.0.0.%d", 10+i)
	base := filepath.Dir(ps[0].dir)
	p := &proc{t: t, bin: ps[0].bin, id: fmt.Sprintf("n%d", i), raftIP: ip,
		dir: filepath.Join(base, fmt.Sprintf("n%d", i)), logPath: filepath.Join(base, fmt.Sprintf("n%d.log", i)),
		portsPath: filepath.Join(base, fmt.Sprintf("n%d.ports", i))}
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("--- %s log:\n%s", p.id, p.logTail())
		}
	})
	return p
}

func (p *proc) do(args ...any) (any, error) {
	rdb := redis.NewClient(&redis.Options{Addr: p.addr(), Protocol: 2, MaxRetries: -1, ReadTimeout: 15 * time.Second})
	defer rdb.Close()
	return rdb.Do(context.Background(), args...).Result()
}

// A member that was down while the group added n4 and n4 took the lead
// comes back with a configuration that does not name n4: its Raft port
// refuses n4 at first, asks a member it knows (n2) for the members, and
// then admits n4 and catches up.
func TestProcessRestartedMemberAdmitsALeaderItsConfigurationPredates(t *testing.T) {
	ps, _ := startProcGroup(t, false)
	n1, n3 := ps[0], ps[2]
	for i := 0; i < 5; i++ {
		if _, err := n1.do("RL.TOKEN", "k", "1/h", 100); err != nil {
			t.Fatal(err)
		}
	}
	n3.kill()
	n4 := extraProc(t, ps, 4)
	n4.start("--join", n1.addr())
	waitFor(t, 15*time.Second, func() bool { return n1.info("members") == "4" })
	// On a loaded machine a transfer can time out, or an election can
	// follow it: ask whichever node leads again until n4 leads.
	var asked time.Time
	waitFor(t, 45*time.Second, func() bool {
		if n4.info("role") == "leader" && n4.info("ready") == "true" {
			return true
		}
		if l := leaderOf([]*proc{n1, ps[1]}); l != nil && time.Since(asked) > 3*time.Second {
			l.do("RAFT.TRANSFER", "n4")
			asked = time.Now()
		}
		return false
	})
	if _, err := n4.do("RAFT.REMOVE", "n1"); err != nil {
		t.Fatal(err)
	}
	n1.kill()
	if _, err := n4.do("RL.TOKEN", "k", "1/h", 100); err != nil {
		t.Fatal(err)
	}

	restarted := time.Now()
	n3.start()
	waitFor(t, 60*time.Second, func() bool {
		target, _ := strconv.ParseUint(n4.info("commit_index"), 10, 64)
		got, _ := strconv.ParseUint(n3.info("applied_index"), 10, 64)
		return n3.info("leader_id") == "n4" && got >= target
	})
	refused, _ := strconv.Atoi(n3.info("raft_refused_connections"))
	if refused < 1 {
		t.Fatalf("n3 refused %d connections; its configuration predates n4, so it should have refused n4 first", refused)
	}
	v, err := n3.do("RL.TOKEN", "k", "1/h", 100, 0)
	if err != nil || v.([]any)[2] != int64(94) {
		t.Fatalf("a peek through n3 = %v, %v; want remaining 94", v, err)
	}
	t.Logf("n3 refused n4 %d time(s), then caught up in %v", refused, time.Since(restarted).Round(time.Millisecond))
}
