package client

import (
	"math/bits"
	"time"
)

// Algorithm names the algorithm that carries a limit out. Its String is the name RL.ALL takes.
type Algorithm uint8

const (
	AlgoToken   Algorithm = iota + 1 // a token bucket: RL.TOKEN
	AlgoLeaky                        // a leaky bucket as a queue: RL.LEAKY
	AlgoFixed                        // a fixed window counter: RL.FIXED
	AlgoSliding                      // a sliding window counter: RL.SLIDING
	AlgoLog                          // a sliding window log: RL.LOG
	AlgoPolicy                       // a named policy of the server: RL.CHECK
)

var algoNames = [...]string{AlgoToken: "TOKEN", AlgoLeaky: "LEAKY", AlgoFixed: "FIXED",
	AlgoSliding: "SLIDING", AlgoLog: "LOG", AlgoPolicy: "POLICY"}

// The decision command of each algorithm, boxed once so that a call does not allocate to box it.
var algoCommands = [...]any{AlgoToken: "RL.TOKEN", AlgoLeaky: "RL.LEAKY", AlgoFixed: "RL.FIXED",
	AlgoSliding: "RL.SLIDING", AlgoLog: "RL.LOG", AlgoPolicy: cmdCheck}

func (a Algorithm) String() string {
	if int(a) < len(algoNames) && algoNames[a] != "" {
		return algoNames[a]
	}
	return "INVALID"
}

// Limit is one limit on one key: an algorithm and its parameters, as Token, Leaky, Fixed,
// Sliding, Log and Policy build it. Client.Decide and Client.Wait decide one; Client.All decides
// several atomically. The zero Limit is invalid. A Limit is a small value, safe to copy and to
// share between goroutines.
type Limit struct {
	algo   Algorithm
	key    string // the key, or a policy's subject
	policy string
	rate   Rate
	count  int64 // capacity of a bucket, limit of a window
	window time.Duration
}

// Token is a token bucket on key: it holds burst tokens and refills at rate (RL.TOKEN).
func Token(key string, rate Rate, burst int64) Limit {
	return Limit{algo: AlgoToken, key: key, rate: rate, count: burst}
}

// Leaky is a leaky bucket on key, as a queue that drains at rate and holds capacity units
// (RL.LEAKY): an admitted decision's RetryAfter is how long to wait before acting.
func Leaky(key string, rate Rate, capacity int64) Limit {
	return Limit{algo: AlgoLeaky, key: key, rate: rate, count: capacity}
}

// Fixed is a fixed window counter on key: limit units per window, windows aligned to the Unix
// epoch (RL.FIXED). window is a whole number of milliseconds.
func Fixed(key string, limit int64, window time.Duration) Limit {
	return Limit{algo: AlgoFixed, key: key, count: limit, window: window}
}

// Sliding is a sliding window counter on key (RL.SLIDING).
func Sliding(key string, limit int64, window time.Duration) Limit {
	return Limit{algo: AlgoSliding, key: key, count: limit, window: window}
}

// Log is an exact sliding window log on key (RL.LOG).
func Log(key string, limit int64, window time.Duration) Limit {
	return Limit{algo: AlgoLog, key: key, count: limit, window: window}
}

// Policy is the server's named policy applied to subject (RL.CHECK policy subject).
func Policy(policy, subject string) Limit {
	return Limit{algo: AlgoPolicy, key: subject, policy: policy}
}

// Algorithm returns the limit's algorithm.
func (l Limit) Algorithm() Algorithm { return l.algo }

// Key returns the key the limit's state lives under (a policy's subject).
func (l Limit) Key() string { return l.key }

// PolicyName returns the policy of a Policy limit, "" for the others.
func (l Limit) PolicyName() string { return l.policy }

// WithKey returns the same limit on another key (another subject of a policy).
func (l Limit) WithKey(key string) Limit { l.key = key; return l }

// Rate returns the rate of a token or leaky bucket.
func (l Limit) Rate() Rate { return l.rate }

// Quota returns the units the limit allows at once: a bucket's capacity, a window's limit; 0
// for a policy, whose parameters the server holds.
func (l Limit) Quota() int64 { return l.count }

// Window returns the time over which Quota applies: a window's length, or for a bucket the time
// it takes to refill from empty (capacity × period / count of the rate, rounded up to the
// nanosecond, so that 7 per hour with a burst of 7 is exactly an hour); 0 for a policy or a
// window too long for a time.Duration.
func (l Limit) Window() time.Duration {
	switch l.algo {
	case AlgoToken, AlgoLeaky:
		if !l.rate.Valid() || l.count <= 0 {
			return 0
		}
		hi, lo := bits.Mul64(uint64(l.count), uint64(l.rate.per))
		if hi >= uint64(l.rate.n) {
			return 0
		}
		q, rem := bits.Div64(hi, lo, uint64(l.rate.n))
		if rem != 0 {
			q++
		}
		if q > 1<<63-1 {
			return 0
		}
		return time.Duration(q)
	case AlgoFixed, AlgoSliding, AlgoLog:
		return l.window
	}
	return 0
}

// Valid reports whether the limit can be sent: a known algorithm with positive parameters that
// the server's syntax carries exactly.
func (l Limit) Valid() bool { return l.valid() }

// valid reports whether the limit can be sent: a known algorithm with positive parameters that
// the server's syntax carries exactly (a rate, a count, a window of whole milliseconds).
func (l Limit) valid() bool {
	switch l.algo {
	case AlgoToken, AlgoLeaky:
		return l.count > 0 && l.rate.Valid()
	case AlgoFixed, AlgoSliding, AlgoLog:
		return l.count > 0 && validWindow(l.window)
	case AlgoPolicy:
		return l.policy != ""
	}
	return false
}

// validWindow reports whether d is a duration the server takes: positive, whole milliseconds.
func validWindow(d time.Duration) bool { return d > 0 && d%time.Millisecond == 0 }

// appendParams appends the limit's two parameters (rate capacity, or limit window) to a.
func (l *Limit) appendParams(a *argv) {
	switch l.algo {
	case AlgoToken, AlgoLeaky:
		a.rate(l.rate)
	default:
		a.int(l.count)
		a.duration(l.window)
		return
	}
	a.int(l.count)
}
