package cluster

import (
	"errors"

	"github.com/sluice-rl/sluice/internal/replyerr"
)

// The cluster's errors, in one block. The errors a client sees are reply
// errors: their first word is an error code (CLUSTERDOWN and READONLY mean
// nothing was applied, as client libraries take them, retrying by
// themselves; UNKNOWN that the outcome is unknown, a code no client
// library retries; none is ever an admission), or they are Generic, of
// Redis's generic ERR, which the one rule (replyerr.Line) adds. Errors that
// add details wrap these with %w.
var (
	// Refusals to start or to join, wrapped with the details and the
	// recovery procedure.
	errWasMember   = errors.New("cluster: refusing to bootstrap")
	errPeerInGroup = errors.New("cluster: refusing to bootstrap")
	errPeersSilent = errors.New("cluster: refusing to bootstrap")
	errStillMember = errors.New("cluster: not joining")
	errWrongGroup  = errors.New("cluster: refusing to start")
	// errGroupClaimed: the meta group records another group of this
	// data group's number; this one serves nothing (shard.go).
	errGroupClaimed = errors.New("cluster: another group holds this data group's number")
	// errNoSlots: neither the slot table nor this group's log gives it a
	// slot (a --cluster-group above the cluster's groups; shard.go).
	errNoSlots    = errors.New("cluster: this data group owns no slot")
	errNoIdentity = errors.New("cluster: a node needs --node-id and a RESP address")
	errNoRaftBind = errors.New("cluster: a node needs --raft-bind")

	errMembersReply = errors.New("cluster: malformed RAFT.MEMBERS reply") // a peer's unreadable reply
	errCorrupt      = errors.New("cluster: corrupt batch encoding")

	// errNotApplied means the submission never reached the log (this node
	// was not the leader, or could not enqueue it): retrying elsewhere is
	// safe.
	errNotApplied = errors.New("not applied: this node is not the leader")

	errNoLeader          = replyerr.New(replyerr.CLUSTERDOWN, "no leader: the group has no quorum right now; nothing was applied")
	errNotReady          = replyerr.New(replyerr.CLUSTERDOWN, "the leader is still applying its predecessor's entries; nothing was applied")
	errNotLeader         = replyerr.New(replyerr.CLUSTERDOWN, "this node is not the leader; nothing was applied")
	errReadonlyWrite     = replyerr.New(replyerr.READONLY, "You can't write against a read only replica.")
	errSlotUnserved      = replyerr.New(replyerr.CLUSTERDOWN, "Hash slot not served")
	errCorruptForward    = replyerr.Generic("RAFT.FORWARD: corrupt submission")
	errLeaderOnlyForward = replyerr.Generic("a forwarded submission may not carry a leader's own entries (its members, its slots)")
	errJoinArgs          = replyerr.Generic("RAFT.JOIN needs an id, a raft address and a RESP address")
	errNoMember          = replyerr.Generic("no member")  // "no member \"n4\""
	errAdding            = replyerr.Generic("adding")     // "adding n4: " and raft's reason
	errNotAdding         = replyerr.Generic("not adding") // "not adding n4: " and the probe's reason
	errRemoving          = replyerr.Generic("removing")
	errTransfer          = replyerr.Generic("leadership transfer")
	errSnapshot          = replyerr.Generic("snapshot")
	errNoACL             = replyerr.Generic("this node replicates no ACL users")
	errNoPolicies        = replyerr.Generic("this node replicates no policies")
	errCorruptOverride   = replyerr.Generic("a malformed override entry")
	errFenceStep         = replyerr.Generic("migration step not applied") // the slots are not in a state the step applies to
)

// errUnknown is the reply when a decision may or may not have been
// committed: leadership was lost after it was appended, or the connection
// to the leader broke after it was sent. Its code is UNKNOWN, never
// TRYAGAIN: go-redis, the cluster clients of ioredis and redis-py and
// others retry TRYAGAIN by themselves, and a retry of a decision that had
// been applied would charge it twice. No client library retries UNKNOWN:
// go-redis and redis-py match whole codes, and UNKNOWN does not begin with
// ASK or MOVED, the bare prefixes node-redis's cluster client matches.
func errUnknown(why string) replyerr.Error {
	return replyerr.New(replyerr.UNKNOWN, "outcome unknown: "+why+"; the decision may or may not have been applied")
}
