package cluster

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/sluice-rl/sluice/internal/resp"
)

// A follower forwards its clients' operations to the leader over pooled,
// pipelined connections to the leader's RESP port: many callers share a
// connection, each reply goes to the caller whose request was written at
// the same position.

const (
	connsPerPeer = 4
	dialTimeout  = time.Second
	writeTimeout = 5 * time.Second
)

type forwarder struct {
	password string
	tls      *tls.Config // nil: plaintext
	hello    [][][]byte  // commands each new connection sends after AUTH (a proxy's reply form)
	raw      bool        // replies are returned raw, error replies included (proxy.go)

	mu    sync.Mutex
	peers map[string]*peer
}

type peer struct {
	mu    sync.Mutex
	conns [connsPerPeer]*pipeConn
	next  int
}

// newForwarder returns a forwarder that authenticates with password (if
// set) and speaks TLS with cfg (if not nil) to the leader's RESP port.
func newForwarder(password string, cfg *tls.Config) *forwarder {
	return &forwarder{password: password, tls: cfg, peers: map[string]*peer{}}
}

// call sends one command to addr and returns its bulk reply. A failure
// before the command left this node is errNotApplied; a failure after is
// reported as an unknown outcome.
func (f *forwarder) call(addr string, args ...[]byte) ([]byte, error) {
	pc, err := f.conn(addr)
	if err != nil {
		return nil, errNotApplied
	}
	return pc.call(args)
}

// live returns, without dialing, the connection to addr that conn would
// hand out next, or nil if that one is not up (conn dials it).
func (f *forwarder) live(addr string) *pipeConn {
	f.mu.Lock()
	p := f.peers[addr]
	f.mu.Unlock()
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	pc := p.conns[p.next%connsPerPeer]
	if pc == nil || pc.isDead() {
		return nil
	}
	p.next++
	return pc
}

func (f *forwarder) conn(addr string) (*pipeConn, error) {
	f.mu.Lock()
	p := f.peers[addr]
	if p == nil {
		p = &peer{}
		f.peers[addr] = p
	}
	f.mu.Unlock()

	p.mu.Lock()
	defer p.mu.Unlock()
	i := p.next % connsPerPeer
	p.next++
	if pc := p.conns[i]; pc != nil && !pc.isDead() {
		return pc, nil
	}
	pc, err := dialPipe(addr, f.password, f.tls, f.hello, f.raw)
	if err != nil {
		return nil, err
	}
	p.conns[i] = pc
	return pc, nil
}

func (f *forwarder) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.peers {
		p.mu.Lock()
		for _, pc := range p.conns {
			if pc != nil {
				pc.close(errors.New("forwarder closed"))
			}
		}
		p.mu.Unlock()
	}
}

// pending is a caller's place in a connection's queue of replies. The
// caller learns its reply from done or, if notify is set, from a call to
// notify instead, made once on the goroutine that read the reply (or
// that closed the connection).
type pending struct {
	reply  []byte
	err    error
	done   chan struct{}
	notify func(reply []byte, err error)
}

// complete hands the caller its reply, once.
func (p *pending) complete() {
	if p.notify != nil {
		p.notify(p.reply, p.err)
		return
	}
	close(p.done)
}

// pipeConn is one connection to a peer, shared by concurrent callers.
type pipeConn struct {
	nc  net.Conn
	bw  *bufio.Writer
	raw bool // replies raw, byte for byte (resp.ReadRaw), error replies included

	wmu     sync.Mutex // serializes writes and the order of waiters
	waiters chan *pending
	sndbuf  int // the socket's send buffer size as last read (hasRoom); under wmu

	dmu  sync.Mutex
	dead error
}

// dialPipe connects to addr (under TLS with cfg, if not nil),
// authenticates with password, if set, and sends the hello commands; raw
// makes its replies raw.
func dialPipe(addr, password string, cfg *tls.Config, hello [][][]byte, raw bool) (*pipeConn, error) {
	nc, err := dialTLS(net.Dialer{}, addr, cfg, dialTimeout)
	if err != nil {
		return nil, err
	}
	pc := &pipeConn{nc: nc, bw: bufio.NewWriterSize(nc, 64<<10), raw: raw, waiters: make(chan *pending, 65536)}
	br := bufio.NewReaderSize(nc, 64<<10)
	setup := hello
	if password != "" {
		setup = append([][][]byte{{[]byte("AUTH"), []byte(password)}}, hello...)
	}
	if len(setup) > 0 {
		nc.SetDeadline(time.Now().Add(dialTimeout))
		for _, args := range setup {
			pc.bw.Write(resp.AppendArgs(nil, args))
		}
		if err := pc.bw.Flush(); err != nil {
			nc.Close()
			return nil, err
		}
		for _, args := range setup {
			if _, err := readReply(br, new(resp.Value)); err != nil && !isNonError(err) {
				nc.Close()
				return nil, fmt.Errorf("%s at %s: %w", args[0], addr, err)
			}
		}
		nc.SetDeadline(time.Time{})
	}
	go pc.readLoop(br)
	return pc, nil
}

