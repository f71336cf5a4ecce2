package commands

import (
	"github.com/sluice-rl/sluice/algorithms"
)

// RL.ALL: several limits, on any keys, checked and consumed as one atomic,
// all-or-nothing decision. The limits are queued as one group of requests
// (algorithms.Request.Group); the keyspace decides a group as a whole, and
// writeAll answers it with one reply.

func init() {
	register(&command{
		name: "rl.all", arity: -6, flags: flagDecision | flagWrite, run: cmdAll,
		group: "rate-limit", since: "0.1.0", complexity: "O(N) where N is the number of limits (at most all-max-limits)",
		summary: "Checks several limits (TOKEN, LEAKY, FIXED, SLIDING, LOG, each with its key and two " +
			"parameters) atomically: takes n from all of them, or from none.",
		arguments: []argDoc{
			{name: "n", typ: "integer"}, {name: "algorithm", typ: "string"}, {name: "key", typ: "key"},
			{name: "p1", typ: "string"}, {name: "p2", typ: "string"},
			{name: "algorithm key p1 p2", typ: "string", optional: true, multiple: true},
		},
		keySpecs: []keySpec{keyRange(keyRW|keyAccess|keyUpdate, 3, -3, 4)}, // every fourth argument from the third
	})
}

// cmdAll: RL.ALL n ALGO key p1 p2 [ALGO key p1 p2 …]
func cmdAll(s *session, args [][]byte) {
	// arguments, parsed straight into the deferred queue and taken back out
	// if one of them is wrong
	if (len(args)-2)%4 != 0 {
		s.rejectDecision(errWrongArgs("rl.all"))
		return
	}
	if limits := int64(len(args)-2) / 4; limits > s.h.cfg.AllMaxLimits {
		s.rejectDecision(errAllTooMany(s.h.cfg.AllMaxLimits))
		return
	}
	n, err := parseCost(args[1])
	if err != nil {
		s.rejectDecision(err)
		return
	}
	mark := len(s.queue.reqs)
	group := s.nextGroup()
	kind := kindAll
	logs := int64(0)
	for i := 2; i < len(args); i += 4 {
		algo, ok := allAlgo(args[i])
		if !ok {
			err = errAllAlgo(args[i])
			break
		}
		if algo == algorithms.Log {
			if logs++; n > 0 && n > s.h.cfg.AllMaxLogUnits/logs {
				err = errAllTooManyUnits(s.h.cfg.AllMaxLogUnits)
				break
			}
		}
		var limit algorithms.Limit
		if limit, err = s.parseLimit(algo, args[i+2], args[i+3]); err != nil {
			break
		}
		// operation: queued as one group; reply: writeAll
		s.queueDecision(algorithms.Request{Key: args[i+1], Limit: limit, N: n, Group: group}, kind)
		kind = kindAllMember
	}
	if err != nil {
		s.unqueue(mark)
		s.rejectDecision(err)
	}
}

// allAlgo reads an algorithm name of RL.ALL, in any letter case.
func allAlgo(b []byte) (algorithms.Algo, bool) {
	switch {
	case equalFold(b, "token"):
		return algorithms.Token, true
	case equalFold(b, "leaky"):
		return algorithms.Leaky, true
	case equalFold(b, "fixed"):
		return algorithms.Fixed, true
	case equalFold(b, "sliding"):
		return algorithms.Sliding, true
	case equalFold(b, "log"):
		return algorithms.Log, true
	}
	return algorithms.None, false
}

// writeAll writes an RL.ALL's reply from its group's outcomes: an array
// [allowed, denied_index, [decision …]] in RESP2 and RESP3 alike, allowed 1
// or 0, denied_index the 0-based index of the first limit that denied (-1
// when admitted), and one five-integer decision per limit. With named
// replies (CLIENT NAMED-REPLY ON): {allowed, denied_index, results:
// [decision …]}, a map in RESP3 and a flat array in RESP2, each decision
// named too. If a limit failed (WRONGTYPE …), the whole reply is that error:
// nothing was changed.
func (s *session) writeAll(outs []algorithms.Outcome) {
	for i := range outs {
		if outs[i].Err != nil {
			s.writeError(outs[i].Err)
			return
		}
	}
	denied := int64(-1)
	for i := range outs {
		if !outs[i].Result.Allowed {
			denied = int64(i)
			break
		}
	}
	s.countDecision(denied < 0)
	if s.named {
		s.writeMap(3)
		s.writeBulkString("allowed")
		s.writeBool(denied < 0)
		s.writeBulkString("denied_index")
		s.writeInt(denied)
		s.writeBulkString("results")
	} else {
		s.writeArray(3)
		if denied < 0 {
			s.writeInt(1)
		} else {
			s.writeInt(0)
		}
		s.writeInt(denied)
	}
	s.writeArray(len(outs))
	for i := range outs {
		s.writeDecision(&outs[i].Result)
	}
}
