package cluster

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"time"
)

// The rules files (--policies) are each node's own: they are not in the
// log (docs/policies.md says why). What the log carries is the leader's
// hash of them: the ready leader announces its policy.RuleSet.Hash as an
// opRules entry whenever the one the log holds is not its own (after an
// election, and after a reload of its files), so that every node compares
// its own hash with the leader's at the same log index and INFO policies
// says when they differ (rules_leader_match). The announced hash is part
// of every snapshot, so a node restored from one still knows it.

// RulesHasher is Policies that also holds the node's rules files
// (*policy.Registry implements it): RulesHash is the SHA-256 of the rules
// in force (policy.RuleSet.Hash; the empty set's when there are none).
type RulesHasher interface {
	RulesHash() [32]byte
}

// rulesPoll is how often a node compares its rules with the leader's, and
// the ready leader announces its own when the log's differ.
const rulesPoll = time.Second

// leaderRules is the rules hash a leader announced through the log.
type leaderRules struct {
	id   string // the announcing leader
	hash []byte // 32 bytes; nil: none announced yet
}

// applyRules carries out an opRules op: argv is the leader's id and its
// hash. Called from Apply (raft's FSM goroutine) only.
func (f *stateMachine) applyRules(o *op, r *result) {
	if len(o.argv) != 2 || len(o.argv[1]) != 32 {
		r.out.Err = errCorrupt
		return
	}
	f.mu.Lock()
	f.rules = leaderRules{id: string(o.argv[0]), hash: bytes.Clone(o.argv[1])}
	f.mu.Unlock()
}

// LeaderRules returns the rules hash the leader last announced through the
// log and its id; a nil hash if none has been applied yet.
func (f *stateMachine) LeaderRules() (id string, hash []byte) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.rules.id, f.rules.hash
}

// appendRulesState appends the snapshot's section of the leader's rules
// hash. It requires f.mu.
//
//	has:u8 [id:bytes hash:bytes]
func (f *stateMachine) appendRulesState(b []byte) []byte {
	if f.rules.hash == nil {
		return append(b, 0)
	}
	b = appendBytes(append(b, 1), []byte(f.rules.id))
	return appendBytes(b, f.rules.hash)
}

// restoreRulesState reads appendRulesState's section.
func restoreRulesState(r io.ByteReader, read func() ([]byte, error)) (leaderRules, error) {
	has, err := r.ReadByte()
	if err != nil || has > 1 {
		return leaderRules{}, fmt.Errorf("cluster: snapshot rules hash: %v", err)
	}
	if has == 0 {
		return leaderRules{}, nil
	}
	id, err1 := read()
	hash, err2 := read()
	if err1 != nil || err2 != nil || len(hash) != 32 {
		return leaderRules{}, fmt.Errorf("cluster: snapshot rules hash: %v %v (%d bytes)", err1, err2, len(hash))
	}
	return leaderRules{id: string(id), hash: hash}, nil
}

// LeaderRulesHash returns the rules hash the leader last announced through
// the log, the announcing leader's id, and whether one has been announced.
func (n *Node) LeaderRulesHash() (hash [32]byte, leaderID string, ok bool) {
	id, h := n.fsm.LeaderRules()
	if h == nil {
		return hash, "", false
	}
	copy(hash[:], h)
	return hash, id, true
}

// rulesLoop runs while the node does, if its Policies hold rules files:
// every rulesPoll the ready leader announces its rules hash when the log's
// is not its own, and every node logs when its own starts or stops
// differing from the leader's.
func (n *Node) rulesLoop(hasher RulesHasher) {
	defer n.stopped.Done()
	tick := time.NewTicker(rulesPoll)
	defer tick.Stop()
	differed := false
	for {
		select {
		case <-n.stop:
			return
		case <-tick.C:
		}
		own := hasher.RulesHash()
		id, logged := n.fsm.LeaderRules()
		if n.ready.Load() && (id != n.cfg.ID || !bytes.Equal(logged, own[:])) {
			// Errors are retried at the next tick.
			n.batcher.submit(0, []op{{code: opRules, argv: [][]byte{[]byte(n.cfg.ID), own[:]}}})
			continue
		}
		if logged == nil {
			continue
		}
		if differs := !bytes.Equal(logged, own[:]); differs != differed {
			differed = differs
			if differs {
				n.log.Warn("policies: this node's rules files differ from the leader's; it decides RL.CHECK and RL.MATCH "+
					"with its own (INFO policies: rules_leader_match:no)", "rules_hash", hex.EncodeToString(own[:8]),
					"leader_rules_hash", hex.EncodeToString(logged[:8]), "leader_id", id)
			} else {
				n.log.Info("policies: this node's rules files match the leader's again", "rules_hash", hex.EncodeToString(own[:8]))
			}
		}
	}
}
