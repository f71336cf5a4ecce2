package commands

// The meta group's twins of the RAFT.* commands: in a sharded cluster a
// process is also a replica of the meta group, the small Raft group that
// holds the slot table, the data groups' members, the command-defined
// policies and the ACL users (docs/cluster.md). META.MEMBERS, META.JOIN,
// META.REMOVE, META.TRANSFER and META.SNAPSHOT are RAFT.MEMBERS … on that
// group; META.FORWARD is its followers' internal forward, and META.INDEX
// the leader's confirmed commit index, which a replica catches up to
// before it answers that a policy or a user does not exist (MetaSync).

func init() {
	register(
		&command{name: "meta.members", arity: 1, flags: flagAdmin, run: onMeta(cmdRaftMembers), group: "cluster", since: "0.2.0",
			summary: "Lists the meta group's members: id, raft and RESP addresses, role.", complexity: "O(N)"},
		&command{name: "meta.join", arity: -4, maxArgs: 5, flags: flagAdmin, run: onMeta(cmdRaftJoin), group: "cluster", since: "0.2.0",
			summary: "Adds a voter, or a non-voter, to the meta group.", complexity: "O(1)",
			arguments: []argDoc{{name: "id", typ: "string"}, {name: "raft-addr", typ: "string"}, {name: "resp-addr", typ: "string"},
				{name: "nonvoter", typ: "pure-token", token: "NONVOTER", optional: true}}},
		&command{name: "meta.remove", arity: 2, flags: flagAdmin, run: onMeta(cmdRaftRemove), group: "cluster", since: "0.2.0",
			summary: "Removes a member from the meta group.", complexity: "O(1)", arguments: []argDoc{{name: "id", typ: "string"}}},
		&command{name: "meta.transfer", arity: -1, maxArgs: 2, flags: flagAdmin, run: onMeta(cmdRaftTransfer), group: "cluster",
			since: "0.2.0", summary: "Hands the meta group's leadership to the member id, or to the most up-to-date follower.", complexity: "O(1)",
			arguments: []argDoc{{name: "id", typ: "string", optional: true}}},
		&command{name: "meta.snapshot", arity: 1, flags: flagAdmin, run: onMeta(cmdRaftSnapshot), group: "cluster", since: "0.2.0",
			summary: "Takes a snapshot of the meta group now and compacts its log.", complexity: "O(N)"},
		&command{name: "meta.forward", arity: 2, flags: flagAdmin, run: cmdMetaForward, group: "cluster", since: "0.2.0",
			summary: "Internal: a meta group follower's forwarded operations.", complexity: "O(N)"},
		&command{name: "meta.index", arity: 1, flags: flagAdmin, run: cmdMetaIndex, group: "cluster", since: "0.2.0",
			summary: "Internal: the meta group leader's commit index, once a quorum has confirmed its leadership.", complexity: "O(1)"},
	)
}

// onMeta runs a RAFT.* command's handler on the meta group.
func onMeta(run func(*session, [][]byte)) func(*session, [][]byte) {
	return func(s *session, args [][]byte) {
		s.onMeta = true
		run(s, args)
		s.onMeta = false
	}
}

// cmdMetaForward carries out one forwarded submission on the meta group
// and writes its reply; meta entries are few, so it is not batched.
func cmdMetaForward(s *session, args [][]byte) {
	cl := s.h.cfg.Meta
	if cl == nil {
		s.writeError(errNoMeta)
		return
	}
	replies, errs := cl.Forward(s.conn.Now(), [][]byte{args[1]})
	if errs[0] != nil {
		s.writeError(errs[0])
		return
	}
	s.writeBulk(replies[0])
}

// cmdMetaIndex replies the meta group's commit index if this node is its
// ready leader, confirmed by a quorum (Cluster.ReadIndex), else
// CLUSTERDOWN.
func cmdMetaIndex(s *session, _ [][]byte) {
	cl := s.h.cfg.Meta
	if cl == nil {
		s.writeError(errNoMeta)
		return
	}
	index, err := cl.ReadIndex()
	if err != nil {
		s.writeError(err)
		return
	}
	s.writeInt(int64(index))
}
