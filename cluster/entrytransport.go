package cluster

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
)

// entryTransport is raft's NetworkTransport with two changes:
//
//   - An AppendEntries that carries entries travels on connections of its
//     own, in the entry wire (entrywire.go), not in msgpack: decoding
//     msgpack by reflection, on every replica, was most of the transport's
//     cost of an entry. Heartbeats, probes without entries, votes, snapshots
//     and TimeoutNow stay raft's own RPCs, and so does a request larger than
//     maxEntryFrame.
//   - Pipelined replication is refused (see AppendEntriesPipeline).
//
// Both kinds of connection share the node's listener: a connection that
// opens with entryMagic is served here, any other goes on to the
// NetworkTransport. A peer that does not know the entry wire (an older
// sluice) closes such a connection, or answers the handshake with 0; the
// transport then sends that peer raft's own RPCs for legacyFor before it
// tries again, so that groups of old and new nodes keep replicating through
// a rolling upgrade.
type entryTransport struct {
	*raft.NetworkTransport
	stream   *entryStream
	consumer chan raft.RPC
	timeout  time.Duration
	log      *slog.Logger

	mu     sync.Mutex
	pool   map[raft.ServerAddress][]*entryConn
	legacy map[raft.ServerAddress]time.Time // until when a peer gets raft's own RPCs
	closed bool
	done   chan struct{}
	once   sync.Once

	conns openConns // accepted entry connections, and those not yet sorted
}

const (
	entryTimeout  = 10 * time.Second // an RPC's deadline, as the NetworkTransport's
	entryPoolSize = 3                // idle connections kept per peer, as the NetworkTransport's
	legacyFor     = time.Minute
)

var errLegacyPeer = errors.New("cluster: the peer does not speak the entry wire")

// newEntryTransport returns the transport over s, which it owns: closing the
// transport closes s.
func newEntryTransport(s *streamLayer, log *slog.Logger) *entryTransport {
	if log == nil {
		log = slog.Default()
	}
	t := &entryTransport{
		consumer: make(chan raft.RPC),
		timeout:  entryTimeout,
		log:      log,
		pool:     map[raft.ServerAddress][]*entryConn{},
		legacy:   map[raft.ServerAddress]time.Time{},
		done:     make(chan struct{}),
	}
	t.stream = &entryStream{streamLayer: s, t: t, others: make(chan net.Conn), done: make(chan struct{})}
	t.NetworkTransport = raft.NewNetworkTransport(t.stream, entryPoolSize, entryTimeout, os.Stderr)
	go t.stream.sort()
	go t.forward()
	return t
}

// AppendEntriesPipeline refuses, so raft replicates with one AppendEntries
// at a time per follower (each still carries up to MaxAppendEntries
// entries).
//
// raft v1.7.3's netPipeline can deadlock: its channels are unbuffered at
// the default MaxRPCsInFlight, and when a follower answers Success=false
// (it lacks the previous entry, as after a restart or a snapshot) the
// decoding goroutine returns while the sending loop may still issue one
// more AppendEntries, which parks forever on the in-flight channel. The
// follower then gets heartbeats but never another entry, and the leader's
// Shutdown waits forever for that loop (seen as a 10-minute hang of
// TestMutualTLSGroupElectsAppendsAndInstallsSnapshots; grafana/pyroscope
// disabled pipelining for the same stall).
func (*entryTransport) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}

// Consumer carries the RPCs of both kinds of connection.
func (t *entryTransport) Consumer() <-chan raft.RPC { return t.consumer }

// forward hands on the NetworkTransport's RPCs until the transport closes.
func (t *entryTransport) forward() {
	in := t.NetworkTransport.Consumer()
	for {
		select {
		case rpc := <-in:
			select {
			case t.consumer <- rpc:
			case <-t.done:
				return
			}
		case <-t.done:
			return
		}
	}
}

