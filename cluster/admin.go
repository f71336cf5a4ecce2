package cluster

import (
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
)

// The operations behind RAFT.MEMBERS, RAFT.JOIN, RAFT.REMOVE,
// RAFT.TRANSFER, RAFT.SNAPSHOT and INFO replication.

// Member describes one voter of the group.
type Member struct {
	ID       string
	RaftAddr string
	RESPAddr string
	Leader   bool
	Voter    bool
}

// Members returns the group's configuration, leader first.
func (n *Node) Members() ([]Member, error) {
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, err
	}
	_, leader := n.raft.LeaderWithID()
	resp := n.fsm.Members()
	var out []Member
	for _, s := range f.Configuration().Servers {
		out = append(out, Member{
			ID: string(s.ID), RaftAddr: string(s.Address), RESPAddr: resp[string(s.ID)],
			Leader: s.ID == leader, Voter: s.Suffrage == raft.Voter,
		})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Leader && !out[j].Leader })
	return out, nil
}

// MemberFields describes each member as name/value pairs, leader first, for
// RAFT.MEMBERS.
func (n *Node) MemberFields() ([][][2]string, error) {
	members, err := n.Members()
	if err != nil {
		return nil, err
	}
	out := make([][][2]string, len(members))
	for i, m := range members {
		role := "follower"
		if m.Leader {
			role = "leader"
		}
		if !m.Voter {
			role = "nonvoter"
		}
		out[i] = [][2]string{{"id", m.ID}, {"raft_addr", m.RaftAddr}, {"resp_addr", m.RESPAddr}, {"role", role}}
	}
	return out, nil
}

// Join adds a voter, or with nonvoter a member that receives the log and
// never votes. On a follower it asks the leader. Joining again with
// the same addresses is a no-op, so a restarted joiner can retry safely;
// an id that is a member at another Raft address is refused.
// Under mutual TLS the leader first checks that the joiner's Raft port
// completes it (tlsport.go).
func (n *Node) Join(id, raftAddr, respAddr string, nonvoter bool) error {
	if id == "" || raftAddr == "" || respAddr == "" {
		return errJoinArgs
	}
	if !n.ready.Load() {
		if nonvoter {
			return n.askLeader(n.command("JOIN"), id, raftAddr, respAddr, "NONVOTER")
		}
		return n.askLeader(n.command("JOIN"), id, raftAddr, respAddr)
	}
	// The voter count read here decides the suffrage of the server added
	// below: two joins that both read it before either adds would both add
	// a voter.
	n.membership.Lock()
	defer n.membership.Unlock()
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return err
	}
	known := false
	for _, s := range f.Configuration().Servers {
		switch {
		case string(s.ID) == id && string(s.Address) == raftAddr:
			known = true
		case string(s.ID) == id:
			// raft would move the member to raftAddr: a second process
			// with the same --node-id would take its place.
			return fmt.Errorf("%w %s: %s is already a member at %s (two nodes with one --node-id?); if it moved, "+
				"run %s %s first", errNotAdding, id, id, s.Address, n.command("REMOVE"), id)
		}
	}
	if !known && n.stream != nil {
		// Under mutual TLS a node that cannot complete it would be a voter
		// no one can reach: refuse it before it counts towards the quorum.
		if err := n.stream.probe(raftAddr); err != nil {
			return fmt.Errorf("%w %s: %v", errNotAdding, id, err)
		}
	}
	if !known {
		add := n.raft.AddVoter
		if nonvoter || n.cfg.Meta && voters(f.Configuration()) >= MetaVoters {
			add = n.raft.AddNonvoter
		}
		if err := add(raft.ServerID(id), raft.ServerAddress(raftAddr), 0, 10*time.Second).Error(); err != nil {
			return fmt.Errorf("%w %s: %w", errAdding, id, err)
		}
	}
	_, err := n.batcher.submit(0, []op{{code: opMember, id: id, addr: respAddr}})
	return err
}

// MetaVoters is the number of voters the meta group takes: a node joining
// it once it has that many joins as a non-voter.
const MetaVoters = 3

// voters counts the voters of a configuration.
func voters(c raft.Configuration) int {
	n := 0
	for _, s := range c.Servers {
		if s.Suffrage == raft.Voter {
			n++
		}
	}
	return n
}

// Remove takes a voter out of the group.
func (n *Node) Remove(id string) error {
	if !n.ready.Load() {
		return n.askLeader(n.command("REMOVE"), id)
	}
	if err := n.raft.RemoveServer(raft.ServerID(id), 0, 10*time.Second).Error(); err != nil {
		return fmt.Errorf("%w %s: %w", errRemoving, id, err)
	}
	_, err := n.batcher.submit(0, []op{{code: opMember, id: id}})
	return err
}

