package cluster

import (
	"net"
	"sync"
	"testing"
	"time"
)

// The partition scenario: peers reach each node's Raft port through a
// proxy that can cut callers off by their source address (each node's
// Raft traffic leaves from its own 127.0.0.x).

func TestProcessPartitionedLeader(t *testing.T) {
	ps, proxies := startProcGroup(t, true)
	underLoad(t, ps, "k", func(ld *proc, others []*proc) {
		// Cut the leader off from both peers, both ways.
		for i, p := range ps {
			if p == ld {
				for _, o := range others {
					proxies[i].block(o.raftIP)
				}
				continue
			}
			proxies[i].block(ld.raftIP)
		}
		waitForNewLeader(t, others)
		waitFor(t, 15*time.Second, func() bool { return ld.info("role") != "leader" })
		t.Logf("the cut-off leader stepped down (role %s)", ld.info("role"))
		time.Sleep(time.Second)
		for _, px := range proxies {
			px.heal()
		}
		waitFor(t, 15*time.Second, func() bool { return ld.info("role") == "follower" && ld.info("leader_id") != "" })
	})
}

// proxy relays TCP to a node's Raft port, from the caller's source
// address, and can cut off callers by that address: their connections are
// closed and new ones refused.
type proxy struct {
	ln   net.Listener
	port int

	mu      sync.Mutex
	target  string // the node's Raft port; "" until it is known
	blocked map[string]bool
	conns   map[net.Conn]string // both ends of every relay, by the caller's address
}

// startProxy listens on ip; it relays to nothing until setTarget.
func startProxy(t *testing.T, ip string) *proxy {
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	px := &proxy{ln: ln, port: ln.Addr().(*net.TCPAddr).Port,
		blocked: map[string]bool{}, conns: map[net.Conn]string{}}
	t.Cleanup(func() { ln.Close(); px.block("*") })
	go px.serve()
	return px
}

func (px *proxy) serve() {
	for {
		c, err := px.ln.Accept()
		if err != nil {
			return
		}
		src := c.RemoteAddr().(*net.TCPAddr).IP.String()
		px.mu.Lock()
		if px.blocked[src] || px.blocked["*"] {
			px.mu.Unlock()
			c.Close()
			continue
		}
		// Dial from the caller's address: the node behind the proxy admits
		// Raft connections from its members' addresses only.
		d := net.Dialer{Timeout: time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		if px.target == "" {
			px.mu.Unlock()
			c.Close()
			continue
		}
		up, err := d.Dial("tcp", px.target)
		if err != nil {
			px.mu.Unlock()
			c.Close()
			continue
		}
		px.conns[c], px.conns[up] = src, src
		px.mu.Unlock()
		go px.pipe(c, up)
		go px.pipe(up, c)
	}
}

func (px *proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	dst.Close()
	src.Close()
	px.mu.Lock()
	delete(px.conns, dst)
	delete(px.conns, src)
	px.mu.Unlock()
}

// setTarget points the proxy at the node's Raft port.
func (px *proxy) setTarget(addr string) {
	px.mu.Lock()
	defer px.mu.Unlock()
	px.target = addr
}

// block cuts off callers from these addresses ("*": everyone).
func (px *proxy) block(ips ...string) {
	px.mu.Lock()
	defer px.mu.Unlock()
	for _, ip := range ips {
		px.blocked[ip] = true
	}
	for c, src := range px.conns {
		if px.blocked[src] || px.blocked["*"] {
			c.Close()
		}
	}
}

func (px *proxy) heal() {
	px.mu.Lock()
	defer px.mu.Unlock()
	px.blocked = map[string]bool{}
}