// isNonError reports whether readReply's err is only a reply it does not
// decode (HELLO's map): the command succeeded.
func isNonError(err error) bool { return errors.Is(err, errUnexpectedReply) }

func (pc *pipeConn) isDead() bool {
	pc.dmu.Lock()
	defer pc.dmu.Unlock()
	return pc.dead != nil
}

func (pc *pipeConn) call(args [][]byte) ([]byte, error) {
	p := &pending{done: make(chan struct{})}
	pc.wmu.Lock()
	if pc.isDead() {
		pc.wmu.Unlock()
		return nil, errNotApplied
	}
	pc.waiters <- p
	pc.bw.Write(resp.AppendArgs(nil, args))
	// A bounded write: wmu is held across it, and a leader that stopped
	// reading (paused, partitioned) must not hold every caller here.
	pc.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	err := pc.bw.Flush()
	pc.wmu.Unlock()
	if err != nil {
		pc.close(err) // the command may have left in part: its waiter learns "unknown"
	}
	<-p.done
	return p.reply, p.err
}

// callAsync sends one command without waiting for its reply: notify gets
// it. It reports false, having sent nothing, if the connection is dead,
// its socket has no room for the command, or another caller is writing to
// it (which may take up to writeTimeout):
// the caller, which must not wait (an event loop), then calls from a
// goroutine instead. A failed write closes the connection, and notify
// learns of it before callAsync returns.
func (pc *pipeConn) callAsync(args [][]byte, notify func(reply []byte, err error)) bool {
	if !pc.wmu.TryLock() {
		return false
	}
	if pc.isDead() || len(pc.waiters) == cap(pc.waiters) {
		pc.wmu.Unlock()
		return false
	}
	msg := resp.AppendArgs(nil, args)
	// A leader that stopped reading fills the socket: decline before the
	// write would block (a TLS record adds at most 1/16 and a header).
	if !hasRoom(pc.nc, &pc.sndbuf, len(msg)+len(msg)/16+64) {
		pc.wmu.Unlock()
		return false
	}
	pc.waiters <- &pending{notify: notify}
	pc.bw.Write(msg)
	pc.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	err := pc.bw.Flush()
	pc.wmu.Unlock()
	if err != nil {
		pc.close(err)
	}
	return true
}

func (pc *pipeConn) readLoop(br *bufio.Reader) {
	var v resp.Value
	for {
		var reply []byte
		var err error
		if pc.raw {
			reply, err = resp.ReadRaw(br, nil)
		} else {
			reply, err = readReply(br, &v)
		}
		if err != nil && !isReplyError(err) {
			pc.close(err)
			return
		}
		p := <-pc.waiters
		p.reply, p.err = reply, err
		p.complete()
	}
}

// close marks the connection dead and fails every caller still waiting:
// their commands were sent, so their outcome is unknown.
func (pc *pipeConn) close(err error) {
	pc.dmu.Lock()
	if pc.dead != nil {
		pc.dmu.Unlock()
		return
	}
	pc.dead = err
	pc.dmu.Unlock()
	pc.nc.Close()
	pc.wmu.Lock()
	defer pc.wmu.Unlock()
	for {
		select {
		case p := <-pc.waiters:
			p.err = errUnknown("the connection to the leader broke after the request was sent (" + err.Error() + ")")
			p.complete()
		default:
			return
		}
	}
}

// readReply reads one reply into v, which it reuses: a bulk, simple or
// integer reply is returned as a copy of its bytes (nil for a null bulk),
// an error reply as a replyError.
func readReply(br *bufio.Reader, v *resp.Value) ([]byte, error) {
	if err := resp.Read(br, v); err != nil {
		return nil, err
	}
	switch {
	case v.IsError():
		return nil, replyError(v.Text)
	case v.IsNull() && v.Kind == '$':
		return nil, nil
	case v.Kind == '+' || v.Kind == '$':
		return append([]byte(nil), v.Text...), nil
	case v.IsInt():
		return strconv.AppendInt(nil, v.Num, 10), nil
	}
	return nil, fmt.Errorf("%w %s", errUnexpectedReply, v)
}

var errUnexpectedReply = errors.New("cluster: unexpected reply")

func isReplyError(err error) bool {
	var re replyError
	return errors.As(err, &re)
}