// Transfer hands leadership to id, or to the most up-to-date follower.
func (n *Node) Transfer(id string) error {
	if !n.ready.Load() {
		if id == "" {
			return n.askLeader(n.command("TRANSFER"))
		}
		return n.askLeader(n.command("TRANSFER"), id)
	}
	var f raft.Future
	if id == "" {
		f = n.raft.LeadershipTransfer()
	} else {
		members, err := n.Members()
		if err != nil {
			return err
		}
		addr := ""
		for _, m := range members {
			if m.ID == id {
				addr = m.RaftAddr
			}
		}
		if addr == "" {
			return fmt.Errorf("%w %q", errNoMember, id)
		}
		f = n.raft.LeadershipTransferToServer(raft.ServerID(id), raft.ServerAddress(addr))
	}
	if err := f.Error(); err != nil {
		return fmt.Errorf("%w: %w", errTransfer, err)
	}
	return nil
}

// Snapshot takes a snapshot now and compacts the log.
func (n *Node) Snapshot() error {
	if err := n.raft.Snapshot().Error(); err != nil {
		return fmt.Errorf("%w: %w", errSnapshot, err)
	}
	return nil
}

// askLeader runs an administrative command on the leader.
func (n *Node) askLeader(args ...string) error {
	_, leaderID := n.raft.LeaderWithID()
	addr := n.fsm.Member(string(leaderID))
	if leaderID == "" || addr == "" {
		return errNoLeader
	}
	if string(leaderID) == n.cfg.ID {
		return errNotReady
	}
	bargs := make([][]byte, len(args))
	for i, a := range args {
		bargs[i] = []byte(a)
	}
	_, err := n.fwd.call(addr, bargs...)
	return err
}

// appliedIndex is the last entry whose effects this node's state holds: the
// FSM's own count, or raft's right after a snapshot restore (when the FSM has
// applied nothing since, and the restored state is complete).
func (n *Node) appliedIndex() uint64 {
	if i := n.fsm.AppliedIndex(); i > 0 {
		return min(i, n.raft.AppliedIndex())
	}
	return n.raft.AppliedIndex()
}

// InfoReplication returns INFO's replication section.
func (n *Node) InfoReplication() [][2]string {
	stats := n.raft.Stats()
	leaderAddr, leaderID := n.raft.LeaderWithID()
	_ = leaderAddr
	role := "follower"
	switch n.raft.State() {
	case raft.Leader:
		role = "leader"
	case raft.Candidate:
		role = "candidate"
	case raft.Shutdown:
		role = "shutdown"
	}
	contact := int64(0)
	if role != "leader" {
		if lc := n.raft.LastContact(); !lc.IsZero() {
			contact = time.Since(lc).Milliseconds()
		} else {
			contact = -1
		}
	}
	voters := 0
	if f := n.raft.GetConfiguration(); f.Error() == nil {
		for _, s := range f.Configuration().Servers {
			if s.Suffrage == raft.Voter {
				voters++
			}
		}
	}
	entries, ops, maxSeen := n.batcher.entries.Load(), n.batcher.ops.Load(), n.batcher.maxSeen.Load()
	avg := "0"
	if entries > 0 {
		avg = strconv.FormatFloat(float64(ops)/float64(entries), 'f', 1, 64)
	}
	return [][2]string{
		{"role", role},
		{"node_id", n.cfg.ID},
		{"leader_id", string(leaderID)},
		{"leader_addr", n.fsm.Member(string(leaderID))},
		{"ready", strconv.FormatBool(n.ready.Load())},
		{"members", strconv.Itoa(voters)},
		{"term", stats["term"]},
		{"commit_index", strconv.FormatUint(n.raft.CommitIndex(), 10)},
		{"applied_index", strconv.FormatUint(n.appliedIndex(), 10)},
		{"last_log_index", strconv.FormatUint(n.raft.LastIndex(), 10)},
		{"last_contact_ms", strconv.FormatInt(contact, 10)},
		{"applied_time_ms", strconv.FormatInt(n.fsm.AppliedTime()/1e6, 10)},
		{"log_entries_written", strconv.FormatInt(entries, 10)},
		{"batch_ops_avg", avg},
		{"batch_ops_max", strconv.FormatInt(maxSeen, 10)},
		{"fsync", strconv.FormatBool(n.cfg.Fsync)},
		{"raft_refused_connections", strconv.FormatInt(n.RefusedConnections(), 10)},
		{"raft_tls", yesNo(n.stream != nil && n.stream.clientTLS != nil)},
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
