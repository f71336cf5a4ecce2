package cluster

import (
	"encoding/binary"
	"fmt"
	"io"
	"time"
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
	if len(o.argv) == 2 && string(o.argv[0]) == rulesWord {
		if len(o.argv[1]) == 32 {
			h := [32]byte(o.argv[1])
			f.leaderRules.Store(&h)
		}
		return
	}
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
//	has:u8 [policies:bytes] rules:u8 [hash:32 bytes]
//
// has 0: this node replicates no policies; rules 0: no leader has
// published its rules hash yet.
func (f *stateMachine) appendPolicyState(b []byte) []byte {
	if f.policies == nil {
		b = append(b, 0)
	} else {
		b = appendBytes(append(b, 1), f.policies.Encode())
	}
	if h := f.leaderRules.Load(); h != nil {
		return append(append(b, 1), h[:]...)
	}
	return append(b, 0)
}

// restorePolicyState reads the section appendPolicyState wrote and returns
// a function that installs it, called once the whole snapshot has been
// read.
func (f *stateMachine) restorePolicyState(r io.ByteReader, read func(n uint64) ([]byte, error)) (func() error, error) {
	has, err := r.ReadByte()
	if err != nil || has > 1 {
		return nil, fmt.Errorf("cluster: snapshot policies: %v", err)
	}
	var data []byte
	if has == 1 {
		n, err := binary.ReadUvarint(r)
		if err != nil || n > maxPolicyBytes {
			return nil, fmt.Errorf("cluster: snapshot policies: %v", err)
		}
		if data, err = read(n); err != nil {
			return nil, fmt.Errorf("cluster: snapshot policies: %w", err)
		}
	}
	rules, err := r.ReadByte()
	if err != nil || rules > 1 {
		return nil, fmt.Errorf("cluster: snapshot rules hash: %v", err)
	}
	var hash *[32]byte
	if rules == 1 {
		b, err := read(32)
		if err != nil {
			return nil, fmt.Errorf("cluster: snapshot rules hash: %w", err)
		}
		h := [32]byte(b)
		hash = &h
	}
	return func() error {
		f.leaderRules.Store(hash)
		if f.policies == nil || has == 0 {
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
	r, err := n.submitHere(now, []op{{code: opPolicy, argv: argv}}, "a policy change")
	if err != nil {
		return 0, err
	}
	return r.n, r.out.Err
}

// rulesWord is the first word of the change by which a leader publishes
// its rules files' hash: every node then compares its own with it (INFO
// policies' rules_agree_with_leader), so that a node deciding with other
// rules than the leader's says so.
const rulesWord = "rules"

// rulesEvery is how often a leader checks whether the hash in the log is
// its own, and publishes it if not (after an election, or a reload).
const rulesEvery = time.Second

// publishRules, on the leader, publishes its rules hash whenever the log's
// differs from it; on a follower it does nothing. It runs until the node
// stops.
func (n *Node) publishRules() {
	n.everyAsLeader(rulesEvery, func() {
		own := n.cfg.RulesHash()
		if p := n.fsm.leaderRules.Load(); p != nil && *p == own {
			return
		}
		if _, err := n.batcher.submit(0, []op{{code: opPolicy, argv: [][]byte{[]byte(rulesWord), own[:]}}}); err != nil {
			n.log.Debug("raft: publishing the rules hash failed; retrying", "err", err)
		}
	})
}

// LeaderRulesHash returns the rules hash the group's leader last
// published, and whether one has been published since this node started.
func (n *Node) LeaderRulesHash() ([32]byte, bool) {
	if p := n.fsm.leaderRules.Load(); p != nil {
		return *p, true
	}
	return [32]byte{}, false
}
