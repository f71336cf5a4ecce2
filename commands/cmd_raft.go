package commands

import "github.com/sluice-rl/sluice/algorithms"

// The replicated group's commands: RAFT.MEMBERS, RAFT.JOIN, RAFT.REMOVE,
// RAFT.TRANSFER, RAFT.SNAPSHOT, READONLY/READWRITE, and RAFT.FORWARD, the
// internal command a follower uses to hand its clients' operations to the
// leader.

// Cluster is what these commands need from a replicated node; nil on a
// single node.
type Cluster interface {
	// Forward runs encoded submissions from a follower, all at the instant
	// now, and returns each one's encoded results or error.
	Forward(now int64, blobs [][]byte) ([][]byte, []error)
	// MemberFields describes each member as name/value pairs, leader first.
	MemberFields() ([][][2]string, error)
	// Join adds a member: a voter, or with nonvoter one that receives
	// the log and never votes.
	Join(id, raftAddr, respAddr string, nonvoter bool) error
	Remove(id string) error
	Transfer(id string) error
	Snapshot() error
	InfoReplication() [][2]string
	// LocalDecide answers peeks from this node's own, possibly stale, state
	// (READONLY connections).
	LocalDecide(reqs []algorithms.Request, out []algorithms.Outcome)
	// LocalInfo answers RL.INFO from this node's own state (READONLY).
	LocalInfo(key []byte) (algorithms.KeyInfo, error)
	// ReadIndex returns the group's commit index if this node is its
	// ready leader, once a quorum has confirmed its leadership
	// (META.INDEX).
	ReadIndex() (uint64, error)

	PolicyReplicator
	RulesPublisher
	UserReplicator
}

func init() {
	register(
		&command{name: "raft.members", arity: 1, flags: flagAdmin, run: cmdRaftMembers, group: "cluster", since: "0.1.0",
			summary: "Lists the group's members: id, raft and RESP addresses, role.", complexity: "O(N)"},
		&command{name: "raft.join", arity: -4, maxArgs: 5, flags: flagAdmin, run: cmdRaftJoin, group: "cluster", since: "0.1.0",
			summary: "Adds a voter, or a non-voter (run on any member; followers ask the leader).", complexity: "O(1)",
			arguments: []argDoc{{name: "id", typ: "string"}, {name: "raft-addr", typ: "string"}, {name: "resp-addr", typ: "string"},
				{name: "nonvoter", typ: "pure-token", token: "NONVOTER", optional: true}}},
		&command{name: "raft.remove", arity: 2, flags: flagAdmin, run: cmdRaftRemove, group: "cluster", since: "0.1.0",
			summary: "Removes a member from the group.", complexity: "O(1)", arguments: []argDoc{{name: "id", typ: "string"}}},
		&command{name: "raft.transfer", arity: -1, maxArgs: 2, flags: flagAdmin, run: cmdRaftTransfer, group: "cluster",
			since: "0.1.0", summary: "Hands leadership to the member id, or to the most up-to-date follower.", complexity: "O(1)",
			arguments: []argDoc{{name: "id", typ: "string", optional: true}}},
		&command{name: "raft.snapshot", arity: 1, flags: flagAdmin, run: cmdRaftSnapshot, group: "cluster", since: "0.1.0",
			summary: "Takes a snapshot now and compacts the log.", complexity: "O(N)"},
		&command{name: "raft.forward", arity: 2, flags: flagAdmin | flagForward, run: cmdRaftForward, group: "cluster", since: "0.1.0",
			summary: "Internal: a follower's forwarded operations.", complexity: "O(N)"},
		&command{name: "readonly", arity: 1, flags: flagFast, run: cmdReadonly, group: "cluster", since: "0.1.0",
			summary: "Answers this connection's peeks (n = 0) from this node's own, possibly stale, state.", complexity: "O(1)"},
		&command{name: "readwrite", arity: 1, flags: flagFast, run: cmdReadwrite, group: "cluster", since: "0.1.0",
			summary: "Sends this connection's peeks through the leader again (the default).", complexity: "O(1)"},
	)
}

func (s *session) cluster() Cluster {
	if s.onMeta {
		if s.h.cfg.Meta == nil {
			s.writeError(errNoMeta)
		}
		return s.h.cfg.Meta
	}
	if s.h.cfg.Cluster == nil {
		s.writeError(errNoCluster)
	}
	return s.h.cfg.Cluster
}

func cmdRaftMembers(s *session, args [][]byte) {
	cl := s.cluster()
	if cl == nil {
		return
	}
	members, err := cl.MemberFields()
	if err != nil {
		s.writeError(err)
		return
	}
	s.writeArray(len(members))
	for _, m := range members {
		s.writeMap(len(m))
		for _, kv := range m {
			s.writeBulkString(kv[0])
			s.writeBulkString(kv[1])
		}
	}
}

func cmdRaftJoin(s *session, args [][]byte) {
	if cl := s.cluster(); cl != nil {
		nonvoter := len(args) == 5
		if nonvoter && !equalFold(args[4], "nonvoter") {
			s.writeError(errSyntax)
			return
		}
		s.replyOK(cl.Join(string(args[1]), string(args[2]), string(args[3]), nonvoter))
	}
}

func cmdRaftRemove(s *session, args [][]byte) {
	if cl := s.cluster(); cl != nil {
		s.replyOK(cl.Remove(string(args[1])))
	}
}

func cmdRaftTransfer(s *session, args [][]byte) {
	if cl := s.cluster(); cl != nil {
		id := ""
		if len(args) == 2 {
			id = string(args[1])
		}
		s.replyOK(cl.Transfer(id))
	}
}

func cmdRaftSnapshot(s *session, args [][]byte) {
	if cl := s.cluster(); cl != nil {
		s.replyOK(cl.Snapshot())
	}
}

// cmdRaftForward queues a forwarded submission. The forwards a peer
// pipelines arrive in one read and are handed to the leader's batcher
// together, so they share log entries (deferred.go, runForwards).
func cmdRaftForward(s *session, args [][]byte) {
	if s.cluster() != nil {
		s.queueForward(args[1])
	}
}

func cmdReadonly(s *session, args [][]byte) {
	if s.cluster() != nil {
		s.readonly = true
		s.writeOK()
	}
}

func cmdReadwrite(s *session, args [][]byte) {
	if s.cluster() != nil {
		s.readonly = false
		s.writeOK()
	}
}

func (s *session) replyOK(err error) {
	if err != nil {
		s.writeError(err)
		return
	}
	s.writeOK()
}

// keyInfo reads key's state for RL.INFO: through the keyspace, or from this
// node's own state on a READONLY connection.
func (s *session) keyInfo(key []byte) (algorithms.KeyInfo, error) {
	if cl := s.h.cfg.Cluster; s.readonly && cl != nil {
		return cl.LocalInfo(key)
	}
	return s.h.ks.Info(s.conn.Now(), key)
}
