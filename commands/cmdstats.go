package commands

import (
	"math"
	"sync/atomic"
)

// Per-command figures (INFO commandstats, the metrics endpoint) counted
// without cost on the hot path.
//
// A session counts the commands of the batch in hand in plain fields (a
// few slots, one per distinct command of the batch). At the end of the
// batch it adds them to its lane's stripe: one stripe per event loop, so
// the adds of different loops never touch the same cache line; clients
// served by goroutines of their own share the stripes by connection id.
// Readers sum the stripes. The clock is read once more per batch, at its
// end, never per command: every command of a batch is timed with the
// batch's time, from the transport's read of it (Conn.Now) to its replies
// being ready (the time its reply
// waited inside the server), and its share of that time (the batch's time
// divided among its commands) is what commandstats' usec adds up.

const (
	statStripes = 16 // lanes beyond this share stripes
	statSlots   = 4  // distinct commands counted in one batch before the slots are flushed
	// The latency buckets: 1µs·2^(k/4) for k = 0..84 (1µs … 2.1s, four
	// per doubling: a percentile read from them is within 19% of the
	// truth), then +Inf.
	latPerDoubling = 4
	latBuckets     = 21*latPerDoubling + 1
)

// latBounds are the buckets' upper bounds in ns.
var latBounds = func() [latBuckets]int64 {
	var b [latBuckets]int64
	for k := range b {
		b[k] = int64(math.Round(1000 * math.Pow(2, float64(k)/latPerDoubling)))
	}
	return b
}()

// The command families latency histograms are kept for.
var families = []string{"decision", "rate-limit", "connection", "generic", "server", "cluster"}

// familyOf returns the index in families of cmd's family: decisions
// (RL.* that decide, CL.THROTTLE, RL.ALL) apart from the rest of their
// group.
func familyOf(cmd *command) int {
	if cmd.flags&flagDecision != 0 {
		return 0
	}
	for i, f := range families[1:] {
		if cmd.group == f {
			return i + 1
		}
	}
	return len(families) - 2 // server
}

// cmdSlot counts one command within a batch (owner only).
type cmdSlot struct {
	cmd                                      *command
	calls, rejected, failed, allowed, denied int32 // within one batch
}

// cmdCounters are one command's figures in a stripe, with its latency
// histogram: counts per bucket (the last one +Inf) and the sum of the
// observed times.
type cmdCounters struct {
	rejected, failed, allowed, denied, nanos atomic.Int64
	lat                                      [latBuckets + 1]atomic.Int64 // their sum is the calls
	latSum                                   atomic.Int64                 // ns
}

// stripe is one lane's figures. Padding keeps stripes off each other's
// cache lines.
type stripe struct {
	_    [64]byte
	cmds []cmdCounters // by command index
	_    [64]byte
}

// cmdStats are a Handler's per-command figures.
type cmdStats struct {
	stripes [statStripes]stripe
}

func newCmdStats() *cmdStats {
	st := &cmdStats{}
	for i := range st.stripes {
		st.stripes[i].cmds = make([]cmdCounters, len(statCommands()))
	}
	return st
}

// latBucket returns the histogram bucket of a time in ns: the first
// whose bound is not below it, or latBuckets for longer ones.
func latBucket(ns int64) int {
	lo, hi := 0, latBuckets
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if latBounds[m] < ns {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// slotFor returns the index of the batch slot counting cmd, flushing the
// slots when they are full (owner only). The session refers to slots by
// index plus one (0: none), not by pointer: an integer store costs no
// write barrier on the per-command path.
func (s *session) slotFor(cmd *command) int {
	if l := s.last; l != 0 && s.slots[l-1].cmd == cmd {
		return l - 1
	}
	return s.findSlot(cmd)
}

// findSlot is slotFor's search, out of line so that slotFor inlines.
func (s *session) findSlot(cmd *command) int {
	for i := 0; i < s.nslots; i++ {
		if s.slots[i].cmd == cmd {
			s.last = i + 1
			return i
		}
	}
	if s.nslots == statSlots {
		s.flushStats()
		s.batchStart = s.h.clock.realNow()
	}
	i := s.nslots
	s.nslots++
	s.slots[i] = cmdSlot{cmd: cmd}
	s.last = i + 1
	return i
}

// flushStats adds the slots to the session's stripe, with the time since
// the batch's first command, and empties them (owner only).
func (s *session) flushStats() {
	s.flushPolicies()
	if s.nslots == 0 {
		return
	}
	dur := max(s.h.clock.realNow()-s.batchStart, 0) // DEBUG CLOCK may have moved between the two reads
	var total int64
	for i := 0; i < s.nslots; i++ {
		total += int64(s.slots[i].calls)
	}
	st := s.h.stats
	lane := s.conn.Lane()
	if lane < 0 {
		lane = int(s.conn.ID())
	}
	sp := &st.stripes[lane%statStripes]
	if s.h.slowlog.slow(dur) {
		s.h.slowlog.add(s, dur, total)
	}
	b := latBucket(dur)
	for i := 0; i < s.nslots; i++ {
		sl := &s.slots[i]
		c := &sp.cmds[sl.cmd.idx]
		if sl.calls > 0 {
			c.nanos.Add(dur * int64(sl.calls) / total)
			c.lat[b].Add(int64(sl.calls))
			c.latSum.Add(dur * int64(sl.calls))
		}
		if sl.rejected > 0 {
			c.rejected.Add(int64(sl.rejected))
		}
		if sl.failed > 0 {
			c.failed.Add(int64(sl.failed))
		}
		if sl.allowed > 0 {
			c.allowed.Add(int64(sl.allowed))
		}
		if sl.denied > 0 {
			c.denied.Add(int64(sl.denied))
		}
	}
	s.nslots, s.cur, s.last, s.batchStart = 0, 0, 0, 0
}

// countDecision counts a decision, for the session's totals and the
// command whose slot is current.
func (s *session) countDecision(allowed bool) {
	if allowed {
		s.allowed++
		if s.cur != 0 {
			s.slots[s.cur-1].allowed++
		}
		return
	}
	s.denied++
	if s.cur != 0 {
		s.slots[s.cur-1].denied++
	}
}

// restoreSlot makes the slot of command cmd (its index plus one; 0: none)
// current again after the queue was carried out in the middle of it.
func (s *session) restoreSlot(cmd int) {
	s.cur = 0
	if cmd != 0 {
		s.cur = s.slotFor(statList[cmd-1]) + 1
	}
}
