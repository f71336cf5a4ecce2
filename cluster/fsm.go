package cluster

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/compat"
	"github.com/sluice-rl/sluice/keyslot"
	"github.com/sluice-rl/sluice/store"
)

// stateMachine is the raft.FSM: it applies the replicated log to a store.
//
// Determinism: Apply reads no clock. Each entry carries the leader's
// timestamp, and the FSM applies it at max(timestamp, the last applied
// time), so applied time never moves backwards, not even across leaders
// whose clocks disagree. Every replica that applies the same log reaches
// the same state.
//
// Concurrency: raft calls Apply, Snapshot and Restore from one goroutine.
// AppliedTime and Member may be called from any goroutine.
type stateMachine struct {
	st *store.Store

	mu      sync.RWMutex
	applied int64             // the instant the last entry was applied at
	index   uint64            // the last entry applied, 0 after a restore
	members map[string]string // node id → RESP address

	acl    ACL         // the replicated users (acl.go); nil: none
	aclSet atomic.Bool // the log has carried users: acl holds the group's
	// policies are the replicated command-defined policies (policies.go);
	// nil: none. leaderRules is the rules hash the latest leader published.
	policies    Policies
	leaderRules atomic.Pointer[[32]byte]

	applying uint64 // the index of the entry Apply is carrying out (raft's FSM goroutine only)
	// mixed is whether the last entry applied held an op that is not a
	// decision: the next one is then decoded as ops at once, not first
	// tried as decisions only (applyDecisions).
	mixed bool

	// fence is a sharded data group's slots (fence.go), nil elsewhere;
	// meta the meta group's state (meta.go), nil elsewhere. Both change
	// in Apply and Restore only, under mu.
	fence      *slotSet
	fenceEpoch uint64
	slots      *[keyslot.Slots]slotMig // with fence: each slot's migration state (reshard.go)
	stage      staging                 // the shipment a target is receiving (reshard.go); FSM goroutine only
	meta       *metaState
	keep       []int // scratch: the indexes of a run's decisions that pass the fence

	reqs []algorithms.Request // scratch for runs of decisions
	outs []algorithms.Outcome
	ops  []op     // scratch: the entry being applied, decoded (it holds the last entry's keys until the next)
	rs   []result // scratch: the results of an entry no local submission waits for
	// proposals are the entries this node's batcher waits on: only their
	// results are read, so only they get results of their own. nil: every
	// entry does.
	proposals *proposals
	call      compat.Call // scratch for scripts and string commands
}

// newStateMachine returns the state machine over st and users (nil: the
// group replicates no users).
func newStateMachine(st *store.Store, users ACL, policies Policies) *stateMachine {
	return &stateMachine{st: st, members: map[string]string{}, acl: users, policies: policies}
}

// AppliedTime returns the instant the last entry was applied at: the
// cluster's notion of now for local reads and expiry.
func (f *stateMachine) AppliedTime() int64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.applied
}

// Member returns the RESP address recorded for node id.
func (f *stateMachine) Member(id string) string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.members[id]
}

// Members returns a copy of the id → RESP address table.
func (f *stateMachine) Members() map[string]string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make(map[string]string, len(f.members))
	for k, v := range f.members {
		out[k] = v
	}
	return out
}

// applyResponse is what Apply returns for an entry: one result per op, or
// the reason the entry could not be decoded.
type applyResponse struct {
	results []result
	err     error
}

// Apply applies one log entry.
func (f *stateMachine) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	if !f.mixed {
		if resp, done := f.applyDecisions(l); done {
			return resp
		}
	}
	now, ops, err := decodeBatchInto(l.Data, f.ops)
	if err != nil {
		return applyResponse{err: fmt.Errorf("entry %d: %w", l.Index, err)}
	}
	f.ops = ops
	at := f.begin(l.Index, now)
	mine := f.mine(l.Data)
	var results []result
	if mine {
		results = f.proposals.results(len(ops))
	} else {
		// Nobody reads these results: run writes every field it reads
		// back (the decisions' errors before refuseGroups, the others
		// cleared), so the scratch is not cleared as a whole.
		if cap(f.rs) < len(ops) {
			f.rs = make([]result, len(ops))
		}
		results = f.rs[:len(ops)]
	}
	f.run(at, ops, results)
	f.end(l.Index)
	f.mixed = false
	for i := range ops {
		if ops[i].code != opDecide {
			f.mixed = true
			break
		}
	}
	if !mine {
		return nil
	}
	return applyResponse{results: results}
}