// AppendEntries sends args on an entry connection when it carries entries
// and the peer speaks the entry wire; otherwise as raft's own RPC.
func (t *entryTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	if len(args.Entries) == 0 || entryRequestSize(args) > maxEntryFrame || t.isLegacy(target) {
		return t.NetworkTransport.AppendEntries(id, target, args, resp)
	}
	c, err := t.conn(target)
	if errors.Is(err, errLegacyPeer) {
		return t.NetworkTransport.AppendEntries(id, target, args, resp)
	}
	if err != nil {
		return err
	}
	rpcErr, err := c.call(args, resp, t.timeout)
	if err != nil {
		c.conn.Close()
		return err
	}
	t.release(target, c)
	if rpcErr != "" {
		return errors.New(rpcErr)
	}
	return nil
}

func (t *entryTransport) isLegacy(target raft.ServerAddress) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	until, ok := t.legacy[target]
	if ok && time.Now().After(until) {
		delete(t.legacy, target)
		return false
	}
	return ok
}

// conn returns an idle entry connection to target, or a new one. A peer
// that refuses the handshake is marked as legacy, and errLegacyPeer
// returned.
func (t *entryTransport) conn(target raft.ServerAddress) (*entryConn, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, raft.ErrTransportShutdown
	}
	if cs := t.pool[target]; len(cs) > 0 {
		c := cs[len(cs)-1]
		t.pool[target] = cs[:len(cs)-1]
		t.mu.Unlock()
		return c, nil
	}
	t.mu.Unlock()
	nc, err := t.stream.streamLayer.Dial(target, t.timeout)
	if err != nil {
		return nil, err
	}
	c := &entryConn{conn: nc, r: bufio.NewReaderSize(nc, 4<<10)}
	if err := c.handshake(t.timeout); err != nil {
		nc.Close()
		if errors.Is(err, errLegacyPeer) {
			t.mu.Lock()
			t.legacy[target] = time.Now().Add(legacyFor)
			t.mu.Unlock()
			t.log.Info("raft: the peer closed an entry connection at its handshake; sending it raft's own AppendEntries for a while", "peer", string(target), "for", legacyFor, "err", err)
		}
		return nil, err
	}
	return c, nil
}

// release returns c to target's idle connections, or closes it.
func (t *entryTransport) release(target raft.ServerAddress, c *entryConn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || len(t.pool[target]) >= entryPoolSize {
		c.conn.Close()
		return
	}
	t.pool[target] = append(t.pool[target], c)
}

// Close closes the entry connections, idle and accepted (one in a call
// closes when the call ends), and then the NetworkTransport, which closes
// the listener. The connections the NetworkTransport accepted stay open
// until their peers close them, as they did without the entry wire.
func (t *entryTransport) Close() error {
	t.once.Do(func() {
		t.mu.Lock()
		t.closed = true
		close(t.done)
		for _, cs := range t.pool {
			for _, c := range cs {
				c.conn.Close()
			}
		}
		t.pool = nil
		t.mu.Unlock()
		t.conns.closeAll()
	})
	return t.NetworkTransport.Close() // closes the stream too
}

// serve answers the requests of an accepted entry connection, read through
// r after its magic byte, until it fails or the transport closes.
func (t *entryTransport) serve(c net.Conn, r *bufio.Reader) error {
	v, err := r.ReadByte()
	if err != nil {
		return err
	}
	if v != entryVersion {
		c.Write([]byte{0})
		return fmt.Errorf("entry wire version %d", v)
	}
	if _, err := c.Write([]byte{entryVersion}); err != nil {
		return err
	}
	respCh := make(chan raft.RPCResponse, 1)
	var out []byte
	for {
		body, err := readEntryFrame(r, nil)
		if err != nil {
			return err
		}
		req := new(raft.AppendEntriesRequest)
		if err := parseEntryRequest(body, req); err != nil {
			return err
		}
		select {
		case t.consumer <- raft.RPC{Command: req, RespChan: respCh}:
		case <-t.done:
			return nil
		}
		var res raft.RPCResponse
		select {
		case res = <-respCh:
		case <-t.done:
			return nil
		}
		resp, _ := res.Response.(*raft.AppendEntriesResponse)
		if resp == nil && res.Error == nil {
			return errors.New("raft answered an AppendEntries without a response")
		}
		out = appendEntryResponse(append(out[:0], 0, 0, 0, 0), resp, res.Error)
		binary.BigEndian.PutUint32(out, uint32(len(out)-4))
		if _, err := c.Write(out); err != nil {
			return err
		}
	}
}

