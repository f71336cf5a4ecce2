package commands

import (
	"unsafe"

	"github.com/sluice-rl/sluice/acl"
	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/policy"
)

// RL.CHECK: a decision under a named policy. The policy is read from the
// registry's current snapshot (one atomic load, no lock), for a pipeline's
// checks of one pair together when its queue is carried out
// (resolveChecks), for the others as they are parsed; the state lives
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
		// The subjects route the call (policy.SplitCheckKey keeps a subject's
		// state keys in its slot); the state keys are derived, and checked
		// against the ACL by cmdCheck and checkAll.
		keySpecs:   []keySpec{keyRange(keyRW|keyAccess|keyUpdate|keyDerived, 2, -1, 2)},
		categories: []string{"policy"},
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
	// ovr is the subject's override key, in the queue's key arena: the
	// named reply reads the override's limit for quota and window_s.
	ovr []byte
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
	c := s.checks()
	if !s.tx.active {
		// Queued with its policy unresolved: the batch's RL.CHECKs look
		// theirs up together when the queue is carried out (resolveChecks),
		// before the memory of args is reused.
		c.pending = append(c.pending, pendingCheck{})
		pc := &c.pending[len(c.pending)-1]
		pc.at, pc.item, pc.name, pc.subject = int32(len(s.queue.reqs)), int32(len(c.items)), args[1], args[2]
		c.items = append(c.items, checkItem{})
		s.queueDecision(algorithms.Request{N: n}, kindCheck)
		return
	}
	// In a transaction the arguments are checked as the command is queued,
	// and its policy is the one of that moment; EXEC decides later, so the
	// request names its override key whatever the keyspace holds now.
	p, err := s.checkPolicy(s.policyNamed(args[1]), args[1])
	if err != nil {
		s.rejectDecision(err)
		return
	}
	req := algorithms.Request{N: n}
	var item checkItem
	if err := s.checkUnder(p, args[2], true, &req, &item); err != nil {
		s.rejectDecision(err)
		return
	}
	c.items = append(c.items, item)
	s.queueDecision(req, kindCheck)
}

// checkUnder completes req (whose N is set) and item as the decision for
// subject under p, or returns NOPERM if the session's user may not reach
// the state key. Without withOverride the request names noOverride
// instead of subject's override key.
func (s *session) checkUnder(p *policy.Policy, subject []byte, withOverride bool, req *algorithms.Request, item *checkItem) error {
	limit, mode := p.Resolve(nil)
	key, ovr := s.checkKeysOf(p, limit.Algo, subject, withOverride)
	if err := s.derivedKeyError(key, acl.Read|acl.Write); err != nil {
		return err
	}
	req.Key, req.Limit, req.Override = key, limit, ovr
	*item = checkItem{p: p, mode: mode, ovr: ovr}
	return nil
}

// pendingCheck is a queued RL.CHECK of one pair whose policy is not yet
// looked up: its request is the queue's reqs[at] and its item the check
// items[item]; name and subject are its arguments, in the input buffer.
// err is the error it answers instead, once resolveChecks has found one.
type pendingCheck struct {
	at, item      int32
	name, subject []byte
	err           error
}

// resolveChecks looks up the policies of the queued RL.CHECKs of one pair,
// together and in one snapshot of the policies (policy.Snapshot.Policies),
// and completes their requests and items. A check whose policy is
// missing or refused, or whose state key the user may not reach, keeps
// its error in its pendingCheck instead; resolveChecks reports whether
// one did.
//
// The queue is decided as soon as it is resolved (runDecisions), so while
// the keyspace has never held an override (OverrideHolder) the requests
// name none (noOverride): an override stored between that reading and the
// decision is one set concurrently with it, which Decide, reading the
// same flag before it locks anything, may equally miss.
func (s *session) resolveChecks() (failed bool) {
	q := &s.queue
	c := q.chk
	withOverride := s.h.ovr == nil || s.h.ovr.MayHoldOverrides()
	snap := s.h.cfg.Policies.Load()
	var names [16][]byte
	var found [16]*policy.Policy
	synced := false // a miss has caught the meta replica up (syncMeta)
	for start := 0; start < len(c.pending); start += len(names) {
		batch := c.pending[start:min(start+len(names), len(c.pending))]
		for k := range batch {
			names[k] = batch[k].name
		}
		snap.Policies(names[:len(batch)], found[:len(batch)])
		for k := range batch {
			pc := &batch[k]
			if found[k] == nil && !synced {
				// Once a queue: a sharded node's meta replica catches up,
				// and the misses that follow look in the fresh snapshot.
				if synced = true; s.syncMeta() {
					snap = s.h.cfg.Policies.Load()
				}
			}
			if found[k] == nil && synced {
				found[k] = snap.Policy(pc.name)
			}
			p, err := s.checkPolicy(found[k], pc.name)
			if err == nil {
				err = s.checkUnder(p, pc.subject, withOverride, &q.reqs[pc.at], &c.items[pc.item])
			}
			if err != nil {
				pc.err, failed = err, true
			}
		}
	}
	clear(names[:])
	return failed
}

