package commands

import (
	"github.com/sluice-rl/sluice/acl"
	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/policy"
)

// RL.CHECK with several (policy subject) pairs: one all-or-nothing decision
// across them, as RL.ALL makes, with RL.ALL's reply. The pairs of enforced
// policies are queued as one group (consecutive requests of one Group
// number, which the keyspace decides atomically); the pairs of shadow
// policies, which never refuse the call, follow on their own, so that
// they count as usual whatever the group's outcome. Each queued item keeps
// its pair's place in the reply (checkItem.slot).

// checkAll queues the pairs of an RL.CHECK of several pairs, or answers
// the first fault of its arguments with nothing queued.
func (s *session) checkAll(pairs [][]byte, n int64) {
	count := int64(len(pairs) / 2)
	if count > s.h.cfg.AllMaxLimits {
		s.rejectDecision(errCheckTooMany(s.h.cfg.AllMaxLimits))
		return
	}
	// Check every pair before queueing any; every pair reads one snapshot
	// of the policies.
	snap := s.h.cfg.Policies.Load()
	logs := int64(0)
	synced := false
	for i := 0; i < len(pairs); i += 2 {
		pol := snap.Policy(pairs[i])
		if pol == nil && !synced {
			if s.h.cfg.MetaSync != nil && !s.conn.MayWait() {
				s.readAgain()
				s.conn.HandOff() // catching the meta replica up waits
				return
			}
			if synced = true; s.syncMeta() {
				// A sharded node's meta replica caught up: every pair
				// again, in the fresh snapshot.
				snap, logs, i = s.h.cfg.Policies.Load(), 0, -2
				continue
			}
		}
		p, err := s.checkPolicy(pol, pairs[i])
		if err != nil {
			s.rejectDecision(err)
			return
		}
		if !s.user.Perms().AllowsAllKeys() {
			limit, _ := p.Resolve(nil)
			key := policy.AppendCheckKey(nil, p.Name, limit.Algo, pairs[i+1])
			if err := s.derivedKeyError(key, acl.Read|acl.Write); err != nil {
				s.rejectDecision(err)
				return
			}
		}
		if p.Limit.Algo == algorithms.Log {
			if logs++; n > 0 && n > s.h.cfg.AllMaxLogUnits/logs {
				s.rejectDecision(errCheckTooManyUnits(s.h.cfg.AllMaxLogUnits))
				return
			}
		}
	}
	group := s.nextGroup()
	kind := kindCheckAll
	for _, shadow := range [2]bool{false, true} {
		for i := 0; i < len(pairs); i += 2 {
			p := snap.Policy(pairs[i])
			if p.Shadow != shadow {
				continue
			}
			limit, mode := p.Resolve(nil)
			g := group
			if shadow {
				g = 0
			}
			key, ovr := s.checkKeysOf(p, limit.Algo, pairs[i+1], true)
			c := s.checks()
			c.items = append(c.items, checkItem{p: p, mode: mode, slot: int32(i / 2), ovr: ovr})
			s.queueDecision(algorithms.Request{Key: key, Limit: limit, N: n, Group: g, Override: ovr}, kind)
			kind = kindCheckAllMember
		}
	}
}

// writeCheckAll writes the reply of an RL.CHECK of several pairs from its
// items' outcomes, in queue order, as writeAll does for RL.ALL: the
// decisions in the order of the pairs, after each policy's mode. If one
// failed (WRONGTYPE …), the reply is that error.
func (s *session) writeCheckAll(outs []algorithms.Outcome, items []checkItem) {
	for i := range outs {
		if outs[i].Err != nil {
			s.writeError(outs[i].Err)
			return
		}
	}
	c := s.checks()
	c.outs = append(c.outs[:0], make([]algorithms.Result, len(outs))...)
	for i := range outs {
		r, wouldDeny := policy.Reply(items[i].mode, items[i].p.Limit, outs[i].Result)
		if wouldDeny {
			s.h.shadowDenied.Add(1)
		}
		s.countPolicy(items[i].p, r.Allowed, wouldDeny)
		c.outs[items[i].slot] = r
	}
	denied := int64(-1)
	for i := range c.outs {
		if !c.outs[i].Allowed {
			denied = int64(i)
			break
		}
	}
	if denied < 0 {
		s.allowed++
	} else {
		s.denied++
	}
	if s.resp3.Load() {
		s.writeMap(3)
		s.writeBulkString("allowed")
		s.writeBool(denied < 0)
		s.writeBulkString("denied_index")
		s.writeInt(denied)
		s.writeBulkString("results")
	} else {
		s.writeArray(3)
		s.writeBool(denied < 0)
		s.writeInt(denied)
	}
	s.writeArray(len(c.outs))
	for i := range c.outs {
		s.writeDecision(&c.outs[i])
	}
}