// applyDecisions applies an entry of decisions only, decoded straight
// into requests (decodeDecisionsInto), as Apply's general path would: the
// run's decisions in one store call. It reports false, having applied
// nothing, for an entry holding any other op or refused by the fence (a
// slot not owned, which refuses whole RL.ALL groups: runDecisions does
// that), and for one that does not decode (Apply reports why).
func (f *stateMachine) applyDecisions(l *raft.Log) (any, bool) {
	now, reqs, ok := decodeDecisionsInto(l.Data, f.reqs[:0])
	f.reqs = reqs
	if !ok {
		return nil, false
	}
	defer clear(f.reqs) // drop the references into the entry
	if f.fence != nil {
		for i := range reqs {
			if f.fenceKey(reqs[i].Key) != nil {
				return nil, false
			}
		}
	}
	at := f.begin(l.Index, now)
	outs := f.outcomes(len(reqs))
	f.st.Decide(at, reqs, outs)
	var resp any
	if f.mine(l.Data) {
		results := f.proposals.results(len(reqs))
		for k := range outs {
			results[k].out = outs[k]
		}
		resp = applyResponse{results: results}
	}
	clear(outs)
	f.end(l.Index)
	return resp, true
}

// begin starts applying the entry at index stamped now: the applied time
// moves to now unless that is earlier, and is the instant returned.
func (f *stateMachine) begin(index uint64, now int64) int64 {
	f.mu.Lock()
	if now > f.applied {
		f.applied = now
	}
	at := f.applied
	f.mu.Unlock()
	f.applying = index
	return at
}

// end records the entry at index as applied.
func (f *stateMachine) end(index uint64) {
	f.mu.Lock()
	f.index = index
	f.mu.Unlock()
}

// mine reports whether the entry data is one this node's batcher waits
// on (every entry, without a batcher): only those get results.
func (f *stateMachine) mine(data []byte) bool {
	return f.proposals == nil || f.proposals.has(data)
}

// outcomes returns the scratch for n decisions' outcomes.
func (f *stateMachine) outcomes(n int) []algorithms.Outcome {
	if cap(f.outs) < n {
		f.outs = make([]algorithms.Outcome, n)
	}
	return f.outs[:n]
}

// AppliedIndex returns the index of the last entry Apply has carried out,
// or 0 if none since the last restore. Raft's own AppliedIndex moves when
// entries are handed to the FSM's goroutine, before they are applied, so a
// replica that reports it as caught up may not hold the state yet.
func (f *stateMachine) AppliedIndex() uint64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.index
}

// run applies ops at the instant at. Consecutive decisions go to the store
// in one call, so RL.ALL groups stay whole.
func (f *stateMachine) run(at int64, ops []op, results []result) {
	for i := 0; i < len(ops); {
		o := &ops[i]
		r := &results[i]
		switch o.code {
		case opDecide:
			i = f.runDecisions(at, ops, results, i)
			continue
		case opTx:
			i = f.runTx(at, ops, results, i)
			continue
		}
		*r = result{}
		if err := f.fenceOp(o); err != nil {
			r.out.Err = err
			i++
			continue
		}
		switch o.code {
		case opVersion:
			if len(o.keys) == 1 {
				v, err := f.st.Version(at, o.keys[0])
				r.n, r.out.Err = int64(v), err
			}
		case opDelete:
			r.n, r.out.Err = f.st.Delete(at, o.keys)
		case opExists:
			r.n, r.out.Err = f.st.Exists(at, o.keys)
		case opType:
			if len(o.keys) == 1 {
				algo, err := f.st.Type(at, o.keys[0])
				r.n, r.out.Err = int64(algo), err
			}
		case opTTL:
			if len(o.keys) == 1 {
				r.n, r.out.Err = f.st.TTL(at, o.keys[0])
			}
		case opInfo:
			if len(o.keys) == 1 {
				info, err := f.st.Info(at, o.keys[0])
				r.info, r.out.Err = &info, err
			}
		case opExec:
			f.call.Argv = o.argv
			f.st.Exec(at, o.xop, o.keys, &f.call)
			reply := f.call.Reply
			r.exec, r.reply = true, &reply
			f.call.Argv = nil
		case opDBSize:
			r.n, r.out.Err = f.st.DBSize(at)
		case opFlush:
			r.out.Err = f.st.Flush(at)
		case opACL:
			f.applyACL(o, r)
		case opPolicy:
			f.applyPolicy(o, r)
		case opOverride:
			f.applyOverride(at, o, r)
		case opMember:
			f.mu.Lock()
			if o.addr == "" {
				delete(f.members, o.id)
			} else {
				f.members[o.id] = o.addr
			}
			f.mu.Unlock()
		case opOwn:
			f.applyOwn(o, r)
		case opSlots:
			f.applySlots(o, r)
		case opGroup:
			f.applyGroup(o, r)
		case opMigration:
			f.applyMigration(at, o, r)
		case opFence:
			at = f.applyFence(at, o, r)
		}
		i++
	}
}

