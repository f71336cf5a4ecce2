package cluster

import "errors"

// The reasons a node refuses to start a new group or to join (wrapped with the
// details and the recovery procedure), and a peer's unreadable reply.
var (
	errWasMember    = errors.New("cluster: refusing to bootstrap")
	errPeerInGroup  = errors.New("cluster: refusing to bootstrap")
	errPeersSilent  = errors.New("cluster: refusing to bootstrap")
	errStillMember  = errors.New("cluster: not joining")
	errMembersReply = errors.New("cluster: malformed RAFT.MEMBERS reply")
	errNoIdentity   = errors.New("cluster: a node needs --node-id and a RESP address")
	errNoRaftBind   = errors.New("cluster: a node needs --raft-bind")
)

// The errors a client sees from a replicated group. Their first word is the
// Redis Cluster error code a client library already knows how to handle:
// CLUSTERDOWN means nothing was applied, TRYAGAIN that the outcome is
// unknown. Neither is ever an admission.

type clusterError string

func (e clusterError) Error() string { return string(e) }

const (
	errNoLeader       clusterError = "CLUSTERDOWN no leader: the group has no quorum right now; nothing was applied"
	errNotReady       clusterError = "CLUSTERDOWN the leader is still applying its predecessor's entries; nothing was applied"
	errNotLeader      clusterError = "CLUSTERDOWN this node is not the leader; nothing was applied"
	errCorruptForward clusterError = "ERR RAFT.FORWARD: corrupt submission"
	errReadonlyWrite  clusterError = "READONLY You can't write against a read only replica."
)

// errUnknown is the reply when a decision may or may not have been
// committed: leadership was lost after it was appended, or the connection
// to the leader broke after it was sent.
func errUnknown(why string) clusterError {
	return clusterError("TRYAGAIN outcome unknown: " + why + "; the decision may or may not have been applied")
}
