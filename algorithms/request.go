package algorithms

// Limit names an algorithm and its parameters: what a decision command asks
// for, independent of the key. Count and Period mean, per algorithm:
//
//	Token: Count = capacity, Period = interval between tokens (ns)
type Limit struct {
	Algo   Algo
	Count  int64
	Period int64
}

// TokenBucket returns the token bucket l describes (l.Algo must be Token).
func (l Limit) TokenBucket() TokenBucket {
	return TokenBucket{Interval: l.Period, Capacity: l.Count}
}

// Request is one decision as the edge hands it to a keyspace: apply Limit
// with cost N to Key. Key is only valid for the duration of the call.
type Request struct {
	Key   []byte
	Limit Limit
	N     int64
}

// Outcome is a Request's answer: a Result, or an error whose text is a
// Redis-style reply error (WRONGTYPE …, OOM …, TRYAGAIN …).
type Outcome struct {
	Result Result
	Err    error
}
