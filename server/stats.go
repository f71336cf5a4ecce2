package server

// Stats are the transport's figures, for INFO: its counters since it
// started, the clients' memory as last accounted, and the limits in force.
type Stats struct {
	Clients        int   // connections being served
	Connections    int64 // accepted since start (refused ones included)
	Rejected       int64 // refused at MaxClients
	ProtocolErrors int64 // broken frames answered and closed
	Panics         int64 // Handler panics recovered
	EvictedClients int64 // closed for MaxMemoryClients
	NetIn, NetOut  int64 // bytes read and written
	Reads, Writes  int64 // reads and writes (system calls) that moved bytes

	// ClientMemory is what every client's buffers and sessions hold;
	// EvictingMemory the part of it held by clients chosen for eviction
	// and not yet closed.
	ClientMemory, EvictingMemory int64
	// MaxQueryBuffer and MaxOutputBuffer are the largest buffers among the
	// clients, as last accounted.
	MaxQueryBuffer, MaxOutputBuffer int64

	MaxClients       int
	MaxMemoryClients int64 // 0: no limit
	EventLoops       int   // 0: a goroutine per client
	Port             string
}

// Stats returns the transport's figures at this moment: the live
// connections' counts added to those of the ones that left.
func (s *Server) Stats() Stats {
	st := Stats{
		Connections:      s.stats.connections.Load(),
		Rejected:         s.stats.rejected.Load(),
		ProtocolErrors:   s.stats.protoErrors.Load(),
		Panics:           s.stats.panics.Load(),
		EvictedClients:   s.stats.evictedClients.Load(),
		NetIn:            s.stats.netIn.Load(),
		NetOut:           s.stats.netOut.Load(),
		Reads:            s.stats.reads.Load(),
		Writes:           s.stats.writes.Load(),
		MaxClients:       int(s.live.maxClients.Load()),
		MaxMemoryClients: s.cfg.MaxMemoryClients,
		EventLoops:       s.cfg.EventLoops,
		Port:             s.port(),
	}
	s.mu.Lock()
	st.Clients = len(s.conns)
	st.ClientMemory = s.clientMem.Load()
	st.EvictingMemory = s.evictingMem
	for _, c := range s.conns {
		st.NetIn += c.netIn.Load()
		st.NetOut += c.netOut.Load()
		st.Reads += c.reads.Load()
		st.Writes += c.writes.Load()
		st.MaxQueryBuffer = max(st.MaxQueryBuffer, c.memIn.Load())
		st.MaxOutputBuffer = max(st.MaxOutputBuffer, c.memOut.Load())
	}
	s.mu.Unlock()
	return st
}