// checksMiss reports whether a queued RL.CHECK names a policy the current
// snapshot lacks: resolveChecks would then catch the meta replica up
// (syncMeta), which waits.
func (s *session) checksMiss() bool {
	snap := s.h.cfg.Policies.Load()
	for i := range s.queue.chk.pending {
		if snap.Policy(s.queue.chk.pending[i].name) == nil {
			return true
		}
	}
	return false
}

// checkPolicy returns p, the policy RL.CHECK names (nil: none of that
// name), or the error that refuses it. It does not allocate for a known
// policy.
func (s *session) checkPolicy(p *policy.Policy, name []byte) (*policy.Policy, error) {
	if p == nil {
		return nil, policy.NoSuchPolicy(string(name))
	}
	if p.Limit.Algo == algorithms.Concurrency {
		return nil, errCheckConcurrency
	}
	return p, nil
}

// checkKeysOf returns subject's state key under p and, withOverride, its
// override key (policy.AppendOverrideKey), both in the queue's key arena;
// without, noOverride. The prefixes of the policy used last are kept for
// the queue: a pipeline under one policy escapes its name once, and one of
// many policies once a check, without copying the prefixes aside (they are
// the last keys' own bytes).
func (s *session) checkKeysOf(p *policy.Policy, algo algorithms.Algo, subject []byte, withOverride bool) (key, ovr []byte) {
	c := s.checks()
	if p == c.pol && (!withOverride || c.ovrPrefix != nil) {
		if !withOverride {
			return c.key(c.prefix, subject), noOverride
		}
		return c.key(c.prefix, subject), c.key(c.ovrPrefix, subject)
	}
	c.reserve(2*(len("pol:")+3*len(p.Name)+len(subject)) + len(policy.AlgoName(algo)) + 3) // every name byte escaped, at worst
	start := len(c.keys)
	if !withOverride {
		c.keys = policy.AppendCheckKey(c.keys, p.Name, algo, subject)
		key = c.keys[start:len(c.keys):len(c.keys)]
		c.pol, c.prefix, c.ovrPrefix = p, key[:len(key)-len(subject)], nil
		return key, noOverride
	}
	var split int
	c.keys, split = policy.AppendCheckKeys(c.keys, p.Name, algo, subject)
	key, ovr = c.keys[start:split:split], c.keys[split:len(c.keys):len(c.keys)]
	c.pol, c.prefix, c.ovrPrefix = p, key[:len(key)-len(subject)], ovr[:len(ovr)-len(subject)]
	return key, ovr
}

// noOverride is the override key of a policy's request that names none
// because the keyspace holds none (OverrideHolder): not nil, so that the
// request is still a policy's (algorithms.Request.Override: a limiter's
// state of another algorithm under its key starts afresh), and a key no
// override is ever stored under (every override key starts "ovr:").
var noOverride = []byte{}

// reserve makes room for need more bytes in the queue's key arena: when
// it is full a larger one replaces it, and the keys already handed out
// stay in the old one, so they remain valid until the queue is carried
// out.
func (c *checkState) reserve(need int) {
	if cap(c.keys)-len(c.keys) < need {
		c.keys = make([]byte, 0, max(2*cap(c.keys), need, 4096))
	}
}

// key builds the state key prefix+subject in the queue's key arena
// (reserve) and returns it. The arena is emptied with the queue.
func (c *checkState) key(prefix, subject []byte) []byte {
	c.reserve(len(prefix) + len(subject))
	start := len(c.keys)
	c.keys = append(append(c.keys, prefix...), subject...)
	return c.keys[start:len(c.keys):len(c.keys)]
}

// checkState is RL.CHECK's part of a session's deferred queue, made at a
// connection's first RL.CHECK so that other connections do not carry it.
// Only the connection's owner touches it.
type checkState struct {
	// pending are the queued RL.CHECKs whose policies resolveChecks has
	// yet to look up, in queue order.
	pending []pendingCheck
	// items holds one item per queued kindCheck, kindCheckAll and
	// kindCheckAllMember decision, in queue order; next is the one the
	// next reply takes (an EXEC writes its replies in slices).
	items []checkItem
	next  int
	// keys holds the state keys the queued requests point into.
	keys []byte
	// outs is writeCheckAll's scratch, kept between batches.
	outs []algorithms.Result
	// pol is the policy used last in the queue and prefix its state keys'
	// prefix (pol:<name>:<algo>:): a pipeline mostly repeats one policy. A
	// policy changed by RL.POLICY SET is another pointer, so the prefix
	// follows. The prefixes alias the key arena, so reset forgets them.
	pol       *policy.Policy
	prefix    []byte
	ovrPrefix []byte // ovr:<name>:
	// pols count the batch's decisions by policy (policystats.go), found
	// by polAt: open addressing by the policy's address, slot+1, 0 empty.
	pols  [polSlots]polSlot
	npol  int
	polAt [1 << polAtBits]uint8
}

