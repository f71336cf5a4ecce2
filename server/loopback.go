package server

// Loopback connections run a Handler on bytes, without a socket: Feed
// hands a connection input as if it had arrived from a client, and returns
// the replies. Tests and benchmarks of handlers use them; they take the
// same path as a socket's input (the reader, the batch, EndBatch, the
// memory accounting), and count among the server's clients until Hangup.

// Loopback returns a new connection of s that no socket serves, its
// Handler's Open done. It fails like a refused client at MaxClients, and
// after Shutdown.
func (s *Server) Loopback() (*Conn, error) {
	if !s.admitLoopback() {
		return nil, errMaxClients
	}
	c := newConn(s, nil, s.nextID.Add(1))
	c.addr, c.laddr, c.local = "loopback", "loopback", true
	if !c.open() {
		s.mu.Lock()
		s.joins--
		s.mu.Unlock()
		s.wg.Done()
		return nil, errInternal
	}
	s.closeEvicted(nil, s.register(c, func() {}))
	return c, nil
}

func (s *Server) admitLoopback() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || int64(len(s.conns)+s.joins) >= s.live.maxClients.Load() {
		return false
	}
	s.joins++
	s.wg.Add(1)
	return true
}

// Feed runs in through the connection as one read's worth of input per
// buffer's worth: every complete command runs, a batch at a time, and an
// unfinished one waits for the next Feed. It returns the replies, valid
// until the next Feed, and whether the connection is closed (QUIT, a
// protocol error, CLIENT KILL, eviction), after which Feed does nothing.
// The caller is the connection's owner: one goroutine at a time.
func (c *Conn) Feed(in []byte) (out []byte, closed bool) {
	c.sink = c.sink[:0]
	for len(in) > 0 && !c.closing && !c.killed.Load() {
		if err := c.roomToRead(); err == errClientEvicted {
			c.closing = true
			break
		} else if err != nil {
			c.protocolError(err)
			c.flush()
			break
		}
		n := copy(c.in[c.end:], in)
		in = in[n:]
		c.end += n
		c.netIn.Add(int64(n))
		c.reads.Add(1)
		c.runBatch()
		if c.settle(0) == errClientEvicted {
			c.closing = true
		}
		c.flush()
	}
	c.netOut.Add(int64(len(c.sink)))
	if len(c.sink) > 0 {
		c.writes.Add(1)
	}
	return c.sink, c.closing || c.killed.Load()
}

// Hangup ends a loopback connection: it leaves the server's list and its
// Handler's Close runs. It does nothing the second time.
func (c *Conn) Hangup() {
	if c.conn != nil || c.loop != nil || c.hungUp {
		return
	}
	c.hungUp = true
	c.srv.removeConn(c)
}
