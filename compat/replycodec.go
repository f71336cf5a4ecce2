package compat

import (
	"encoding/binary"
	"errors"
)

// A Reply travels between the nodes of a replicated group (a follower
// forwards a script to the leader, which sends back its reply) in this
// encoding:
//
//	reply = type:u8 body
//	body  = (Nil, OK) nothing | (Integer) varint | (Bulk) len:uvarint bytes
//	      | (Error) len:uvarint text | (Array) count:uvarint elem*
//	elem  = type:u8 (Nil) | (Integer) varint | (Bulk) len:uvarint bytes

// errCorruptReply is a reply that does not decode.
var errCorruptReply = errors.New("compat: corrupt reply")

// AppendBinary appends r's encoding to dst.
func (r *Reply) AppendBinary(dst []byte) []byte {
	dst = append(dst, byte(r.Type))
	switch r.Type {
	case Error:
		dst = binary.AppendUvarint(dst, uint64(len(r.Err)))
		return append(dst, r.Err...)
	case Array:
		dst = binary.AppendUvarint(dst, uint64(r.Len))
		for i := 0; i < r.Len; i++ {
			dst = append(dst, byte(r.Elems[i].Type))
			dst = r.Elems[i].appendBody(dst)
		}
		return dst
	}
	return r.Elem.appendBody(dst)
}

func (e *Elem) appendBody(dst []byte) []byte {
	switch e.Type {
	case Integer:
		return binary.AppendVarint(dst, e.Int)
	case Bulk:
		dst = binary.AppendUvarint(dst, uint64(e.n))
		return append(dst, e.Bytes()...)
	}
	return dst
}

// DecodeReply decodes what AppendBinary wrote, all of b.
func DecodeReply(b []byte) (Reply, error) {
	var r Reply
	if len(b) < 1 {
		return r, errCorruptReply
	}
	r.Type, b = Type(b[0]), b[1:]
	var ok bool
	switch r.Type {
	case Error:
		var s []byte
		if s, b, ok = decodeBytes(b, len(b)); !ok {
			return Reply{}, errCorruptReply
		}
		r.Err = string(s)
	case Array:
		n, k := binary.Uvarint(b)
		if k <= 0 || n > MaxElems {
			return Reply{}, errCorruptReply
		}
		b = b[k:]
		r.Len = int(n)
		for i := 0; i < r.Len; i++ {
			if len(b) < 1 {
				return Reply{}, errCorruptReply
			}
			r.Elems[i].Type, b = Type(b[0]), b[1:]
			if b, ok = r.Elems[i].decodeBody(b); !ok {
				return Reply{}, errCorruptReply
			}
		}
	case Nil, OK, Integer, Bulk:
		if b, ok = r.Elem.decodeBody(b); !ok {
			return Reply{}, errCorruptReply
		}
	default:
		return Reply{}, errCorruptReply
	}
	if len(b) != 0 {
		return Reply{}, errCorruptReply
	}
	return r, nil
}

func (e *Elem) decodeBody(b []byte) ([]byte, bool) {
	switch e.Type {
	case Nil, OK:
		return b, true
	case Integer:
		v, k := binary.Varint(b)
		if k <= 0 {
			return nil, false
		}
		e.Int = v
		return b[k:], true
	case Bulk:
		s, rest, ok := decodeBytes(b, len(e.buf))
		if !ok {
			return nil, false
		}
		e.n = uint8(copy(e.buf[:], s))
		return rest, true
	}
	return nil, false
}

// decodeBytes reads a length-prefixed string of at most max bytes.
func decodeBytes(b []byte, max int) (s, rest []byte, ok bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(max) || n > uint64(len(b)-k) {
		return nil, nil, false
	}
	return b[k : k+int(n)], b[k+int(n):], true
}
