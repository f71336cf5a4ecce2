package commands

import "github.com/sluice-rl/sluice/policy"

// Read-your-writes for what a sharded cluster's meta group replicates:
// command-defined policies and users. The node that ran RL.POLICY SET or
// ACL SETUSER replies once its meta replica has applied the change; the
// other nodes apply it a commit interval later. So before a node answers
// that a policy or a user does not exist, or that a password does not
// match, it catches its meta replica up (Config.MetaSync) and looks once
// more. A lookup that finds what it seeks pays nothing.

// syncMeta catches this node's meta replica up, and reports whether it
// did: false on an unsharded node, or when the bounded wait ran out (the
// caller then answers as it would have).
func (s *session) syncMeta() bool {
	sync := s.h.cfg.MetaSync
	return sync != nil && sync() == nil
}

// policyNamed returns the policy named name, or nil if there is none, even
// after catching the meta replica up.
func (s *session) policyNamed(name []byte) *policy.Policy {
	p := s.h.cfg.Policies.Policy(name)
	if p == nil && s.syncMeta() {
		p = s.h.cfg.Policies.Policy(name)
	}
	return p
}