// checks returns the session's RL.CHECK state, making it at the first use.
func (s *session) checks() *checkState {
	if s.queue.chk == nil {
		s.queue.chk = &checkState{}
	}
	return s.queue.chk
}

// reset empties what the queue's items held, keeping the memory; the
// last policy's prefixes go with the arena they point into.
func (c *checkState) reset() {
	clear(c.items)
	clear(c.pending) // drop references into the input buffer
	c.items, c.pending, c.next, c.keys = c.items[:0], c.pending[:0], 0, c.keys[:0]
	c.pol, c.prefix, c.ovrPrefix = nil, nil, nil
}

// size is the bytes c holds, for the session's footprint; 0 if not made.
func (c *checkState) size() int64 {
	if c == nil {
		return 0
	}
	return int64(unsafe.Sizeof(*c)) + int64(cap(c.items))*int64(unsafe.Sizeof(checkItem{})) + int64(cap(c.keys)) +
		int64(cap(c.pending))*int64(unsafe.Sizeof(pendingCheck{})) +
		int64(cap(c.outs))*int64(unsafe.Sizeof(algorithms.Result{}))
}

// writeCheck writes a policy decision's reply: the shared five fields of
// every decision, after the policy's mode has its say (a shadow policy's
// denial is an admission; policy.Reply). The would-be denials are counted
// for INFO policies.
func (s *session) writeCheck(c *checkItem, r *algorithms.Result) {
	if c.mode == policy.ModeEnforce && !s.named { // the usual case: the decision as it is (an override's included)
		if r.Allowed {
			s.allowed++
		} else {
			s.denied++
		}
		s.countPolicy(c.p, r.Allowed, false)
		s.writeDecision(r)
		return
	}
	out, wouldDeny := policy.Reply(c.mode, c.p.Limit, *r)
	if wouldDeny {
		s.h.shadowDenied.Add(1)
	}
	s.countPolicy(c.p, out.Allowed, wouldDeny)
	if out.Allowed {
		s.allowed++
	} else {
		s.denied++
	}
	if !s.named {
		s.writeDecision(&out)
		return
	}
	s.writeNamedCheck(c, &out, r.Override, wouldDeny)
}

// shownMode is the named reply's mode of a decision made under mode: the
// override's, if an UNLIMITED or DENY override decided, else the
// policy's (a shadow policy's DENY override still admits, with
// would_deny: a shadow policy refuses nothing).
func shownMode(mode policy.Mode, kind algorithms.OverrideKind) policy.Mode {
	switch kind {
	case algorithms.OverrideUnlimited:
		return policy.ModeUnlimited
	case algorithms.OverrideDeny:
		return policy.ModeDeny
	}
	return mode
}

// decidingLimit is the limit the named reply states as quota and
// window_s: the override's, when an override's limit decided (read from
// this node's state), else the policy's.
func (s *session) decidingLimit(c *checkItem, kind algorithms.OverrideKind) algorithms.Limit {
	if kind == algorithms.OverrideLimit {
		if w, ok := s.h.ks.LocalOverride(s.conn.Now(), c.ovr); ok {
			if o, err := policy.UnpackOverride(w); err == nil && o.Kind == policy.OverrideLimit {
				return o.Limit
			}
		}
	}
	return c.p.Limit
}

// writeNamedCheck writes a policy decision as a named reply (CLIENT
// NAMED-REPLY ON): the five fields of every decision, then policy, mode
// (enforce, shadow, unlimited or deny), quota and window_s (the limit as
// the IETF RateLimit-Policy field states it: quota units per window_s
// seconds, rounded up) and would_deny (a shadow policy's denial).
func (s *session) writeNamedCheck(c *checkItem, r *algorithms.Result, kind algorithms.OverrideKind, wouldDeny bool) {
	retry := int64(-1)
	if r.RetryAfter >= 0 {
		retry = ceilMillis(r.RetryAfter)
	}
	quota, window := policy.Quota(s.decidingLimit(c, kind))
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
	s.writeBulkString(shownMode(c.mode, kind).String())
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
		keys, err := s.policyKeys(args[2], args[3:], acl.Read)
		if err != nil {
			return nil, err
		}
		return keys[0], nil
	}
	return nil, errWrongArgs(cmd)
}

// policyKeys returns the state keys of subjects under the policy named
// name, with the policy's algorithm (RL.INFO POLICY, RL.RESET POLICY), or
// NOPERM if the session's user may not reach one with access. The keys are
// new memory: these commands are not on the hot path.
func (s *session) policyKeys(name []byte, subjects [][]byte, access acl.Access) ([][]byte, error) {
	p := s.policyNamed(name)
	if p == nil {
		return nil, policy.NoSuchPolicy(string(name))
	}
	keys := make([][]byte, len(subjects))
	for i, sub := range subjects {
		keys[i] = policy.AppendCheckKey(nil, p.Name, p.Limit.Algo, sub)
		if err := s.derivedKeyError(keys[i], access); err != nil {
			return nil, err
		}
	}
	return keys, nil
}
