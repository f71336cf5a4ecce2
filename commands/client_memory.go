package commands

import (
	"unsafe"

	"github.com/sluice-rl/sluice/algorithms"
)

// Client memory (maxmemory-clients, as Redis 7 has it): every client's
// buffers count towards one server-wide total, and past the cap the
// clients holding the most are closed, largest first, until the others fit.
//
// Accounting is cheap on the hot path. A client compares its footprint with
// what it last accounted (one field of its own, no shared write) when it
// makes room to read and after each batch; only a change (a buffer that
// grew or shrank, which a client whose input stays within its first 16 KiB
// does a few times in its life) takes the server's lock. A growing query
// buffer is accounted before it is allocated, so that the eviction runs
// first: the clients not being closed never hold more than the cap, and the
// total, which still counts the clients being closed until their owners
// (event loop or goroutine) have let them go, passes it for no longer than
// that takes.

// The sizes of the elements of a client's tables, for its footprint.
const (
	clientSize  = int64(unsafe.Sizeof(Client{}))
	sliceSize   = int64(unsafe.Sizeof([]byte(nil)))
	intSize     = int64(unsafe.Sizeof(int(0)))
	requestSize = int64(unsafe.Sizeof(algorithms.Request{}))
	outcomeSize = int64(unsafe.Sizeof(algorithms.Outcome{}))
	// baseFootprint is about what a new, idle client holds.
	baseFootprint = clientSize + initialIn + 32
)

// footprint is the bytes c's buffers and tables hold: the query buffer, the
// replies, the parsed arguments and the batch's pending decisions. It
// requires c's owner (the goroutine serving c).
func (c *Client) footprint() int64 {
	return clientSize + int64(len(c.in)+cap(c.out)+cap(c.scratch)+cap(c.lastRate)+cap(c.replies)) +
		int64(cap(c.args)+cap(c.forwards))*sliceSize + int64(cap(c.rs.offs))*intSize +
		int64(cap(c.pending))*requestSize + int64(cap(c.outcomes))*outcomeSize
}

// settle accounts a change of c's footprint, counting grow more bytes of
// query buffer that c is about to allocate. It returns errClientEvicted if
// c has been chosen for eviction (then c must not allocate, and its owner
// closes it). It requires c's owner.
func (c *Client) settle(grow int64) error {
	want := c.footprint() + grow
	if want == c.mem.Load() {
		return nil
	}
	return c.srv.account(c, want, int64(len(c.in))+grow)
}

// account records that c holds want bytes, of which in are query buffer,
// and closes clients, largest first, while the clients not already being
// closed hold more than the cap. It is called by c's owner only.
func (s *Server) account(c *Client, want, in int64) error {
	s.mu.Lock()
	delta := want - c.mem.Load()
	c.mem.Store(want)
	c.memIn.Store(in)
	c.memOut.Store(int64(cap(c.out)))
	s.clientMem.Add(delta)
	if c.evicted {
		s.evictingMem += delta
	}
	var victims []*Client
	if delta > 0 {
		victims = s.evictLocked()
	}
	self := c.evicted
	s.mu.Unlock()
	s.closeEvicted(c, victims)
	if self {
		return errClientEvicted
	}
	return nil
}

// evictLocked chooses the clients to close: the one holding the most, then
// the next, while the clients not being closed hold more than the cap.
// Clients with CLIENT NO-EVICT on count towards the total but are never
// chosen. It requires s.mu.
func (s *Server) evictLocked() []*Client {
	limit := s.cfg.MaxMemoryClients
	if limit <= 0 {
		return nil
	}
	var victims []*Client
	for s.clientMem.Load()-s.evictingMem > limit {
		var v *Client
		for _, o := range s.clients {
			if !o.evicted && !o.noEvict.Load() && (v == nil || o.mem.Load() > v.mem.Load()) {
				v = o
			}
		}
		if v == nil {
			break // only exempt clients are left
		}
		v.evicted = true
		s.evictingMem += v.mem.Load()
		s.stats.evictedClients.Add(1)
		victims = append(victims, v)
	}
	return victims
}

// closeEvicted logs each victim and asks its owner to close it; self, the
// client whose owner is calling, closes by the error its caller gets.
// It must be called without s.mu.
func (s *Server) closeEvicted(self *Client, victims []*Client) {
	for _, v := range victims {
		s.log.Warn("client evicted: the clients' buffers passed maxmemory-clients",
			"client", v.id, "addr", v.addr, "client_memory", v.mem.Load(),
			"clients_memory", s.clientMem.Load(), "maxmemory_clients", s.cfg.MaxMemoryClients)
		if v != self {
			v.evict()
		}
	}
}

// evict closes c from any goroutine, dropping whatever it was doing: an
// evicted client gets no reply, as in Redis.
func (c *Client) evict() {
	if c.loop != nil {
		c.loop.kill(c)
		return
	}
	c.conn.Close() // its goroutine's read or write fails, and it leaves
}

// setNoEvict sets CLIENT NO-EVICT. Turned off, c may be chosen at once if
// the clients are over the cap.
func (c *Client) setNoEvict(on bool) {
	c.noEvict.Store(on)
	if on {
		return
	}
	s := c.srv
	s.mu.Lock()
	victims := s.evictLocked()
	self := c.evicted
	s.mu.Unlock()
	s.closeEvicted(c, victims)
	if self {
		c.closing = true
	}
}

// clientBuffers returns the largest query buffer and output buffer among
// the connected clients, as last accounted.
func (s *Server) clientBuffers() (in, out int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.clients {
		in = max(in, c.memIn.Load())
		out = max(out, c.memOut.Load())
	}
	return in, out
}