// readEntryFrame reads one frame's body, into buf when it has room.
func readEntryFrame(r *bufio.Reader, buf []byte) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxEntryFrame {
		return nil, fmt.Errorf("%w: a frame of %d bytes", errEntryWire, n)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// entryConn is a dialed entry connection. One RPC at a time uses it. A
// request is built whole in out and written in one call.
type entryConn struct {
	conn net.Conn
	r    *bufio.Reader
	out  []byte // the request being written
	in   []byte // the answer being read
}

// keptFrame is the most room an idle entryConn keeps for its next request:
// one larger entry does not hold its size for the connection's life.
const keptFrame = 1 << 20

// handshake opens the connection, or returns errLegacyPeer if the peer
// closes it or refuses the version.
func (c *entryConn) handshake(timeout time.Duration) error {
	c.conn.SetDeadline(time.Now().Add(timeout))
	if _, err := c.conn.Write([]byte{entryMagic, entryVersion}); err != nil {
		return err
	}
	v, err := c.r.ReadByte()
	switch {
	case err == nil && v == entryVersion:
		return nil
	case err == nil:
		return errLegacyPeer
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), isReset(err):
		return fmt.Errorf("%w: %v", errLegacyPeer, err)
	default:
		return err
	}
}

// call sends args and reads the answer into resp. It returns the error text
// the peer answered, or err for a connection that must be closed.
func (c *entryConn) call(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse, timeout time.Duration) (string, error) {
	c.conn.SetDeadline(time.Now().Add(timeout))
	c.out = appendEntryRequest(append(c.out[:0], 0, 0, 0, 0), args)
	binary.BigEndian.PutUint32(c.out, uint32(len(c.out)-4))
	_, err := c.conn.Write(c.out)
	if cap(c.out) > keptFrame {
		c.out = nil
	}
	if err != nil {
		return "", err
	}
	if c.in, err = readEntryFrame(c.r, c.in); err != nil {
		return "", err
	}
	return parseEntryResponse(c.in, resp)
}

// entryStream is the stream layer the NetworkTransport accepts from: the
// node's, less the entry connections, which it sorts out and serves.
type entryStream struct {
	*streamLayer
	t      *entryTransport
	others chan net.Conn
	done   chan struct{}
	once   sync.Once
}

func (s *entryStream) Accept() (net.Conn, error) { return acceptFrom(s.others, s.done) }

func (s *entryStream) Close() error {
	s.once.Do(func() { close(s.done) })
	return s.streamLayer.Close()
}

// sort accepts from the node's stream until it closes, and sorts each
// connection by its first byte on a goroutine of its own.
func (s *entryStream) sort() {
	for {
		c, ok := nextConn(s.streamLayer, s.done)
		if !ok {
			return
		}
		if s.t.conns.add(c) {
			go s.route(c)
		} else {
			c.Close()
		}
	}
}

// route serves c here if it opens with entryMagic, and hands it to the
// NetworkTransport otherwise, its first byte replayed.
func (s *entryStream) route(c net.Conn) {
	var first [1]byte
	if _, err := io.ReadFull(c, first[:]); err != nil {
		s.t.conns.remove(c)
		c.Close()
		return
	}
	if first[0] == entryMagic {
		defer s.t.conns.remove(c)
		defer c.Close()
		err := s.t.serve(c, bufio.NewReaderSize(c, 64<<10))
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
			s.t.log.Warn("raft: an entry connection failed", "peer", c.RemoteAddr().String(), "err", err)
		}
		return
	}
	s.t.conns.remove(c)
	select {
	case s.others <- &replayConn{Conn: c, first: first[0]}:
	case <-s.done:
		c.Close()
	}
}

// isReset reports whether err is the peer resetting the connection.
func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
