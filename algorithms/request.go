package algorithms

// Limit names an algorithm and its parameters: what a decision command asks
// for, independent of the key. Count and Period mean, per algorithm:
//
//	Token:       Count = capacity,     Period = interval between tokens (ns)
//	Leaky:       Count = capacity,     Period = interval between units (ns)
//	Fixed:       Count = limit,        Period = window (ns)
//	Sliding:     Count = limit,        Period = window (ns)
//	Log:         Count = limit,        Period = window (ns)
//	Concurrency: Count = limit,        Period = lease (ns)
//	Throttle:    Count = max_burst+1,  Period = emission interval (ns)
//
// The edge validates them: Count ≥ 1 and Period ≥ 1.
type Limit struct {
	Algo   Algo
	Count  int64
	Period int64
}

// TokenBucket returns the token bucket l describes (l.Algo must be Token).
func (l Limit) TokenBucket() TokenBucket {
	return TokenBucket{Interval: l.Period, Capacity: l.Count}
}

// LeakyBucket returns the leaky bucket l describes (l.Algo must be Leaky).
func (l Limit) LeakyBucket() LeakyBucket {
	return LeakyBucket{Interval: l.Period, Capacity: l.Count}
}

// FixedWindow returns the fixed window l describes (l.Algo must be Fixed).
func (l Limit) FixedWindow() FixedWindow {
	return FixedWindow{Limit: l.Count, Window: l.Period}
}

// SlidingWindow returns the sliding window l describes (l.Algo must be
// Sliding).
func (l Limit) SlidingWindow() SlidingWindow {
	return SlidingWindow{Limit: l.Count, Window: l.Period}
}

// SlidingLog returns the sliding log l describes (l.Algo must be Log).
func (l Limit) SlidingLog() SlidingLog {
	return SlidingLog{Limit: l.Count, Window: l.Period}
}

// LeaseLimit returns the concurrency limit l describes (l.Algo must be
// Concurrency).
func (l Limit) LeaseLimit() LeaseLimit {
	return LeaseLimit{Limit: l.Count, Lease: l.Period}
}

// CellThrottle returns the redis-cell limiter l describes (l.Algo must be
// Throttle).
func (l Limit) CellThrottle() CellThrottle {
	return CellThrottle{Interval: l.Period, Limit: l.Count}
}

// Request is one decision as the edge hands it to a keyspace: apply Limit
// with cost N to Key. Key and ID are only valid for the duration of the call.
type Request struct {
	Key   []byte
	Limit Limit
	// N is the cost: > 0 takes, 0 peeks (writes nothing), < 0 refunds. For
	// Concurrency it is the operation: 1 acquires (or renews) the lease ID,
	// -1 releases it, 0 peeks.
	N int64
	// Group makes consecutive requests with the same nonzero Group one
	// all-or-nothing decision (RL.ALL): either every one of them is admitted
	// and carried out, or none changes anything. Requests with Group 0 are
	// independent. Two groups that follow each other in one call must have
	// different values.
	Group int32
	// Min, when > 0, makes the request a take (RL.TAKE): N ≥ Min is the
	// most to take, and the request takes the largest amount g in [Min, N]
	// that the state holds at the decision, or is denied if it holds less
	// than Min (Result.Granted is g). Only Leasable algorithms take; a
	// keyspace refuses the others with ErrNotLeasable's text.
	Min int64
	// ID is the lease holder's id (Concurrency only); the keyspace hashes it
	// to the 64 bits the algorithm keeps.
	ID []byte
	// Override, if not nil, is the key of the subject's override of a
	// named policy (RL.CHECK): when an override is live there at the
	// decision, it decides instead of Limit (its own limit, always
	// admitted, or always refused; Result.Override says which), and a
	// limiter's state of another algorithm under Key starts afresh instead
	// of failing with WRONGTYPE. Only valid for the duration of the call.
	Override []byte
}

// Outcome is a Request's answer: a Result, or an error whose text is a
// Redis-style reply error (WRONGTYPE …, OOM …, UNKNOWN …).
type Outcome struct {
	Result Result
	Err    error
}

// Watch is a key a transaction watches (WATCH): the transaction is carried
// out only if Key's state version is still Version. A keyspace hands out
// versions (0 for an absent key) and compares them; Key is only valid for
// the duration of the call.
type Watch struct {
	Key     []byte
	Version uint64
}
