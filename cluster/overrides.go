package cluster

import (
	"encoding/binary"
)

// Overrides (RL.OVERRIDE) are store entries: SET is an opOverride entry of
// the log, applied by every node's store at the same index; GET is an
// opInfo and DEL an opDelete, as for any key; the decisions that consult
// them name the override key in their request (opCheck on the wire), so
// every node decides with the override in force at the decision's index.

// SetOverride stores the packed override words w under key through the
// log, and returns whether the key held no live override before. It
// returns once this node has applied it too (or after aclApplyWait, with a
// warning), as a policy change does: the client's next RL.OVERRIDE LIST
// here, or RL.CHECK's named reply (its quota is read from this node's
// replica), sees it.
func (n *Node) SetOverride(now int64, key []byte, w [3]int64) (bool, error) {
	var words [24]byte
	for i, v := range w {
		binary.LittleEndian.PutUint64(words[8*i:], uint64(v))
	}
	r, err := n.submitHere(now, []op{{code: opOverride, argv: [][]byte{key, words[:]}}}, "an override")
	if err != nil {
		return false, err
	}
	return r.n == 1, r.out.Err
}

// applyOverride carries out an opOverride op. Called from Apply (raft's
// FSM goroutine) only.
func (f *stateMachine) applyOverride(at int64, o *op, r *result) {
	if len(o.argv) != 2 || len(o.argv[1]) != 24 {
		r.out.Err = errCorruptOverride
		return
	}
	var w [3]int64
	for i := range w {
		w[i] = int64(binary.LittleEndian.Uint64(o.argv[1][8*i:]))
	}
	created, err := f.st.SetOverride(at, o.argv[0], w)
	if created {
		r.n = 1
	}
	r.out.Err = err
	if err == nil { // the entry's index, for SetOverride's wait (as applyPolicy's)
		r.acl, r.index = true, f.applying
	}
}

// LocalOverride reads key's override from this node's replica at the
// applied time, without the log.
func (n *Node) LocalOverride(now int64, key []byte) (w [3]int64, ok bool) {
	return n.st.LocalOverride(n.fsm.AppliedTime(), key)
}
