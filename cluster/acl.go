package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// The ACL users of a group are replicated state: every change (ACL
// SETUSER, DELUSER, LOAD) is an opACL entry of the log, applied by every
// node's FSM in log order, and the users are part of every snapshot, so
// that all nodes hold the same users at the same index and a node that
// restarts or joins gets them with the rest of the state.
//
// Until the log carries users, each node serves the users it started with
// (--requirepass, --aclfile). The first change a node submits is preceded,
// in the same entry, by a seed: that node's whole set. The FSM applies a
// seed only while the log has carried no users, so the first seed in the
// log wins and the later ones (from nodes that had not applied it yet)
// change nothing. A leader started with an --aclfile seeds the group with
// it once elected.

// ACL is the users a node replicates (*acl.Users implements it). Apply and
// Decode must be deterministic: the same set and the same input give the
// same set on every node.
type ACL interface {
	// Apply carries out one change (setuser/deluser/load, see package acl)
	// and returns ACL DELUSER's count.
	Apply(argv [][]byte) (int64, error)
	// Check reports the error Apply would return, changing nothing.
	Check(argv [][]byte) error
	// Encode returns the whole set; Decode replaces the set with one.
	Encode() []byte
	Decode(data []byte) error
}

// aclSeed is the first word of a seed change: the submitting node's whole
// set, applied only while the log has carried no users.
const aclSeed = "seed"

// aclApplyWait bounds how long a node that forwarded an ACL change waits
// for its own log to apply it before it answers.
const aclApplyWait = 5 * time.Second

// maxACLBytes bounds the users' encoding in a snapshot.
const maxACLBytes = 64 << 20

// applyACL carries out an opACL op. Called from Apply (raft's FSM
// goroutine) only.
func (f *stateMachine) applyACL(o *op, r *result) {
	if f.acl == nil || len(o.argv) == 0 {
		r.out.Err = errNoACL
		return
	}
	if string(o.argv[0]) == aclSeed {
		if f.aclSet.Load() || len(o.argv) != 2 {
			return
		}
		if r.out.Err = f.acl.Decode(o.argv[1]); r.out.Err == nil {
			f.aclSet.Store(true)
		}
		return
	}
	r.n, r.out.Err = f.acl.Apply(o.argv)
	if r.out.Err == nil {
		f.aclSet.Store(true)
		r.acl, r.index = true, f.applying
	}
}

// appendACLState appends the snapshot's users section:
//
//	set:u8 [users:bytes]   (set 1: the log has carried users, and these are they)
func (f *stateMachine) appendACLState(b []byte) []byte {
	if f.acl == nil || !f.aclSet.Load() {
		return append(b, 0)
	}
	return appendBytes(append(b, 1), f.acl.Encode())
}

// restoreACLState reads the section appendACLState wrote and returns a
// function that installs it, called once the whole snapshot has been read.
func (f *stateMachine) restoreACLState(r io.ByteReader, read func(n uint64) ([]byte, error)) (func() error, error) {
	set, err := r.ReadByte()
	if err != nil || set > 1 {
		return nil, fmt.Errorf("cluster: snapshot users: %v", err)
	}
	if set == 0 {
		return func() error { f.aclSet.Store(false); return nil }, nil
	}
	n, err := binary.ReadUvarint(r)
	if err != nil || n > maxACLBytes {
		return nil, fmt.Errorf("cluster: snapshot users: %v", err)
	}
	data, err := read(n)
	if err != nil {
		return nil, fmt.Errorf("cluster: snapshot users: %w", err)
	}
	return func() error {
		if f.acl != nil {
			if err := f.acl.Decode(data); err != nil {
				return fmt.Errorf("cluster: snapshot users: %w", err)
			}
		}
		f.aclSet.Store(true)
		return nil
	}, nil
}

// ACLReplicated reports whether the log has carried users: from then on
// this node's users are the group's.
func (n *Node) ACLReplicated() bool { return n.fsm.aclSet.Load() }

// ReplicateACL carries out an ACL change (setuser/deluser/load, see package
// acl) through the log: on the leader, or forwarded to it from a follower.
// It returns once the leader has applied it; this node applies it when its
// log catches up (at once on the leader). A change Check refuses never
// reaches the log.
func (n *Node) ReplicateACL(now int64, argv [][]byte) (int64, error) {
	if n.cfg.ACL == nil {
		return 0, errNoACL
	}
	if err := n.cfg.ACL.Check(argv); err != nil {
		return 0, err
	}
	ops := make([]op, 0, 2)
	if !n.fsm.aclSet.Load() {
		ops = append(ops, op{code: opACL, argv: [][]byte{[]byte(aclSeed), n.cfg.ACL.Encode()}})
	}
	ops = append(ops, op{code: opACL, argv: argv})
	last, err := n.submitHere(now, ops, "an ACL change")
	if err != nil {
		return 0, err
	}
	return last.n, last.out.Err
}

// submitHere submits ops, whose last one's result carries the index of its
// entry (acl results), and returns that result once this node has applied
// the entry too (or after aclApplyWait, with a warning naming what): a
// change made through a follower is then in force there when the client
// gets its reply. The error is the submission's; the change's own is in
// the result.
func (n *Node) submitHere(now int64, ops []op, what string) (result, error) {
	rs, err := n.submit(now, ops)
	if err != nil {
		return result{}, err
	}
	if len(rs) != len(ops) {
		return result{}, errUnknown("the leader's reply was short")
	}
	last := rs[len(rs)-1]
	if last.out.Err == nil && !n.waitApplied(last.index, aclApplyWait) {
		n.log.Warn("raft: "+what+" is applied on the leader but not yet here", "index", last.index)
	}
	return last, nil
}

// waitApplied waits up to d for this node's FSM to apply the entry at
// index, and reports whether it did. A follower calls it after the leader
// answered a change it forwarded, so that the change is in force here too
// when the client gets its reply.
func (n *Node) waitApplied(index uint64, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		// After a restore the FSM's own index is 0 until the next entry,
		// and raft's applied index is the snapshot's.
		fi := n.fsm.AppliedIndex()
		if fi >= index || fi == 0 && n.raft.AppliedIndex() >= index {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// seedACL offers this leader's users as the group's first set, if the log
// has carried none (Config.SeedACL: the node loaded an --aclfile).
func (n *Node) seedACL() {
	if n.cfg.ACL == nil || !n.cfg.SeedACL || n.fsm.aclSet.Load() {
		return
	}
	_, err := n.batcher.submit(0, []op{{code: opACL, argv: [][]byte{[]byte(aclSeed), n.cfg.ACL.Encode()}}})
	if err != nil && !errors.Is(err, errNotApplied) {
		n.log.Warn("raft: offering the --aclfile's users to the group failed", "err", err)
		return
	}
	if err == nil {
		n.log.Info("raft: offered this node's --aclfile users to the group (the first set in the log is the group's)")
	}
}
