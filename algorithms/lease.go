package algorithms

// LeaseLimit is a concurrency limit: at most Limit holders at once, each
// holding a lease that ends Lease nanoseconds after it was last acquired,
// so that the slot of a holder that died comes back by itself.
//
// Holders are named by a 64-bit id (the keyspace hashes the caller's
// request id). Acquiring with an id that holds a lease renews it and takes
// no new slot, so a retried acquire is safe.
//
// The zero value is not valid; the edge validates Limit ≥ 1 and Lease ≥ 1
// and bounds Limit, since the state holds one lease per holder.
type LeaseLimit struct {
	Limit int64 // holders at once
	Lease int64 // ns
}

// LeaseState is a limit's whole state: the leases, as pairs of int64 in no
// particular order: the holder's id (a uint64's bits) and the instant its
// lease ends. A lease counts while now < its end. No live lease is the same
// as no state; the zero value is that.
//
// Take rewrites Leases in place when it changes anything: the caller hands
// the slice over and keeps the state Take returns.
type LeaseState struct {
	Leases []int64
}

// Lease operations, the n of a Concurrency request.
const (
	LeaseAcquire = 1
	LeasePeek    = 0
	LeaseRelease = -1
)

// leaseScan is what one read of the leases finds at now.
type leaseScan struct {
	live     int64 // leases that have not ended
	found    bool  // id holds one of them
	earliest int64 // the earliest end among them
}

func (l LeaseLimit) scan(s LeaseState, now int64, id uint64) leaseScan {
	sc := leaseScan{earliest: NeverNS}
	for i := 0; i+1 < len(s.Leases); i += 2 {
		end := s.Leases[i+1]
		if end <= now {
			continue
		}
		sc.live++
		if uint64(s.Leases[i]) == id {
			sc.found = true
		}
		if sc.earliest == NeverNS || end < sc.earliest {
			sc.earliest = end
		}
	}
	return sc
}

// Take applies op (LeaseAcquire, LeaseRelease or LeasePeek) for id at now.
//
//   - Acquire is admitted if id holds a lease (renewed to now + Lease) or
//     fewer than Limit leases are live (a new one is added). A denial
//     changes nothing; RetryAfter is the time until the earliest lease ends.
//   - Release ends id's lease; Allowed reports whether there was one.
//   - Peek changes nothing.
//
// Remaining is the free slots after the call (0 at worst), ResetAfter the
// time until the last lease ends (0 when none is left). Ended leases are
// dropped whenever the state is rewritten.
//
// Take is deterministic and reads no clock; when it changes the state it
// rewrites s.Leases in place (or appends to it), so the caller must keep the
// returned state and treat s as consumed.
func (l LeaseLimit) Take(s LeaseState, now int64, id uint64, op int64) (Result, LeaseState) {
	sc := l.scan(s, now, id)
	r := Result{Allowed: true, Limit: l.Limit}
	change := false
	switch {
	case op == LeasePeek:
	case op < 0:
		r.Allowed, change = sc.found, sc.found
	case sc.found || sc.live < l.Limit:
		change = true
	default:
		r.Allowed, r.RetryAfter = false, sc.earliest-now
	}
	if !change {
		r.Remaining = max(l.Limit-sc.live, 0)
		r.ResetAfter = l.lastEnd(s, now) - now
		return r, s
	}
	// Rewrite in place: keep the live leases but id's, then add id's anew.
	kept := s.Leases[:0]
	last := now
	for i := 0; i+1 < len(s.Leases); i += 2 {
		who, end := s.Leases[i], s.Leases[i+1]
		if end <= now || uint64(who) == id {
			continue
		}
		kept = append(kept, who, end)
		last = max(last, end)
	}
	if op > 0 {
		end := addSat(now, l.Lease)
		kept = append(kept, int64(id), end)
		last = max(last, end)
	}
	if len(kept) == 0 {
		kept = nil
	}
	r.Remaining = max(l.Limit-int64(len(kept)/2), 0)
	r.ResetAfter = last - now
	return r, LeaseState{Leases: kept}
}

// lastEnd returns the latest end among the live leases, now if none.
func (l LeaseLimit) lastEnd(s LeaseState, now int64) int64 {
	last := now
	for i := 1; i < len(s.Leases); i += 2 {
		last = max(last, s.Leases[i])
	}
	return last
}

// Holders returns the number of leases live at now.
func (s LeaseState) Holders(now int64) int64 {
	var n int64
	for i := 1; i < len(s.Leases); i += 2 {
		if s.Leases[i] > now {
			n++
		}
	}
	return n
}
