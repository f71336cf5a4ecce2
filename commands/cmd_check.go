package commands

import (
	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/policy"
)

// RL.CHECK: a decision under a named policy. The policy is read from the
// registry's current snapshot (one atomic load, no lock); the state lives
// under the key derived from the policy's name, its algorithm and the
// subject (policy.AppendCheckKey), so two policies never share state.

func init() {
	register(&command{
		name: "rl.check", arity: -3, maxArgs: 4, flags: flagDecision | flagWrite | flagFast, run: cmdCheck,
		group: "rate-limit", since: "0.2.0", complexity: "O(1) (O(log N) for a LOG policy)",
		summary: "Decides n units (default 1) for subject under the named policy (RL.POLICY), " +
			"with the reply of the RL.* command of the policy's algorithm.",
		arguments: []argDoc{
			{name: "policy", typ: "string"}, {name: "subject", typ: "string"},
			{name: "n", typ: "integer", optional: true},
		},
	})
}

// checkItem is what a queued RL.CHECK's reply needs besides its outcome:
// the policy it was decided under and the mode, for the shadow rewrite and
// for the named reply's policy, mode, quota and window_s fields.
type checkItem struct {
	p    *policy.Policy
	mode policy.Mode
}

// cmdCheck: RL.CHECK policy subject [n]
func cmdCheck(s *session, args [][]byte) {
	p := s.h.cfg.Policies.Policy(args[1])
	if p == nil {
		s.rejectDecision(policy.NoSuchPolicy(string(args[1])))
		return
	}
	if p.Limit.Algo == algorithms.Concurrency {
		s.rejectDecision(errCheckConcurrency)
		return
	}
	n := int64(1)
	if len(args) == 4 {
		var err error
		if n, err = parseCost(args[3]); err != nil {
			s.rejectDecision(err)
			return
		}
	}
	limit, mode := p.Resolve(nil)
	if p != s.checkPol {
		s.checkPol = p
		s.checkPrefix = policy.AppendCheckKey(s.checkPrefix[:0], p.Name, limit.Algo, nil)
	}
	key := s.queue.checkKey(s.checkPrefix, args[2])
	s.queue.checks = append(s.queue.checks, checkItem{p: p, mode: mode})
	s.queueDecision(algorithms.Request{Key: key, Limit: limit, N: n}, kindCheck)
}

// checkKey builds the state key prefix+subject in the queue's key arena
// and returns it. The arena is emptied with the queue; when it is full a
// larger one replaces it, and the keys already handed out stay in the old
// one, so they remain valid until the queue is carried out.
func (q *deferred) checkKey(prefix, subject []byte) []byte {
	need := len(prefix) + len(subject)
	if cap(q.keys)-len(q.keys) < need {
		q.keys = make([]byte, 0, max(2*cap(q.keys), need, 4096))
	}
	start := len(q.keys)
	q.keys = append(append(q.keys, prefix...), subject...)
	return q.keys[start:len(q.keys):len(q.keys)]
}

// writeCheck writes a policy decision's reply: the shared five fields of
// every decision, after the policy's mode has its say (a shadow policy's
// denial is an admission; policy.Reply). The would-be denials are counted
// for INFO policies.
func (s *session) writeCheck(c *checkItem, r *algorithms.Result) {
	if c.mode == policy.ModeEnforce { // the usual case: the decision as it is
		if r.Allowed {
			s.allowed++
		} else {
			s.denied++
		}
		s.writeDecision(r)
		return
	}
	out, wouldDeny := policy.Reply(c.mode, c.p.Limit, *r)
	if wouldDeny {
		s.h.shadowDenied.Add(1)
	}
	if out.Allowed {
		s.allowed++
	} else {
		s.denied++
	}
	s.writeDecision(&out)
}
