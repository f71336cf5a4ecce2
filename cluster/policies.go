package cluster

import (
	"encoding/binary"
	"fmt"
	"io"
)

// The named policies that commands define (RL.POLICY SET/DEL) are
// replicated state, as the users are (acl.go): every change is an
// opPolicy entry of the log, applied by every node's FSM in log order, and
// the whole set is part of every snapshot, so that all nodes decide with
// the same command policies at the same index and a node that restarts or
// joins gets them with the rest of the state. Rules files are not in the
// log: each node reads its own, and INFO policies' rules_hash shows
// whether they agree (docs/policies.md).

// Policies is the command-defined policies a node replicates
// (*policy.Registry implements it). Apply and Decode must be
// deterministic: the same set and the same input give the same set on
// every node, whatever rules files the nodes hold.
type Policies interface {
	// Apply carries out one change ("set" encoded-policy, or "del" name)
	// and returns how many policies it deleted.
	Apply(argv [][]byte) (int64, error)
	// Encode returns the whole command-defined set; Decode replaces it.
	Encode() []byte
	Decode(data []byte) error
}

// maxPolicyBytes bounds the policies' encoding in a snapshot.
const maxPolicyBytes = 64 << 20

// applyPolicy carries out an opPolicy op. Called from Apply (raft's FSM
// goroutine) only. Its result carries the entry's index, as an ACL
// change's does, so that the node that submitted it can wait for its own
// log to apply it.
func (f *stateMachine) applyPolicy(o *op, r *result) {
	if f.policies == nil || len(o.argv) == 0 {
		r.out.Err = errNoPolicies
		return
	}
	r.n, r.out.Err = f.policies.Apply(o.argv)
	if r.out.Err == nil {
		r.acl, r.index = true, f.applying
	}
}

// appendPolicyState appends the snapshot's policies section:
//
//	has:u8 [policies:bytes]   (has 0: this node replicates no policies)
func (f *stateMachine) appendPolicyState(b []byte) []byte {
	if f.policies == nil {
		return append(b, 0)
	}
	return appendBytes(append(b, 1), f.policies.Encode())
}

// restorePolicyState reads the section appendPolicyState wrote and returns
// a function that installs it, called once the whole snapshot has been
// read.
func (f *stateMachine) restorePolicyState(r io.ByteReader, read func(n uint64) ([]byte, error)) (func() error, error) {
	has, err := r.ReadByte()
	if err != nil || has > 1 {
		return nil, fmt.Errorf("cluster: snapshot policies: %v", err)
	}
	if has == 0 {
		return func() error { return nil }, nil
	}
	n, err := binary.ReadUvarint(r)
	if err != nil || n > maxPolicyBytes {
		return nil, fmt.Errorf("cluster: snapshot policies: %v", err)
	}
	data, err := read(n)
	if err != nil {
		return nil, fmt.Errorf("cluster: snapshot policies: %w", err)
	}
	return func() error {
		if f.policies == nil {
			return nil
		}
		if err := f.policies.Decode(data); err != nil {
			return fmt.Errorf("cluster: snapshot policies: %w", err)
		}
		return nil
	}, nil
}

// ReplicatePolicy carries out a change of the command-defined policies
// ("set" encoded-policy or "del" name) through the log: on the leader, or
// forwarded to it from a follower. It returns once this node has applied
// it too (or after aclApplyWait, with a warning), and the number of
// policies a "del" deleted.
func (n *Node) ReplicatePolicy(now int64, argv [][]byte) (int64, error) {
	if n.cfg.Policies == nil {
		return 0, errNoPolicies
	}
	rs, err := n.submit(now, []op{{code: opPolicy, argv: argv}})
	if err != nil {
		return 0, err
	}
	if len(rs) != 1 {
		return 0, errUnknown("the leader's reply was short")
	}
	if rs[0].out.Err == nil && !n.waitApplied(rs[0].index, aclApplyWait) {
		n.log.Warn("raft: a policy change is applied on the leader but not yet here", "index", rs[0].index)
	}
	return rs[0].n, rs[0].out.Err
}
