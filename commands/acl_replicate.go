package commands

import (
	"os"

	"github.com/sluice-rl/sluice/acl"
)

// In a replicated group, ACL SETUSER, DELUSER and LOAD change the group's
// users through the Raft log (package cluster): every node applies the
// same changes in the same order, and a follower forwards them to the
// leader. Reads (GETUSER, LIST, USERS, DRYRUN, AUTH) answer from the node's
// own users, as the log has brought them; ACL SAVE writes the node's own
// aclfile from them; ACL LOG is the node's own.

// UserReplicator is a Cluster that replicates the ACL users through its
// log: Replicate carries out a change (argv as package acl's Users.Apply
// takes it) on every node, and returns ACL DELUSER's count.
type UserReplicator interface {
	ReplicateACL(now int64, argv [][]byte) (int64, error)
}

// userReplicator returns the Cluster as a UserReplicator, or nil on a
// single node (or a cluster that replicates no users).
func (h *Handler) userReplicator() UserReplicator {
	if r, ok := h.cfg.Cluster.(UserReplicator); ok {
		return r
	}
	return nil
}

// changeUsers carries out an ACL change: through the log in a group, on
// this node's users otherwise. It writes the reply: OK, or DELUSER's count
// when count is set.
func (s *session) changeUsers(argv [][]byte, count bool) {
	var n int64
	var err error
	if r := s.h.userReplicator(); r != nil {
		n, err = r.ReplicateACL(s.h.clock.Now(), argv)
	} else {
		n, err = s.h.acl.users.Apply(argv)
	}
	switch {
	case err != nil:
		s.writeError(errACL(err))
	case count:
		s.writeInt(n)
	default:
		s.writeOK()
	}
}

// aclLoad is ACL LOAD: the node's aclfile, read here and applied to the
// group's users (or this node's).
func (s *session) aclLoad() {
	path := s.h.cfg.ACLFile
	if path == "" {
		s.writeError(errNoACLFile)
		return
	}
	text, err := os.ReadFile(path)
	if err != nil {
		// LoadFile words the failure as Redis does.
		s.writeError(errACL(acl.NewUsers(s.h.acl.reg).LoadFile(path)))
		return
	}
	s.changeUsers([][]byte{[]byte("load"), []byte(path), text}, false)
}
