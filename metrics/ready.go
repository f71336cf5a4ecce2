package metrics

import (
	"errors"
	"fmt"
	"strconv"
)

// MaxApplyLag is how far a group member's applied index may trail the
// commit index it knows and still be ready: 1000 log entries, which a
// member applies in well under a second.
const MaxApplyLag = 1000

// The reasons a group member is not ready.
var (
	errNoLeader   = errors.New("no leader known")
	errShutDown   = errors.New("raft is shut down")
	errBadReplica = errors.New("replication figures missing")
)

// GroupReady says whether a group member can decide, from INFO
// replication's fields: it knows a leader, it is a member, and it has
// applied the log to within MaxApplyLag entries of the commit index. (A
// node that has not joined a group yet knows no leader.)
func GroupReady(fields [][2]string) error {
	m := map[string]string{}
	for _, kv := range fields {
		m[kv[0]] = kv[1]
	}
	commit, err1 := strconv.ParseUint(m["commit_index"], 10, 64)
	applied, err2 := strconv.ParseUint(m["applied_index"], 10, 64)
	switch {
	case err1 != nil || err2 != nil:
		return errBadReplica
	case m["role"] == "shutdown":
		return errShutDown
	case m["leader_id"] == "":
		return errNoLeader
	case commit > applied && commit-applied > MaxApplyLag:
		return fmt.Errorf("applied index %d trails the commit index %d by more than %d entries", applied, commit, MaxApplyLag)
	}
	return nil
}
