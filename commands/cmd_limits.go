package commands

import (
	"github.com/sluice-rl/sluice/algorithms"
	"github.com/tidwall/redcon"
)

// The decision commands: each parses its arguments into a Request and
// queues it; the batch's decisions are carried out together and each reply
// is written by writeDecision.

func init() {
	register(&command{
		name: "rl.token", arity: -4, maxArgs: 5, flags: flagDecision | flagWrite | flagFast, run: cmdToken,
		group: "rate-limit", since: "0.1.0", complexity: "O(1)",
		summary: "Token bucket: takes n tokens (default 1) from a bucket of capacity tokens that refills at rate.",
		arguments: []argDoc{
			{name: "key", typ: "key"}, {name: "rate", typ: "string"}, {name: "capacity", typ: "integer"},
			{name: "n", typ: "integer", optional: true},
		},
		firstKey: 1, lastKey: 1, keyStep: 1,
	})
}

// cmdToken: RL.TOKEN key rate capacity [n]
func cmdToken(c *Client, args [][]byte) {
	// arguments
	interval, err := parseRate(args[2])
	if err != nil {
		c.rejectDecision(err)
		return
	}
	capacity, err := parsePositive(args[3], "capacity")
	if err != nil {
		c.rejectDecision(err)
		return
	}
	n := int64(1)
	if len(args) == 5 {
		if n, err = parseCost(args[4]); err != nil {
			c.rejectDecision(err)
			return
		}
	}
	// operation: queued, carried out with the rest of the batch; reply: writeDecision
	c.queue(algorithms.Request{
		Key:   args[1],
		Limit: algorithms.Limit{Algo: algorithms.Token, Count: capacity, Period: interval},
		N:     n,
	}, shapeDecision)
}

// rejectDecision answers a decision whose arguments are wrong, after the
// decisions queued before it.
func (c *Client) rejectDecision(err error) {
	c.runPending()
	c.writeError(err)
}

var decisionFields = [5]string{"allowed", "limit", "remaining", "retry_after_ms", "reset_after_ms"}

// writeDecision writes the reply every RL.* decision shares: an array of
// five integers in RESP2, a map in RESP3. Durations go out in milliseconds,
// rounded up so that a client never retries early.
func (c *Client) writeDecision(r *algorithms.Result) {
	retry := int64(-1)
	if r.RetryAfter >= 0 {
		retry = ceilMillis(r.RetryAfter)
	}
	vals := [5]int64{0, r.Limit, r.Remaining, retry, ceilMillis(r.ResetAfter)}
	if !c.resp3.Load() {
		c.out = append(c.out, '*', '5', '\r', '\n')
		if r.Allowed {
			vals[0] = 1
		}
		for _, v := range vals {
			c.out = redcon.AppendInt(c.out, v)
		}
		return
	}
	c.out = append(c.out, '%', '5', '\r', '\n')
	c.out = redcon.AppendBulkString(c.out, decisionFields[0])
	c.writeBool(r.Allowed)
	for i := 1; i < 5; i++ {
		c.out = redcon.AppendBulkString(c.out, decisionFields[i])
		c.out = redcon.AppendInt(c.out, vals[i])
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
