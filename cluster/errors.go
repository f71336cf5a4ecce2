package cluster

import "errors"

// The cluster's errors, in one block. The errors a client sees are reply
// errors: their first word is an error code (CLUSTERDOWN and READONLY mean
// nothing was applied, as client libraries take them, retrying by
// themselves; UNKNOWN that the outcome is unknown, a code no client
// library retries; none is ever an admission), or they have none and the
// commands' one rule gives them Redis's generic ERR. Errors that add
// details wrap these with %w.
var (
	// Refusals to start or to join, wrapped with the details and the
	// recovery procedure.
	errWasMember   = errors.New("cluster: refusing to bootstrap")
	errPeerInGroup = errors.New("cluster: refusing to bootstrap")
	errPeersSilent = errors.New("cluster: refusing to bootstrap")
	errStillMember = errors.New("cluster: not joining")
	errNoIdentity  = errors.New("cluster: a node needs --node-id and a RESP address")
	errNoRaftBind  = errors.New("cluster: a node needs --raft-bind")

	errMembersReply = errors.New("cluster: malformed RAFT.MEMBERS reply") // a peer's unreadable reply
	errCorrupt      = errors.New("cluster: corrupt batch encoding")

	// errNotApplied means the submission never reached the log (this node
	// was not the leader, or could not enqueue it): retrying elsewhere is
	// safe.
	errNotApplied = errors.New("not applied: this node is not the leader")

	errNoLeader        = clusterError("CLUSTERDOWN no leader: the group has no quorum right now; nothing was applied")
	errNotReady        = clusterError("CLUSTERDOWN the leader is still applying its predecessor's entries; nothing was applied")
	errNotLeader       = clusterError("CLUSTERDOWN this node is not the leader; nothing was applied")
	errReadonlyWrite   = clusterError("READONLY You can't write against a read only replica.")
	errCorruptForward  = clusterError("RAFT.FORWARD: corrupt submission")
	errJoinArgs        = clusterError("RAFT.JOIN needs an id, a raft address and a RESP address")
	errNoMember        = clusterError("no member") // "no member \"n4\""
	errAdding          = clusterError("adding")    // "adding n4: " and raft's reason
	errRemoving        = clusterError("removing")
	errTransfer        = clusterError("leadership transfer")
	errSnapshot        = clusterError("snapshot")
	errNoACL           = clusterError("this node replicates no ACL users")
	errNoPolicies      = clusterError("this node replicates no policies")
	errCorruptOverride = clusterError("a malformed override entry")
)

// clusterError is a reply error of the cluster (comparable with ==).
type clusterError string

func (e clusterError) Error() string { return string(e) }

// errUnknown is the reply when a decision may or may not have been
// committed: leadership was lost after it was appended, or the connection
// to the leader broke after it was sent. Its code is UNKNOWN, never
// TRYAGAIN: go-redis, the cluster clients of ioredis and redis-py and
// others retry TRYAGAIN by themselves, and a retry of a decision that had
// been applied would charge it twice. No client library retries UNKNOWN:
// go-redis and redis-py match whole codes, and UNKNOWN does not begin with
// ASK or MOVED, the bare prefixes node-redis's cluster client matches.
func errUnknown(why string) clusterError {
	return clusterError(unknownCode + " outcome unknown: " + why + "; the decision may or may not have been applied")
}

// unknownCode is the error code of an unknown outcome.
const unknownCode = "UNKNOWN"
