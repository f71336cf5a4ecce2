package cluster

import (
	"errors"
	"fmt"
	"testing"

	"github.com/sluice-rl/sluice/internal/replyerr"
	"github.com/sluice-rl/sluice/store"
)

// goldenReplyErrors is every reply error of the cluster, wrapped as the
// package wraps them, relayed from a peer, and the bytes a client reads.
var goldenReplyErrors = []struct {
	name string
	err  error
	wire string
}{
	{"errNoLeader", errNoLeader, "-CLUSTERDOWN no leader: the group has no quorum right now; nothing was applied\r\n"},
	{"errNotReady", errNotReady, "-CLUSTERDOWN the leader is still applying its predecessor's entries; nothing was applied\r\n"},
	{"errNotLeader", errNotLeader, "-CLUSTERDOWN this node is not the leader; nothing was applied\r\n"},
	{"errReadonlyWrite", errReadonlyWrite, "-READONLY You can't write against a read only replica.\r\n"},
	{"errCorruptForward", errCorruptForward, "-ERR RAFT.FORWARD: corrupt submission\r\n"},
	{"errJoinArgs", errJoinArgs, "-ERR RAFT.JOIN needs an id, a raft address and a RESP address\r\n"},
	{"errNoMember", errNoMember, "-ERR no member\r\n"},
	{"errAdding", errAdding, "-ERR adding\r\n"},
	{"errRemoving", errRemoving, "-ERR removing\r\n"},
	{"errTransfer", errTransfer, "-ERR leadership transfer\r\n"},
	{"errSnapshot", errSnapshot, "-ERR snapshot\r\n"},
	{"errNoACL", errNoACL, "-ERR this node replicates no ACL users\r\n"},
	{"errNoPolicies", errNoPolicies, "-ERR this node replicates no policies\r\n"},
	{"errCorruptOverride", errCorruptOverride, "-ERR a malformed override entry\r\n"},
	{"errUnknown(\"the reason\")", errUnknown("the reason"), "-UNKNOWN outcome unknown: the reason; the decision may or may not have been applied\r\n"},
	{"fmt.Errorf(\"%w %q\", errNoMember, \"n4\")", fmt.Errorf("%w %q", errNoMember, "n4"), "-ERR no member \"n4\"\r\n"},
	{"fmt.Errorf(\"%w %s: %w\", errAdding, \"n4\", errors.New(\"raft: the reason\"))", fmt.Errorf("%w %s: %w", errAdding, "n4", errors.New("raft: the reason")), "-ERR adding n4: raft: the reason\r\n"},
	{"replyError(\"ERR relayed from a peer\")", replyError("ERR relayed from a peer"), "-ERR relayed from a peer\r\n"},
	{"replyError(\"WRONGTYPE relayed from a peer\")", replyError("WRONGTYPE relayed from a peer"), "-WRONGTYPE relayed from a peer\r\n"},
	{"store.ErrWrongType", store.ErrWrongType, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
}

func TestReplyErrorsGolden(t *testing.T) {
	for _, tc := range goldenReplyErrors {
		if got := string(replyerr.Append(nil, tc.err)); got != tc.wire {
			t.Errorf("%s is written %q; want %q", tc.name, got, tc.wire)
		}
	}
}
