package commands

import (
	"github.com/sluice-rl/sluice/algorithms"
	"github.com/tidwall/redcon"
)

// The decision commands with the shared five-field reply: RL.TOKEN,
// RL.LEAKY, RL.FIXED, RL.SLIDING and RL.LOG. Each parses its arguments into
// a Request and queues it; the batch's decisions are carried out together
// and each reply is written by writeDecision.

func init() {
	rateArgs := []argDoc{
		{name: "key", typ: "key"}, {name: "rate", typ: "string"}, {name: "capacity", typ: "integer"},
		{name: "n", typ: "integer", optional: true},
	}
	windowArgs := []argDoc{
		{name: "key", typ: "key"}, {name: "limit", typ: "integer"}, {name: "window", typ: "string"},
		{name: "n", typ: "integer", optional: true},
	}
	decision := func(name string, run func(*session, [][]byte), summary, complexity string, args []argDoc) *command {
		return &command{
			name: name, arity: -4, maxArgs: 5, flags: flagDecision | flagWrite | flagFast, run: run,
			group: "rate-limit", since: "0.1.0", complexity: complexity, summary: summary, arguments: args,
			keySpecs: []keySpec{keyRange(keyRW|keyAccess|keyUpdate, 1, 0, 1)},
		}
	}
	register(
		decision("rl.token", cmdToken, "Token bucket: takes n tokens (default 1) from a bucket of capacity "+
			"tokens that refills at rate.", "O(1)", rateArgs),
		decision("rl.leaky", cmdLeaky, "Leaky bucket as a queue: queues n units (default 1) in a queue of "+
			"capacity units that drains at rate; retry_after_ms is how long to wait before acting.", "O(1)", rateArgs),
		decision("rl.fixed", cmdFixed, "Fixed window: counts n units (default 1) against limit per window, "+
			"windows aligned to the Unix epoch.", "O(1)", windowArgs),
		decision("rl.sliding", cmdSliding, "Sliding window counter: current + previous x overlap against limit "+
			"per window.", "O(1)", windowArgs),
		decision("rl.log", cmdLog, "Sliding window log: exact count of the units admitted in the last window "+
			"against limit (limit at most log-max-limit).", "O(log N) to check, O(n) to log n units", windowArgs),
	)
}

func cmdToken(s *session, args [][]byte)   { s.queueLimit(args, algorithms.Token) }
func cmdLeaky(s *session, args [][]byte)   { s.queueLimit(args, algorithms.Leaky) }
func cmdFixed(s *session, args [][]byte)   { s.queueLimit(args, algorithms.Fixed) }
func cmdSliding(s *session, args [][]byte) { s.queueLimit(args, algorithms.Sliding) }
func cmdLog(s *session, args [][]byte)     { s.queueLimit(args, algorithms.Log) }

// queueLimit runs one of the commands shaped "key p1 p2 [n]": RL.TOKEN and
// RL.LEAKY (rate capacity), RL.FIXED, RL.SLIDING and RL.LOG (limit window).
func (s *session) queueLimit(args [][]byte, algo algorithms.Algo) {
	// arguments
	limit, err := s.parseLimit(algo, args[2], args[3])
	if err != nil {
		s.rejectDecision(err)
		return
	}
	n := int64(1)
	if len(args) == 5 {
		if n, err = parseCost(args[4]); err != nil {
			s.rejectDecision(err)
			return
		}
	}
	// operation: queued, carried out with the rest of the batch; reply: writeDecision
	s.queueDecision(algorithms.Request{Key: args[1], Limit: limit, N: n}, kindDecision)
}

// parseLimit reads an algorithm's two parameters: rate and capacity for
// TOKEN and LEAKY, limit and window for FIXED, SLIDING and LOG.
func (s *session) parseLimit(algo algorithms.Algo, p1, p2 []byte) (algorithms.Limit, error) {
	l := algorithms.Limit{Algo: algo}
	var err error
	switch algo {
	case algorithms.Token, algorithms.Leaky:
		if l.Period, err = s.rate(p1); err != nil {
			return l, err
		}
		if l.Count, err = parsePositive(p2, "capacity"); err == nil && !algorithms.RefillFits(l.Count, l.Period) {
			err = errRefillTooLong
		}
	default:
		if l.Count, err = parsePositive(p1, "limit"); err != nil {
			return l, err
		}
		if algo == algorithms.Log && l.Count > s.h.cfg.LogMaxLimit {
			return l, errAboveLogMax(s.h.cfg.LogMaxLimit)
		}
		l.Period, err = parseDuration(p2, "window")
	}
	return l, err
}

// rate parses a rate, remembering the last one that parsed: a pipeline
// mostly repeats one limit, and its 128-bit division need not run again.
func (s *session) rate(b []byte) (int64, error) {
	if s.lastRateNS > 0 && string(b) == string(s.lastRate) {
		return s.lastRateNS, nil
	}
	ns, err := parseRate(b)
	if err == nil && len(b) <= cap(s.lastRate) {
		s.lastRate = append(s.lastRate[:0], b...)
		s.lastRateNS = ns
	}
	return ns, err
}

// writeDecision writes the reply every RL.* decision shares: an array of
// five integers, the same in RESP2 and RESP3, so that a client library that
// changes its default protocol never changes what position 0 means. On a
// connection that asked for named replies (CLIENT NAMED-REPLY ON) it is the
// same fields by name: a map in RESP3 (allowed a boolean), a flat
// [name, value, …] array in RESP2. Durations go out in milliseconds,
// rounded up so that a client never retries early.
func (s *session) writeDecision(r *algorithms.Result) { s.writeResult(r, decisionFields) }

// resultFields name a decision's values in named replies, RL.TAKE's
// granted last; decisionFields are the decision's five.
var (
	resultFields   = [6]string{"allowed", "limit", "remaining", "retry_after_ms", "reset_after_ms", "granted"}
	decisionFields = resultFields[:5]
)

// writeResult writes r's first len(fields) values (at most 6: the decision's
// five, then RL.TAKE's granted) as writeDecision describes, named by fields.
func (s *session) writeResult(r *algorithms.Result, fields []string) {
	retry := int64(-1)
	if r.RetryAfter >= 0 {
		retry = ceilMillis(r.RetryAfter)
	}
	vals := [6]int64{0, r.Limit, r.Remaining, retry, ceilMillis(r.ResetAfter), r.Granted}
	n := len(fields)
	if !s.named {
		s.conn.Out = append(s.conn.Out, '*', byte('0'+n), '\r', '\n')
		if r.Allowed {
			vals[0] = 1
		}
		for _, v := range vals[:n] {
			s.conn.Out = appendInt(s.conn.Out, v)
		}
		return
	}
	s.writeMap(n)
	s.conn.Out = redcon.AppendBulkString(s.conn.Out, fields[0])
	s.writeBool(r.Allowed)
	for i := 1; i < n; i++ {
		s.conn.Out = redcon.AppendBulkString(s.conn.Out, fields[i])
		s.conn.Out = appendInt(s.conn.Out, vals[i])
	}
}

// ceilMillis converts non-negative nanoseconds to milliseconds, rounding up.
func ceilMillis(ns int64) int64 {
	if ns <= 0 {
		return 0
	}
	ms := ns / 1e6
	if ns%1e6 != 0 {
		ms++
	}
	return ms
}
