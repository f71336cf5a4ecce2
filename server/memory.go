package server

import "unsafe"

// Client memory (maxmemory-clients, as Redis 7 has it): every client's
// buffers, and what its Handler holds for it (Conn.SetSessionBytes), count
// towards one server-wide total, and past the cap the clients holding the
// most are closed, largest first, until the others fit.
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

// The sizes of a connection and of the elements of its tables, for its
// footprint.
const (
	connSize  = int64(unsafe.Sizeof(Conn{}))
	sliceSize = int64(unsafe.Sizeof([]byte(nil)))
	intSize   = int64(unsafe.Sizeof(int(0)))
	// baseFootprint is about what a new, idle client holds, its session
	// included (SessionEstimate).
	baseFootprint = connSize + initialIn + SessionEstimate
)

// SessionEstimate is what the transport counts for a new connection's
// session before its first batch reports its footprint: a handler's session
// should stay within it (commands' holds about 600 bytes: its deferred
// queue, transaction state and per-batch statistics).
const SessionEstimate = 1024

// footprint is the bytes c's buffers and tables hold: the query buffer, the
// replies, the parsed arguments, and the session as the Handler reported
// it. It requires c's owner.
func (c *Conn) footprint() int64 {
	return connSize + int64(len(c.in)+cap(c.Out)+cap(c.scratch)+cap(c.sink)) +
		int64(cap(c.args))*sliceSize + int64(cap(c.rs.offs))*intSize + c.sessionBytes
}

// settle accounts a change of c's footprint, counting grow more bytes of
// query buffer that c is about to allocate. It returns errClientEvicted if
// c has been chosen for eviction (then c must not allocate, and its owner
// closes it). It requires c's owner.
func (c *Conn) settle(grow int64) error {
	want := c.footprint() + grow
	if want == c.mem.Load() {
		return nil
	}
	return c.srv.account(c, want, int64(len(c.in))+grow)
}

// account records that c holds want bytes, of which in are query buffer,
// and closes clients, largest first, while the clients not already being
// closed hold more than the cap. It is called by c's owner only.
func (s *Server) account(c *Conn, want, in int64) error {
	s.mu.Lock()
	delta := want - c.mem.Load()
	c.mem.Store(want)
	c.memIn.Store(in)
	c.memOut.Store(int64(cap(c.Out)))
	s.clientMem.Add(delta)
	if c.evicted {
		s.evictingMem += delta
	}
	var victims []*Conn
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
func (s *Server) evictLocked() []*Conn {
	limit := s.cfg.MaxMemoryClients
	if limit <= 0 {
		return nil
	}
	var victims []*Conn
	for s.clientMem.Load()-s.evictingMem > limit {
		var v *Conn
		for _, o := range s.conns {
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

// evictNow chooses the clients to evict after c became evictable again
// (CLIENT NO-EVICT off), closes the others, and reports whether c is one of
// them. It is called by c's owner.
func (s *Server) evictNow(c *Conn) bool {
	s.mu.Lock()
	victims := s.evictLocked()
	self := c.evicted
	s.mu.Unlock()
	s.closeEvicted(c, victims)
	return self
}

// closeEvicted logs each victim and asks its owner to close it; self, the
// client whose owner is calling, closes by the error its caller gets.
// It must be called without s.mu.
func (s *Server) closeEvicted(self *Conn, victims []*Conn) {
	for _, v := range victims {
		s.log.Warn("client evicted: the clients' buffers passed maxmemory-clients",
			"client", v.id, "addr", v.addr, "client_memory", v.mem.Load(),
			"clients_memory", s.clientMem.Load(), "maxmemory_clients", s.cfg.MaxMemoryClients)
		if v != self {
			v.evict()
		}
	}
}
