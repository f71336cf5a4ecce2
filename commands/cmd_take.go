package commands

import (
	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/internal/figure"
)

// RL.TAKE: takes a stock of units ahead, for a holder that spends them
// without asking again (a lease-backed tier, package lease; client.Leaser).
// It grants the largest amount in [MIN, max] that the limit holds now,
// debited at once, in one decision that goes through the keyspace like
// RL.TOKEN's (through the Raft log in a replicated group). Unspent units go
// back with a refund: RL.TOKEN key rate capacity -u (a token bucket), or
// RL.FIXED key limit window -u within the same window (a fixed window,
// whose units are good only until its window ends).

func init() {
	register(&command{
		name: "rl.take", arity: -6, maxArgs: 8, flags: flagDecision | flagWrite | flagFast, run: cmdTake,
		group: "rate-limit", since: "0.1.0", complexity: "O(1)",
		summary: "Takes ahead the largest amount in [MIN, max] that a token bucket (TOKEN rate capacity) or a " +
			"fixed window (FIXED limit window) holds now; the reply is the five decision fields and granted.",
		arguments: []argDoc{
			{name: "key", typ: "key"}, {name: "algorithm", typ: "string"}, {name: "p1", typ: "string"},
			{name: "p2", typ: "string"}, {name: "max", typ: "integer"},
			{name: "min", typ: "integer", token: "MIN", optional: true},
		},
		keySpecs: []keySpec{keyRange(keyRW|keyAccess|keyUpdate, 1, 0, 1)},
	})
}

// RL.TAKE's errors, besides the shared vocabulary's.
var (
	errTakeNotLeasable = replyError(algorithms.ErrNotLeasable)
	errTakeMinAboveMax = replyError("MIN must not exceed max")
)

// cmdTake: RL.TAKE key TOKEN|FIXED p1 p2 max [MIN m]
func cmdTake(s *session, args [][]byte) {
	// arguments
	req, err := parseTake(args)
	if err != nil {
		s.rejectDecision(err)
		return
	}
	// operation: queued, carried out with the rest of the batch; reply: writeTake
	s.queueDecision(req, kindTake)
}

// parseTake reads RL.TAKE's arguments (args[0] the command's name) into
// the take they ask for. TOKEN's p1 p2 are rate and capacity, FIXED's limit
// and window; LEAKY, SLIDING and LOG are refused (algorithms.Leasable),
// anything else is a syntax error.
func parseTake(args [][]byte) (algorithms.Request, error) {
	req := algorithms.Request{Key: args[1], Min: 1}
	algo, ok := allAlgo(args[2])
	if !ok {
		return req, errSyntax
	}
	if !algorithms.Leasable(algo) {
		return req, errTakeNotLeasable
	}
	l := algorithms.Limit{Algo: algo}
	var err error
	if algo == algorithms.Token {
		if l.Period, err = parseRate(args[3]); err != nil {
			return req, err
		}
		if l.Count, err = parsePositive(args[4], "capacity"); err != nil {
			return req, err
		}
		if !algorithms.RefillFits(l.Count, l.Period) {
			return req, errRefillTooLong
		}
	} else {
		if l.Count, err = parsePositive(args[3], "limit"); err != nil {
			return req, err
		}
		if l.Period, err = parseDuration(args[4], "window"); err != nil {
			return req, err
		}
	}
	req.Limit = l
	if req.N, err = parsePositive(args[5], "max"); err != nil {
		return req, err
	}
	switch {
	case len(args) == 6:
	case len(args) == 8 && equalFold(args[6], "min"):
		if req.Min, err = parsePositive(args[7], "MIN"); err != nil {
			return req, err
		}
		if req.Min > req.N {
			return req, errTakeMinAboveMax
		}
	default:
		return req, errSyntax
	}
	return req, nil
}

// writeTake writes RL.TAKE's reply: the five integers of every decision
// (writeDecision) and granted, the units taken (0 when denied); by name on
// a connection that asked for named replies.
func (s *session) writeTake(r *algorithms.Result) { s.writeResult(r, resultFields[:]) }

// LeaseReporter is the Keyspace's optional part that holds leased stock
// (package lease): INFO leases prints its figures and the metrics endpoint
// exports them.
type LeaseReporter interface {
	LeaseFigures() []figure.Figure
}

// leasesInfo is INFO leases: the tier's figures, or nothing on a keyspace
// that leases nothing.
func (h *Handler) leasesInfo() []Param {
	lr, ok := h.ks.(LeaseReporter)
	if !ok {
		return nil
	}
	return params(lr.LeaseFigures(), figure.Leases)
}