// runDecisions carries out the run of decide ops from ops[i] in one
// store.Decide call, so RL.ALL groups stay whole, and returns the index of
// the op after them. A decision outside the group's slots is refused
// (fence.go), and with it the rest of its RL.ALL group.
func (f *stateMachine) runDecisions(at int64, ops []op, results []result, i int) int {
	j := i
	f.reqs, f.keep = f.reqs[:0], f.keep[:0]
	for ; j < len(ops) && ops[j].code == opDecide; j++ {
		err := f.fenceKey(ops[j].req.Key)
		results[j].out.Err = err // refuseGroups reads it back; results may be a scratch
		if err != nil {
			continue
		}
		f.reqs = append(f.reqs, ops[j].req)
		f.keep = append(f.keep, j)
	}
	if len(f.keep) != j-i {
		f.refuseGroups(ops, results, i, j)
	}
	outs := f.outcomes(len(f.reqs))
	f.st.Decide(at, f.reqs, outs)
	for k := range outs {
		results[f.keep[k]].out = outs[k]
		outs[k] = algorithms.Outcome{}
	}
	clear(f.reqs)
	return j
}

// refuseGroups takes out of f.reqs and f.keep every decision of an RL.ALL
// group (a nonzero Group shared by consecutive requests) of ops[i:j] that
// has a refused member, refusing it with that member's error: a group is
// carried out whole or not at all.
func (f *stateMachine) refuseGroups(ops []op, results []result, i, j int) {
	reqs, keep := f.reqs[:0], f.keep[:0]
	for k, idx := range f.keep {
		g := ops[idx].req.Group
		var err error
		for m := idx - 1; g != 0 && m >= i && ops[m].req.Group == g && err == nil; m-- {
			err = results[m].out.Err
		}
		for m := idx + 1; g != 0 && m < j && ops[m].req.Group == g && err == nil; m++ {
			if _, ok := results[m].out.Err.(notOwnedError); ok {
				err = results[m].out.Err
			}
		}
		if err != nil {
			results[idx].out.Err = err
			continue
		}
		reqs, keep = append(reqs, f.reqs[k]), append(keep, idx)
	}
	f.reqs, f.keep = reqs, keep
}

// runTx carries out the transaction whose tx op is ops[i] and the decide
// and exec ops after it (at most its count), in one store.Transact call,
// and returns the index of the op after them.
func (f *stateMachine) runTx(at int64, ops []op, results []result, i int) int {
	j := i + 1
	for j < len(ops) && j-i-1 < ops[i].count && (ops[j].code == opDecide || ops[j].code == opExec) {
		j++
	}
	clear(results[i:j])
	reqs := make([]algorithms.Request, 0, j-i-1)
	var xops []compat.TxOp
	for k := i + 1; k < j; k++ {
		if ops[k].code == opExec {
			xops = append(xops, compat.TxOp{Before: len(reqs), Op: ops[k].xop, Keys: ops[k].keys, Argv: ops[k].argv})
			continue
		}
		reqs = append(reqs, ops[k].req)
	}
	if err := f.fenceTx(ops, i, j); err != nil {
		results[i].out.Err = err
		return j
	}
	outs := make([]algorithms.Outcome, len(reqs))
	ok, err := f.st.Transact(at, ops[i].watches, reqs, outs, xops)
	results[i].out.Err = err
	if ok {
		results[i].n = 1
		r, x := 0, 0
		for k := i + 1; k < j; k++ {
			if ops[k].code == opExec {
				results[k].exec, results[k].reply = true, &xops[x].Reply
				x++
				continue
			}
			results[k].out = outs[r]
			r++
		}
	}
	return j
}

// The FSM snapshot: a header, then the store's own snapshot.
//
//	magic "SLUICEFSM" version:u8 applied:i64le members:uvarint (id:bytes addr:bytes)* users policies store…
//
// users (acl.go) are in versions 2 and up, policies (policies.go) in 3
// and up; version 4 adds, after the policies, the shard state:
//
//	shard = nops:uvarint (len:uvarint op)*     (op: codec.go's encoding)
//
// a data group's own op (its fence), or the meta group's slots op and one
// group op per data group; none for a group that is neither. Version 5
// adds to a data group's a fence op of its slots' migration state
// (reshard.go), and to the meta group's one migration op per migration it
// records (migrate.go). Restore reads versions 1 to 4 too.
const fsmMagic = "SLUICEFSM"
const fsmVersion = 5

