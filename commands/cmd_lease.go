package commands

import "github.com/sluice-rl/sluice/algorithms"

// RL.ACQUIRE and RL.RELEASE: a concurrency limit with leases that end by
// themselves when a holder dies without releasing.

func init() {
	register(
		&command{
			name: "rl.acquire", arity: 5, flags: flagDecision | flagWrite | flagFast, run: cmdAcquire,
			group: "rate-limit", since: "0.1.0", complexity: "O(N) where N is the number of holders",
			summary: "Concurrency limit: takes one of limit slots for id, or renews id's lease, for lease " +
				"(a duration like 30s); the lease ends by itself if never released.",
			arguments: []argDoc{
				{name: "key", typ: "key"}, {name: "limit", typ: "integer"}, {name: "lease", typ: "string"},
				{name: "id", typ: "string"},
			},
			keySpecs: []keySpec{keyRange(keyRW|keyAccess|keyUpdate, 1, 0, 1)},
		},
		&command{
			name: "rl.release", arity: 3, flags: flagDecision | flagWrite | flagFast, run: cmdRelease,
			group: "rate-limit", since: "0.1.0", complexity: "O(N) where N is the number of holders",
			summary:   "Ends id's lease on a concurrency limit: 1 if it held one, 0 otherwise.",
			arguments: []argDoc{{name: "key", typ: "key"}, {name: "id", typ: "string"}},
			keySpecs:  []keySpec{keyRange(keyRW|keyAccess|keyUpdate, 1, 0, 1)},
		},
	)
}

// cmdAcquire: RL.ACQUIRE key limit lease id
func cmdAcquire(s *session, args [][]byte) {
	// arguments
	limit, err := parsePositive(args[2], "limit")
	if err != nil {
		s.rejectDecision(err)
		return
	}
	if limit > s.h.cfg.LogMaxLimit {
		s.rejectDecision(errAboveLogMax(s.h.cfg.LogMaxLimit))
		return
	}
	lease, err := parseDuration(args[3], "lease")
	if err != nil {
		s.rejectDecision(err)
		return
	}
	// operation: queued; reply: writeDecision
	s.queueDecision(algorithms.Request{
		Key:   args[1],
		Limit: algorithms.Limit{Algo: algorithms.Concurrency, Count: limit, Period: lease},
		N:     algorithms.LeaseAcquire,
		ID:    args[4],
	}, kindDecision)
}

// cmdRelease: RL.RELEASE key id
func cmdRelease(s *session, args [][]byte) {
	// operation: queued; reply: writeReleased. The limit's parameters do not
	// matter to a release.
	s.queueDecision(algorithms.Request{
		Key:   args[1],
		Limit: algorithms.Limit{Algo: algorithms.Concurrency, Count: 1, Period: 1},
		N:     algorithms.LeaseRelease,
		ID:    args[2],
	}, kindRelease)
}

// writeReleased writes RL.RELEASE's reply: 1 if a lease was released.
func (s *session) writeReleased(released bool) {
	if released {
		s.writeInt(1)
	} else {
		s.writeInt(0)
	}
}
