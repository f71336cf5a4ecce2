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
		name: "rl.check", arity: -3, flags: flagDecision | flagWrite | flagFast, run: cmdCheck,
		group: "rate-limit", since: "0.1.0", complexity: "O(N) in the number of policy subject pairs",
		summary: "Decides n units (default 1) for subject under the named policy (RL.POLICY), " +
			"with the reply of the RL.* command of the policy's algorithm; several pairs are decided " +
			"atomically, all or nothing, with RL.ALL's reply.",
		arguments: []argDoc{
			{name: "policy", typ: "string"}, {name: "subject", typ: "string"},
			{name: "policy subject", typ: "string", optional: true, multiple: true},
			{name: "n", typ: "integer", optional: true},
		},
	})
}

// checkItem is what a queued RL.CHECK's reply needs besides its outcome:
// the policy it was decided under and the mode, for the shadow rewrite and
// for the named reply's policy, mode, quota and window_s fields; and, in a
// command of several pairs, the pair's place in the reply.
type checkItem struct {
	p    *policy.Policy
	mode policy.Mode
	slot int32
}

// cmdCheck: RL.CHECK policy subject [policy subject …] [n]
func cmdCheck(s *session, args [][]byte) {
	pairs := (len(args) - 1) / 2
	n := int64(1)
	if (len(args)-1)%2 == 1 {
		var err error
		if n, err = parseCost(args[len(args)-1]); err != nil {
			s.rejectDecision(err)
			return
		}
	}
	if pairs > 1 {
		s.checkAll(args[1:1+2*pairs], n)
		return
	}
	p, err := s.checkPolicy(s.h.cfg.Policies.Load(), args[1])
	if err != nil {
		s.rejectDecision(err)
		return
	}
	limit, mode := p.Resolve(nil)
	s.queue.checks = append(s.queue.checks, checkItem{p: p, mode: mode})
	s.queueDecision(algorithms.Request{Key: s.checkKeyOf(p, limit.Algo, args[2]), Limit: limit, N: n}, kindCheck)
}

// checkPolicy returns the policy RL.CHECK names in snap, or the error that
// refuses it. It does not allocate for a known policy.
func (s *session) checkPolicy(snap *policy.Snapshot, name []byte) (*policy.Policy, error) {
	p := snap.Policy(name)
	if p == nil {
		return nil, policy.NoSuchPolicy(string(name))
	}
	if p.Limit.Algo == algorithms.Concurrency {
		return nil, errCheckConcurrency
	}
	return p, nil
}

// checkKeyOf returns subject's state key under p in the queue's key arena,
// with the prefix of the policy used last kept in the session.
func (s *session) checkKeyOf(p *policy.Policy, algo algorithms.Algo, subject []byte) []byte {
	if p != s.checkPol {
		s.checkPol = p
		s.checkPrefix = policy.AppendCheckKey(s.checkPrefix[:0], p.Name, algo, nil)
	}
	return s.queue.checkKey(s.checkPrefix, subject)
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
	if c.mode == policy.ModeEnforce && !s.named { // the usual case: the decision as it is
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
	if !s.named {
		s.writeDecision(&out)
		return
	}
	s.writeNamedCheck(c, &out, wouldDeny)
}

// writeNamedCheck writes a policy decision as a named reply (CLIENT
// NAMED-REPLY ON): the five fields of every decision, then policy, mode
// (enforce, shadow, unlimited or deny), quota and window_s (the limit as
// the IETF RateLimit-Policy field states it: quota units per window_s
// seconds, rounded up) and would_deny (a shadow policy's denial).
func (s *session) writeNamedCheck(c *checkItem, r *algorithms.Result, wouldDeny bool) {
	retry := int64(-1)
	if r.RetryAfter >= 0 {
		retry = ceilMillis(r.RetryAfter)
	}
	quota, window := policy.Quota(c.p.Limit)
	s.writeMap(10)
	s.writeBulkString("allowed")
	s.writeBool(r.Allowed)
	for i, v := range [4]int64{r.Limit, r.Remaining, retry, ceilMillis(r.ResetAfter)} {
		s.writeBulkString(decisionFields[i+1])
		s.writeInt(v)
	}
	s.writeBulkString("policy")
	s.writeBulkString(c.p.Name)
	s.writeBulkString("mode")
	s.writeBulkString(c.mode.String())
	s.writeBulkString("quota")
	s.writeInt(quota)
	s.writeBulkString("window_s")
	secs := window / 1e9
	if window%1e9 != 0 {
		secs++
	}
	s.writeInt(secs)
	s.writeBulkString("would_deny")
	s.writeBool(wouldDeny)
}

// inspectedKey returns the key RL.INFO reads: "key", or "POLICY policy
// subject" for the state RL.CHECK keeps for subject under the policy.
func (s *session) inspectedKey(args [][]byte, cmd string) ([]byte, error) {
	switch {
	case len(args) == 2:
		return args[1], nil
	case len(args) == 4 && equalFold(args[1], "policy"):
		keys, err := s.policyKeys(args[2], args[3:])
		if err != nil {
			return nil, err
		}
		return keys[0], nil
	}
	return nil, errWrongArgs(cmd)
}

// policyKeys returns the state keys of subjects under the policy named
// name, with the policy's algorithm (RL.INFO POLICY, RL.RESET POLICY).
// The keys are new memory: these commands are not on the hot path.
func (s *session) policyKeys(name []byte, subjects [][]byte) ([][]byte, error) {
	p := s.h.cfg.Policies.Policy(name)
	if p == nil {
		return nil, policy.NoSuchPolicy(string(name))
	}
	keys := make([][]byte, len(subjects))
	for i, sub := range subjects {
		keys[i] = policy.AppendCheckKey(nil, p.Name, p.Limit.Algo, sub)
	}
	return keys, nil
}
