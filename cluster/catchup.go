package cluster

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
)

// Read-your-writes on a replica. A change to the group's replicated state
// (a policy, a user) is acknowledged once the node that ran it has applied
// it; the other replicas apply it when they learn its commit, a commit
// interval later. A node about to answer that something does not exist
// first catches up: it learns the leader's commit index, confirmed with a
// quorum (ReadIndex, META.INDEX), and waits until its own state holds
// every entry up to it. Every change acknowledged before the catch-up began
// is then in force here.

// errCatchUp: the replica did not catch up with the leader in time.
var errCatchUp = errors.New("cluster: this replica did not catch up with the leader")

// ReadIndex returns the group's commit index as this node, its ready
// leader, knows it, once a quorum has confirmed its leadership
// (raft.VerifyLeader): every entry committed before the call is at or below
// it. A node that is not the ready leader answers CLUSTERDOWN.
func (n *Node) ReadIndex() (uint64, error) {
	if !n.ready.Load() {
		return 0, errNotLeader
	}
	index := n.raft.CommitIndex()
	if err := n.raft.VerifyLeader().Error(); err != nil || !n.ready.Load() {
		return 0, errNotLeader
	}
	return index, nil
}

// CatchUp returns once this replica's state holds every entry the group
// had committed when it was called, or an error after about d (no leader,
// the leader unreachable, the replica slow). The commit index is the
// leader's ReadIndex: this node's own if it is the ready leader, else the
// leader's answer to META.INDEX (RAFT.INDEX does not exist: CatchUp serves
// the meta group). Safe for concurrent use; it blocks its caller only.
func (n *Node) CatchUp(d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		index, err := n.leaderIndex(deadline)
		if err == nil {
			return n.waitHolds(index, deadline)
		}
		if !retryable(err) || time.Now().After(deadline) {
			return fmt.Errorf("%w: %w", errCatchUp, err)
		}
		select {
		case <-n.stop:
			return fmt.Errorf("%w: %w", errCatchUp, errNoLeader)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// leaderIndex returns the leader's ReadIndex: this node's own, or the
// leader's reply to META.INDEX, waited for until deadline.
func (n *Node) leaderIndex(deadline time.Time) (uint64, error) {
	if n.ready.Load() {
		return n.ReadIndex()
	}
	_, leaderID := n.raft.LeaderWithID()
	switch addr := n.fsm.Member(string(leaderID)); {
	case leaderID == raft.ServerID(n.cfg.ID):
		return 0, errNotReady
	case leaderID == "" || addr == "":
		return 0, errNoLeader
	default:
		type answer struct {
			reply []byte
			err   error
		}
		ch := make(chan answer, 1) // the call may outlive this wait: it never blocks on the send
		go func() {
			reply, err := n.fwd.call(addr, []byte(n.command("INDEX")))
			ch <- answer{reply, err}
		}()
		timer := time.NewTimer(time.Until(deadline))
		defer timer.Stop()
		select {
		case a := <-ch:
			if a.err != nil {
				return 0, a.err
			}
			index, err := strconv.ParseUint(string(a.reply), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: reply %q: %w", n.command("INDEX"), a.reply, err)
			}
			return index, nil
		case <-timer.C:
			return 0, fmt.Errorf("%s: no reply from the leader at %s", n.command("INDEX"), addr)
		}
	}
}

// waitHolds waits until this replica's state holds every entry up to
// index, or deadline passes.
func (n *Node) waitHolds(index uint64, deadline time.Time) error {
	for n.raft.AppliedIndex() < index {
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: raft has applied %d of %d", errCatchUp, n.raft.AppliedIndex(), index)
		}
		time.Sleep(2 * time.Millisecond)
	}
	// Raft has handed every entry up to index to the FSM's goroutine; the
	// FSM holds them once it has applied the last command among them (the
	// FSM's own index counts commands only: raft keeps no-ops, barriers
	// and configurations from it).
	last := n.lastCommand(index)
	for n.fsm.AppliedIndex() < last {
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: the state machine has applied %d of %d", errCatchUp, n.fsm.AppliedIndex(), last)
		}
		time.Sleep(2 * time.Millisecond)
	}
	return nil
}

// lastCommand returns the index of the last command entry at or below
// index that the FSM may not hold yet, or 0 if it holds them all. It reads
// the log down from index, and stops at the FSM's own index or at the
// first entry the log no longer has (compacted: a snapshot the FSM holds).
// After a restore the FSM's index is 0 until its next command, and the
// restored snapshot's index bounds what it holds. raft must have applied
// index.
func (n *Node) lastCommand(index uint64) uint64 {
	fi := n.fsm.AppliedIndex()
	for i := index; i > fi; i-- {
		var l raft.Log
		if err := n.cfg.Logs.GetLog(i, &l); err != nil {
			return 0
		}
		if l.Type != raft.LogCommand {
			continue
		}
		if fi == 0 {
			if snap, _ := strconv.ParseUint(n.raft.Stats()["last_snapshot_index"], 10, 64); i <= snap {
				return 0
			}
		}
		return i
	}
	return 0
}
