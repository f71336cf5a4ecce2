package commands

import (
	"math"

	"github.com/sluice-rl/sluice/acl"
	"github.com/sluice-rl/sluice/algorithms"
)

// RL.INFO and RL.RESET: look at a limiter's state, and put limiters back to
// their initial state.

func init() {
	register(
		&command{
			name: "rl.info", arity: -2, maxArgs: 4, flags: flagReadOnly | flagFast, run: cmdRLInfo,
			group: "rate-limit", since: "0.1.0", complexity: "O(1), O(N) for a log or leases of N entries",
			summary:   "Shows a key's limiter state: algorithm, expiry and the raw state fields; nil if absent.",
			arguments: []argDoc{{name: "key", typ: "key"}},
			keySpecs:  []keySpec{keyRange(keyRO|keyAccess|keyIncomplete, 1, 0, 1)},
			getKeys:   policyFormKeys(keyRO | keyAccess),
		},
		&command{
			name: "rl.reset", arity: -2, flags: flagWrite, run: cmdRLReset,
			group: "rate-limit", since: "0.1.0", complexity: "O(N) where N is the number of keys",
			summary:    "Puts limiters back to their initial state (deletes their state); replies how many had one.",
			arguments:  []argDoc{{name: "key", typ: "key", multiple: true}},
			keySpecs:   []keySpec{keyRange(keyRM|keyDelete|keyIncomplete, 1, -1, 1)},
			getKeys:    policyFormKeys(keyRM | keyDelete),
			categories: []string{"keyspace"},
		},
	)
}

// policyFormKeys is RL.INFO's and RL.RESET's getKeys, for keys used with
// flags: the keys, or in the POLICY form (RL.RESET POLICY policy subject
// …) the subjects, which route as keys; their state keys are derived, and
// the command checks them against the ACL (policyKeys).
func policyFormKeys(flags keyFlags) func(args [][]byte, out []keyRef) ([]keyRef, bool) {
	return func(args [][]byte, out []keyRef) ([]keyRef, bool) {
		first, f := 1, flags
		if len(args) >= 4 && equalFold(args[1], "policy") {
			first, f = 3, flags|keyDerived
		}
		if len(args) <= first {
			return out, false
		}
		for i := first; i < len(args); i++ {
			out = append(out, keyRef{pos: i, flags: f})
		}
		return out, true
	}
}

// cmdRLInfo: RL.INFO key
func cmdRLInfo(s *session, args [][]byte) {
	key, err := s.inspectedKey(args, "rl.info")
	if err != nil {
		s.writeError(err)
		return
	}
	// operation
	info, err := s.keyInfo(key)
	if err != nil {
		s.writeError(err)
		return
	}
	// reply: nil, or a map (a flat array in RESP2) of algorithm, expire_at_ns,
	// ttl_ms and the algorithm's own fields
	if info.Algo == algorithms.None {
		s.writeNull()
		return
	}
	s.writeMap(3 + len(info.Fields))
	s.writeBulkString("algorithm")
	s.writeBulkString(info.Algo.String())
	s.writeBulkString("expire_at_ns")
	s.writeInt(info.Expire)
	s.writeBulkString("ttl_ms")
	s.writeInt(infoTTL(&info, s.conn.Now()))
	for _, f := range info.Fields {
		s.writeBulkString(f.Name)
		switch {
		case f.List == nil:
			s.writeInt(f.Value)
		case f.Pairs:
			s.writeArray(len(f.List) / 2)
			for i := 0; i+1 < len(f.List); i += 2 {
				s.writeArray(2)
				s.writeInt(f.List[i])
				s.writeInt(f.List[i+1])
			}
		default:
			s.writeArray(len(f.List))
			for _, v := range f.List {
				s.writeInt(v)
			}
		}
	}
}

// cmdRLReset: RL.RESET key [key …]
func cmdRLReset(s *session, args [][]byte) {
	keys := args[1:]
	if len(args) >= 4 && equalFold(args[1], "policy") {
		var err error
		if keys, err = s.policyKeys(args[2], args[3:], acl.Write); err != nil {
			s.writeError(err)
			return
		}
	}
	n, err := s.h.ks.Delete(s.conn.Now(), keys)
	s.replyInt(n, err)
}

// infoTTL is RL.INFO's ttl_ms: the ms until the state expires, rounded up;
// for a string, its PTTL as Redis gives it (-1 without a TTL). A string's
// Expire is one ms past Redis's expiry millisecond (compat.Key.Expire).
func infoTTL(info *algorithms.KeyInfo, now int64) int64 {
	if info.Algo == algorithms.Override && info.Expire == math.MaxInt64 {
		return -1 // an override without EXPIRE
	}
	if info.Algo != algorithms.String && info.Algo != algorithms.List {
		return ceilMillis(info.Expire - now)
	}
	if info.Expire == math.MaxInt64 {
		return -1
	}
	return max(ceilMillis(info.Expire-now)-1, 0)
}
