package cluster

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/hashicorp/raft"
)

// The entry wire: how entryTransport (entrytransport.go) carries an
// AppendEntries that holds entries, in place of raft's msgpack.
//
// A connection opens with entryMagic and entryVersion from the dialer; the
// listener answers with one byte, entryVersion when it speaks that version
// and 0 when it does not. Then each request is a frame, and so is each
// answer: a 4-byte big-endian length and that many bytes.
//
// A request's body, every integer a uvarint unless said otherwise, every
// byte string its length (a uvarint) and its bytes:
//
//	ProtocolVersion, ID, Addr, Term, Leader, PrevLogEntry, PrevLogTerm,
//	LeaderCommitIndex, the number of entries, and for each entry:
//	Index, Term, Type (one byte), Data, Extensions, AppendedAt
//
// AppendedAt is one byte, 0 for the zero time, or 1 followed by the Unix
// nanoseconds as a varint. An answer's body is one byte, 0, followed by
// ProtocolVersion, ID, Addr, Term, LastLog and one byte of flags (1:
// Success, 2: NoRetryBackoff); or 1 followed by the error's text as a byte
// string.

const (
	// entryMagic opens an entry connection. It is not a raft v1.7.3 RPC type
	// (0 to lastRPCType), muxMagic, a TLS record type (0x14–0x17) or ASCII.
	entryMagic byte = 0xB9
	// entryVersion is the one version of the wire above.
	entryVersion byte = 1
	// maxEntryFrame bounds a frame either way. A request above it goes as
	// raft's own RPC; a frame announced above it closes the connection.
	maxEntryFrame = 16 << 20
)

var errEntryWire = errors.New("cluster: a malformed AppendEntries frame")

const (
	flagSuccess        = 1
	flagNoRetryBackoff = 2
)

// entryRequestSize is an upper bound of the body appendEntryRequest writes
// for req, for the choice between this wire and raft's.
func entryRequestSize(req *raft.AppendEntriesRequest) int {
	//lint:ignore SA1019 raft v1.7.3 still sends Leader, and reads it from a peer that sends no ID
	n := 11*binary.MaxVarintLen64 + len(req.RPCHeader.ID) + len(req.RPCHeader.Addr) + len(req.Leader)
	for _, l := range req.Entries {
		n += 5*binary.MaxVarintLen64 + 2 + len(l.Data) + len(l.Extensions)
	}
	return n
}

// appendEntryRequest appends req's body to b.
func appendEntryRequest(b []byte, req *raft.AppendEntriesRequest) []byte {
	h := &req.RPCHeader
	b = binary.AppendUvarint(b, uint64(h.ProtocolVersion))
	b = appendBytes(b, h.ID)
	b = appendBytes(b, h.Addr)
	b = binary.AppendUvarint(b, req.Term)
	//lint:ignore SA1019 as above
	b = appendBytes(b, req.Leader)
	b = binary.AppendUvarint(b, req.PrevLogEntry)
	b = binary.AppendUvarint(b, req.PrevLogTerm)
	b = binary.AppendUvarint(b, req.LeaderCommitIndex)
	b = binary.AppendUvarint(b, uint64(len(req.Entries)))
	for _, l := range req.Entries {
		b = binary.AppendUvarint(b, l.Index)
		b = binary.AppendUvarint(b, l.Term)
		b = append(b, byte(l.Type))
		b = appendBytes(b, l.Data)
		b = appendBytes(b, l.Extensions)
		if l.AppendedAt.IsZero() {
			b = append(b, 0)
		} else {
			b = append(b, 1)
			b = binary.AppendVarint(b, l.AppendedAt.UnixNano())
		}
	}
	return b
}

// parseEntryRequest decodes a request's body into *req, which must be the
// zero request. Its byte strings, the entries' Data among them, alias b,
// which the caller must not reuse: raft keeps the entries.
func parseEntryRequest(b []byte, req *raft.AppendEntriesRequest) error {
	d := decoder{b: b}
	req.RPCHeader.ProtocolVersion = raft.ProtocolVersion(d.uvarint())
	req.RPCHeader.ID = orNil(d.bytes())
	req.RPCHeader.Addr = orNil(d.bytes())
	req.Term = d.uvarint()
	//lint:ignore SA1019 as above
	req.Leader = orNil(d.bytes())
	req.PrevLogEntry = d.uvarint()
	req.PrevLogTerm = d.uvarint()
	req.LeaderCommitIndex = d.uvarint()
	n := d.uvarint()
	// Each entry takes at least six bytes, so a count the body cannot hold
	// is refused before anything is allocated for it.
	if d.err != nil || n > uint64(len(d.b)/6) {
		return errEntryWire
	}
	if n > 0 {
		logs := make([]raft.Log, n)
		req.Entries = make([]*raft.Log, n)
		for i := range logs {
			l := &logs[i]
			l.Index = d.uvarint()
			l.Term = d.uvarint()
			l.Type = raft.LogType(d.byte())
			l.Data = orNil(d.bytes())
			l.Extensions = orNil(d.bytes())
			switch d.byte() {
			case 0:
			case 1:
				l.AppendedAt = time.Unix(0, d.varint())
			default:
				d.fail()
			}
			req.Entries[i] = l
		}
	}
	if d.err != nil || len(d.b) != 0 {
		return errEntryWire
	}
	return nil
}

// appendEntryResponse appends the body of an answer to b: rpcErr's text if
// it is not nil, else resp.
func appendEntryResponse(b []byte, resp *raft.AppendEntriesResponse, rpcErr error) []byte {
	if rpcErr != nil {
		return appendBytes(append(b, 1), []byte(rpcErr.Error()))
	}
	b = append(b, 0)
	h := &resp.RPCHeader
	b = binary.AppendUvarint(b, uint64(h.ProtocolVersion))
	b = appendBytes(b, h.ID)
	b = appendBytes(b, h.Addr)
	b = binary.AppendUvarint(b, resp.Term)
	b = binary.AppendUvarint(b, resp.LastLog)
	var f byte
	if resp.Success {
		f |= flagSuccess
	}
	if resp.NoRetryBackoff {
		f |= flagNoRetryBackoff
	}
	return append(b, f)
}

// parseEntryResponse decodes an answer's body into *resp, which must be the
// zero response, and returns the error text the listener sent instead, if
// any. Byte strings are copied out of b.
func parseEntryResponse(b []byte, resp *raft.AppendEntriesResponse) (rpcErr string, err error) {
	d := decoder{b: b}
	switch d.byte() {
	case 0:
		h := &resp.RPCHeader
		h.ProtocolVersion = raft.ProtocolVersion(d.uvarint())
		h.ID = clone(d.bytes())
		h.Addr = clone(d.bytes())
		resp.Term = d.uvarint()
		resp.LastLog = d.uvarint()
		f := d.byte()
		if f&^(flagSuccess|flagNoRetryBackoff) != 0 {
			d.fail()
		}
		resp.Success = f&flagSuccess != 0
		resp.NoRetryBackoff = f&flagNoRetryBackoff != 0
	case 1:
		rpcErr = string(d.bytes())
		if rpcErr == "" {
			d.fail()
		}
	default:
		d.fail()
	}
	if d.err != nil || len(d.b) != 0 {
		return "", errEntryWire
	}
	return rpcErr, nil
}

// orNil is v, or nil for an empty v: an empty byte string decodes as nil.
func orNil(v []byte) []byte {
	if len(v) == 0 {
		return nil
	}
	return v
}

// clone copies v, nil for an empty v.
func clone(v []byte) []byte {
	if len(v) == 0 {
		return nil
	}
	return append([]byte(nil), v...)
}
