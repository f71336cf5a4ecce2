package commands

import (
	"math"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/internal/parse"
)

// CL.THROTTLE: a drop-in for the redis-cell module's command (and
// Dragonfly's built-in): the same arguments, the same GCRA, the same reply
// in whole seconds with the same rounding, as an array in RESP2 and RESP3
// alike (redis-cell replies an array in both). Unlike redis-cell it refuses
// negative arguments, zero counts and periods, and parameters whose
// arithmetic would overflow, with an error.

func init() {
	register(&command{
		name: "cl.throttle", arity: -5, maxArgs: 6, flags: flagDecision | flagWrite | flagFast, run: cmdThrottle,
		group: "rate-limit", since: "0.1.0", complexity: "O(1)",
		summary: "redis-cell's GCRA: admits quantity (default 1) at count per period seconds with a burst of " +
			"max_burst+1; replies limited, limit, remaining, retry_after and reset_after in seconds.",
		arguments: []argDoc{
			{name: "key", typ: "key"}, {name: "max_burst", typ: "integer"}, {name: "count", typ: "integer"},
			{name: "period", typ: "integer"}, {name: "quantity", typ: "integer", optional: true},
		},
		keySpecs: []keySpec{keyRange(keyRW|keyAccess|keyUpdate, 1, 0, 1)},
	})
}

// cmdThrottle: CL.THROTTLE key max_burst count period [quantity]
func cmdThrottle(s *session, args [][]byte) {
	// arguments
	limit, err := parseThrottle(args[2], args[3], args[4])
	if err != nil {
		s.rejectDecision(err)
		return
	}
	quantity := int64(1)
	if len(args) == 6 {
		if quantity, err = parseCost(args[5]); err != nil {
			s.rejectDecision(err)
			return
		}
		if quantity < 0 {
			s.rejectDecision(errQuantityNegative)
			return
		}
	}
	// operation: queued; reply: writeThrottle
	s.queueDecision(algorithms.Request{Key: args[1], Limit: limit, N: quantity}, kindThrottle)
}

// parseThrottle reads max_burst, count and period (whole seconds) into a
// Throttle limit: Count = max_burst + 1, Period = period / count in whole
// nanoseconds, rounded down as redis-cell rounds it.
func parseThrottle(burstArg, countArg, periodArg []byte) (algorithms.Limit, error) {
	l := algorithms.Limit{Algo: algorithms.Throttle}
	burst, ok := parse.Int(burstArg)
	if !ok {
		return l, errNotInteger
	}
	if burst < 0 {
		return l, errMaxBurstNegative
	}
	if burst == math.MaxInt64 {
		return l, errMaxBurstRange
	}
	count, err := parsePositive(countArg, "count")
	if err != nil {
		return l, err
	}
	period, err := parsePositive(periodArg, "period")
	if err != nil {
		return l, err
	}
	if period > math.MaxInt64/int64(1e9) {
		return l, errPeriodRange
	}
	interval := period * 1e9 / count
	if interval == 0 {
		return l, errRateTooHigh
	}
	if !algorithms.RefillFits(burst+1, interval) {
		return l, errBurstTooLong
	}
	l.Count, l.Period = burst+1, interval
	return l, nil
}

// writeThrottle writes redis-cell's reply: limited (1 or 0), the limit
// (max_burst+1), remaining, retry_after (-1 unless limited and the request
// can fit some day) and reset_after, both in whole seconds.
func (s *session) writeThrottle(r *algorithms.Result) {
	limited, retry := int64(0), int64(-1)
	if !r.Allowed {
		limited = 1
		if r.RetryAfter >= 0 {
			retry = cellSeconds(r.RetryAfter)
		}
	}
	s.writeArray(5)
	s.writeInt(limited)
	s.writeInt(r.Limit)
	s.writeInt(r.Remaining)
	s.writeInt(retry)
	s.writeInt(cellSeconds(r.ResetAfter))
}

// cellSeconds rounds non-negative nanoseconds to seconds as redis-cell 0.3.1
// and later do: the whole seconds, plus one when the millisecond part is
// above zero (so 2.0009 s is 2 and 2.001 s is 3).
func cellSeconds(ns int64) int64 {
	s := ns / 1e9
	if ns%1e9/1e6 > 0 {
		s++
	}
	return s
}