// Snapshot captures the state at the current index. Raft calls it between
// applies, so the capture is a point-in-time image; it only copies the
// entries (store.Capture), and Persist sorts, checksums and writes them
// while applies go on.
func (f *stateMachine) Snapshot() (raft.FSMSnapshot, error) {
	var hdr bytes.Buffer
	f.mu.RLock()
	hdr.WriteString(fsmMagic)
	hdr.WriteByte(fsmVersion)
	var b []byte
	b = binary.LittleEndian.AppendUint64(b, uint64(f.applied))
	ids := make([]string, 0, len(f.members))
	for id := range f.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		b = appendBytes(b, []byte(id))
		b = appendBytes(b, []byte(f.members[id]))
	}
	b = f.appendACLState(b)
	b = f.appendPolicyState(b)
	b = f.appendShardState(b)
	applied := f.applied
	f.mu.RUnlock()
	hdr.Write(b)
	return &fsmSnapshot{header: hdr.Bytes(), capture: f.st.Capture(applied)}, nil
}

// Restore replaces the state with a snapshot's.
func (f *stateMachine) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	br := bufio.NewReader(rc)
	magic := make([]byte, len(fsmMagic)+1)
	if _, err := io.ReadFull(br, magic); err != nil {
		return fmt.Errorf("cluster: snapshot header: %w", err)
	}
	version := magic[len(fsmMagic)]
	if string(magic[:len(fsmMagic)]) != fsmMagic || version < 1 || version > fsmVersion {
		return errors.New("cluster: not a sluice FSM snapshot, or an unknown version")
	}
	var ts [8]byte
	if _, err := io.ReadFull(br, ts[:]); err != nil {
		return fmt.Errorf("cluster: snapshot header: %w", err)
	}
	n, err := binary.ReadUvarint(br)
	if err != nil || n > 1<<16 {
		return fmt.Errorf("cluster: snapshot members: %v", err)
	}
	members := make(map[string]string, n)
	for i := uint64(0); i < n; i++ {
		id, err1 := readBytes(br)
		addr, err2 := readBytes(br)
		if err := errors.Join(err1, err2); err != nil {
			return fmt.Errorf("cluster: snapshot members: %w", err)
		}
		members[string(id)] = string(addr)
	}
	installACL := func() error { f.aclSet.Store(false); return nil }
	if version >= 2 {
		if installACL, err = f.restoreACLState(br, func(n uint64) ([]byte, error) {
			b := make([]byte, n)
			_, err := io.ReadFull(br, b)
			return b, err
		}); err != nil {
			return err
		}
	}
	installPolicies := func() error { return nil }
	if version >= 3 {
		if installPolicies, err = f.restorePolicyState(br, func(n uint64) ([]byte, error) {
			b := make([]byte, n)
			_, err := io.ReadFull(br, b)
			return b, err
		}); err != nil {
			return err
		}
	}
	var shard []op
	if version >= 4 {
		if shard, err = readShardState(br, version); err != nil {
			return err
		}
	}
	if err := f.st.Restore(br); err != nil {
		return fmt.Errorf("cluster: snapshot store: %w", err)
	}
	f.restoreShardState(shard)
	if err := installACL(); err != nil {
		return err
	}
	if err := installPolicies(); err != nil {
		return err
	}
	f.mu.Lock()
	f.applied = int64(binary.LittleEndian.Uint64(ts[:]))
	f.members = members
	f.index = 0 // raft's applied index is the snapshot's, and the state is complete
	f.mu.Unlock()
	return nil
}

func readBytes(r *bufio.Reader) ([]byte, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, err
	}
	if n > 1<<20 {
		return nil, errCorrupt
	}
	b := make([]byte, n)
	_, err = io.ReadFull(r, b)
	return b, err
}

type fsmSnapshot struct {
	header  []byte
	capture *store.Capture
}

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	bw := bufio.NewWriterSize(sink, 1<<20)
	bw.Write(s.header)
	err := s.capture.Write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

// bytes returns the whole snapshot, for tests.
func (s *fsmSnapshot) bytes() ([]byte, error) {
	var b bytes.Buffer
	b.Write(s.header)
	err := s.capture.Write(&b)
	return b.Bytes(), err
}

func (s *fsmSnapshot) Release() {}
