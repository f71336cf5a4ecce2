package store

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The sidecar: state that a single node's snapshot file and append-only
// log keep beside the entries, which the store carries as opaque bytes and
// never reads. It holds the command-defined policies (RL.POLICY SET), whose
// package the store may not import; a replicated node keeps them in its
// Raft snapshots instead and sets no sidecar.
//
// In a snapshot the sidecar is one block of kind 'X' (count 0, the
// encoding as payload) right after the header. In the append-only log it
// is a frame of one 'X' item (uvarint length, the encoding): the whole
// state after a change, not the change, so that the last one read wins and
// a frame replayed twice changes nothing, as for entries. A PartedSidecar
// (the policies, by name) logs a change as a frame of one 'P' item instead
// (uvarint length, the encoding of the one part the change touched, as it
// is after the change): a part's state, not an operation, so that frames
// replayed twice or over a base that holds them change nothing either, and
// a change costs the log the size of one part, not of the whole state. A
// load applies the 'P' items that follow the last whole state, in order. A
// file without either leaves the sidecar as it was when the load started.

// Sidecar is the state a store keeps beside its entries.
type Sidecar interface {
	// AppendSidecar appends the encoding of the state as it is now to dst.
	// It is called from any goroutine, possibly under the append-only
	// log's lock: it must not call back into the store.
	AppendSidecar(dst []byte) []byte
	// LoadSidecar replaces the state with an encoding AppendSidecar
	// wrote, or changes nothing and returns why it cannot.
	LoadSidecar(b []byte) error
}

// PartedSidecar is a Sidecar whose state is a set of parts, each named by
// an id (a policy by its name), so that the append-only log records the
// one part a change touched (Store.SidecarPartChanged).
type PartedSidecar interface {
	Sidecar
	// AppendSidecarPart appends the encoding of the part id as it is now
	// (its absence included) to dst. Called as AppendSidecar is.
	AppendSidecarPart(dst, id []byte) []byte
	// LoadSidecarParts replaces the state with base (an AppendSidecar
	// encoding; nil: the state as it is) updated by parts
	// (AppendSidecarPart encodings), in order; or it changes nothing and
	// returns why it cannot.
	LoadSidecarParts(base []byte, parts [][]byte) error
}

const (
	kindSidecar     = byte('X')
	itemSidecar     = byte('X')
	itemSidecarPart = byte('P')
)

// SetSidecar makes the store keep s in its snapshots and append-only log,
// and load it from them. Call it before the store loads or saves anything.
func (st *Store) SetSidecar(s Sidecar) { st.sidecar = s }

// SidecarChanged appends the sidecar's state at now to the append-only
// log, if one is attached: call it after every change of the state, before
// the batch's Sync. The state is encoded under the log's lock, so the last
// frame holds the latest state whatever the order of concurrent callers.
// Without a log it does nothing: the next snapshot takes the state as it
// is then.
func (st *Store) SidecarChanged(now int64) {
	a := st.aof.Load()
	if a == nil || st.sidecar == nil {
		return
	}
	a.mu.Lock()
	start := len(a.buf)
	a.buf = append(a.buf, make([]byte, frameHead)...)
	a.buf = binary.LittleEndian.AppendUint64(a.buf, uint64(now))
	a.buf = appendSidecarItem(a.buf, st.sidecar.AppendSidecar(nil))
	a.seal(start)
	a.mu.Unlock()
}

// SidecarPartChanged appends the state of the sidecar's part id at now to
// the append-only log, if one is attached: call it after every change of
// the part, before the batch's Sync. As SidecarChanged, the part is encoded
// under the log's lock, so that its last frame holds its latest state. A
// sidecar that is not a PartedSidecar logs its whole state.
func (st *Store) SidecarPartChanged(now int64, id []byte) {
	ps, ok := st.sidecar.(PartedSidecar)
	if !ok {
		st.SidecarChanged(now)
		return
	}
	a := st.aof.Load()
	if a == nil {
		return
	}
	a.mu.Lock()
	start := len(a.buf)
	a.buf = append(a.buf, make([]byte, frameHead)...)
	a.buf = binary.LittleEndian.AppendUint64(a.buf, uint64(now))
	a.buf = appendLengthItem(a.buf, itemSidecarPart, ps.AppendSidecarPart(nil, id))
	a.seal(start)
	a.mu.Unlock()
}

func appendSidecarItem(b, enc []byte) []byte { return appendLengthItem(b, itemSidecar, enc) }

func appendLengthItem(b []byte, kind byte, enc []byte) []byte {
	b = append(b, kind)
	b = binary.AppendUvarint(b, uint64(len(enc)))
	return append(b, enc...)
}

// sidecarBytes returns the sidecar's encoding now, or nil without one.
func (st *Store) sidecarBytes() []byte {
	if st.sidecar == nil {
		return nil
	}
	return st.sidecar.AppendSidecar(nil)
}

// installSidecar hands the sidecar state a load found (in tmp, the store
// loaded into) to st's sidecar. Nothing found, or no sidecar: nothing to
// do.
func (st *Store) installSidecar(tmp *Store) error {
	if tmp.loadedSidecar == nil && tmp.loadedParts == nil || st.sidecar == nil {
		return nil
	}
	var err error
	if tmp.loadedParts == nil {
		err = st.sidecar.LoadSidecar(tmp.loadedSidecar)
	} else if ps, ok := st.sidecar.(PartedSidecar); ok {
		err = ps.LoadSidecarParts(tmp.loadedSidecar, tmp.loadedParts)
	} else {
		err = errors.New("the log holds parts of a state that has none")
	}
	if err != nil {
		return fmt.Errorf("the policies kept beside the entries: %w", err)
	}
	return nil
}
