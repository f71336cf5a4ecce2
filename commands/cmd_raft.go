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
	Join(id, raftAddr, respAddr string) error
	Remove(id string) error
	Transfer(id string) error
	Snapshot() error
	InfoReplication() [][2]string
	// LocalDecide answers peeks from this node's own, possibly stale, state
	// (READONLY connections).
	LocalDecide(reqs []algorithms.Request, out []algorithms.Outcome)
	// LocalInfo answers RL.INFO from this node's own state (READONLY).
	LocalInfo(key []byte) (algorithms.KeyInfo, error)
}

var errNoCluster = Error("ERR This instance has cluster support disabled")

func init() {
	register(
		&command{name: "raft.members", arity: 1, flags: flagAdmin, run: cmdRaftMembers, group: "cluster", since: "0.1.0",
			summary: "Lists the group's members: id, raft and RESP addresses, role.", complexity: "O(N)"},
		&command{name: "raft.join", arity: 4, flags: flagAdmin, run: cmdRaftJoin, group: "cluster", since: "0.1.0",
			summary: "Adds a voter (run on any member; followers ask the leader).", complexity: "O(1)",
			arguments: []argDoc{{name: "id", typ: "string"}, {name: "raft-addr", typ: "string"}, {name: "resp-addr", typ: "string"}}},
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

func (c *Client) cluster() Cluster {
	if c.srv.cfg.Cluster == nil {
		c.writeError(errNoCluster)
	}
	return c.srv.cfg.Cluster
}

func cmdRaftMembers(c *Client, args [][]byte) {
	cl := c.cluster()
	if cl == nil {
		return
	}
	members, err := cl.MemberFields()
	if err != nil {
		c.writeError(err)
		return
	}
	c.writeArray(len(members))
	for _, m := range members {
		c.writeMap(len(m))
		for _, kv := range m {
			c.writeBulkString(kv[0])
			c.writeBulkString(kv[1])
		}
	}
}

func cmdRaftJoin(c *Client, args [][]byte) {
	if cl := c.cluster(); cl != nil {
		c.replyOK(cl.Join(string(args[1]), string(args[2]), string(args[3])))
	}
}

func cmdRaftRemove(c *Client, args [][]byte) {
	if cl := c.cluster(); cl != nil {
		c.replyOK(cl.Remove(string(args[1])))
	}
}

func cmdRaftTransfer(c *Client, args [][]byte) {
	if cl := c.cluster(); cl != nil {
		id := ""
		if len(args) == 2 {
			id = string(args[1])
		}
		c.replyOK(cl.Transfer(id))
	}
}

func cmdRaftSnapshot(c *Client, args [][]byte) {
	if cl := c.cluster(); cl != nil {
		c.replyOK(cl.Snapshot())
	}
}

// cmdRaftForward queues a forwarded submission. The forwards a peer
// pipelines arrive in one read and are handed to the leader's batcher
// together, so they share log entries (see runForwards).
func cmdRaftForward(c *Client, args [][]byte) {
	if c.cluster() != nil {
		c.forwards = append(c.forwards, args[1])
	}
}

// runForwards carries out the queued forwards and writes their replies.
// Every other command runs it first, so replies keep their order.
func (c *Client) runForwards() {
	if len(c.forwards) == 0 {
		return
	}
	replies, errs := c.srv.cfg.Cluster.Forward(c.now, c.forwards)
	for i := range c.forwards {
		if errs[i] != nil {
			c.writeError(errs[i])
			continue
		}
		c.writeBulk(replies[i])
	}
	clear(c.forwards)
	c.forwards = c.forwards[:0]
}

func cmdReadonly(c *Client, args [][]byte) {
	if c.cluster() != nil {
		c.readonly = true
		c.writeOK()
	}
}

func cmdReadwrite(c *Client, args [][]byte) {
	if c.cluster() != nil {
		c.readonly = false
		c.writeOK()
	}
}

func (c *Client) replyOK(err error) {
	if err != nil {
		c.writeError(err)
		return
	}
	c.writeOK()
}

// decide carries out the batch's pending decisions: through the keyspace,
// except that a READONLY connection's peeks are answered from this node's
// own state.
func (c *Client) decide(out []algorithms.Outcome) {
	cl := c.srv.cfg.Cluster
	if !c.readonly || cl == nil {
		c.srv.ks.Decide(c.now, c.pending, out)
		return
	}
	var rest []algorithms.Request
	var restIdx []int
	for i := range c.pending {
		r := &c.pending[i]
		if r.N == 0 && r.Group == 0 {
			cl.LocalDecide(c.pending[i:i+1], out[i:i+1])
			continue
		}
		rest = append(rest, *r)
		restIdx = append(restIdx, i)
	}
	if len(rest) == 0 {
		return
	}
	restOut := make([]algorithms.Outcome, len(rest))
	c.srv.ks.Decide(c.now, rest, restOut)
	for j, i := range restIdx {
		out[i] = restOut[j]
	}
}

// keyInfo reads key's state for RL.INFO: through the keyspace, or from this
// node's own state on a READONLY connection.
func (c *Client) keyInfo(key []byte) (algorithms.KeyInfo, error) {
	if cl := c.srv.cfg.Cluster; c.readonly && cl != nil {
		return cl.LocalInfo(key)
	}
	return c.srv.ks.Info(c.now, key)
}

// replicationInfo is INFO's replication section.
func (s *Server) replicationInfo() []Param {
	if s.cfg.Cluster == nil {
		return []Param{{"role", "master"}, {"connected_slaves", "0"}, {"cluster_enabled", "0"}}
	}
	var out []Param
	for _, kv := range s.cfg.Cluster.InfoReplication() {
		out = append(out, Param{kv[0], kv[1]})
	}
	return append(out, Param{"cluster_enabled", "1"})
}
