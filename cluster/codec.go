package cluster

import (
	"encoding/binary"
	"math"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/compat"
	"github.com/sluice-rl/sluice/keyslot"
)

// A log entry is one batch: a header with the leader's timestamp, then the
// operations of every submission packed into it, in order. This comment is
// the log format's specification; codec_test.go's golden entries pin it.
//
//	entry   = version:u8 kind:u8 now:i64le count:uvarint op*
//	            version 1 (codecVersion); kind 1 (kindOps); now the leader's
//	            clock in Unix nanoseconds; count ops, each at least one byte
//	op      = code:u8 body
//	bytes   = len:uvarint data
//	list    = n:uvarint bytes*
//	keys    = nkeys:uvarint key:bytes*
//
// The op codes and their bodies (all integers of a decide are zig-zag
// varints, as encoding/binary.AppendVarint writes them):
//
//	 1 decide   = group:uvarint algo:u8 count:varint period:varint n:varint key:bytes id:bytes
//	              one decision (algorithms.Request: group within the batch
//	              as a uint32; algorithms.Algo; the limit's Count and Period;
//	              the cost n; the key; a lease's or log entry's id)
//	 2 delete   = keys                      DEL: the count removed
//	 3 flush    = (no body)                 FLUSHALL / FLUSHDB
//	 4 exists   = keys                      EXISTS: the count present
//	 5 type     = keys (one key)            TYPE: the key's algorithms.Algo
//	 6 ttl      = keys (one key)            TTL/PTTL: the time left (store.TTL)
//	 7 dbsize   = (no body)                 DBSIZE
//	 8 member   = id:bytes addr:bytes       a node's RESP address; an empty
//	                                        addr removes the member id
//	 9 info     = keys (one key)            RL.INFO: the key's stored state
//	10 exec     = cmd:u8 readonly:u8 sha1:bytes keys nargs:uvarint arg:bytes*
//	              a known script or a string command (package compat):
//	              cmd a compat.Cmd; readonly 1 for EVAL_RO/EVALSHA_RO, else 0;
//	              sha1 the script's 40 hex digits (a compat.Known script,
//	              else the entry is corrupt), empty for every cmd but
//	              CmdScript; the keys; the arguments after the keys
//	11 version  = keys (one key)            WATCH: the key's state version
//	12 tx       = nwatch:uvarint (key:bytes version:u64le)* nreq:uvarint
//	              MULTI/EXEC, see below
//	13 acl      = list                      a change of the users, argv as
//	              acl.Users.Apply takes it, or "seed" and the whole encoded
//	              user set (acl.go)
//	14 policy   = list                      a change of the command-defined
//	              policies ("set" encoded-policy, or "del" name), or "rules"
//	              and the leader's 32-byte rules-files hash (policies.go)
//	15 check    = decide's body, then override:bytes
//	              on the wire only: an RL.CHECK decision whose request names
//	              an override key (possibly empty); it decodes as a decide
//	16 override = list of two: key, the 24 bytes of the override's three
//	              packed words as int64le (RL.OVERRIDE SET, overrides.go)
//	17 take     = decide's body, then min:varint
//	              on the wire only: an RL.TAKE decision, which takes any
//	              amount in [min, n] (algorithms.Request.Min > 0; a take
//	              names no override); it decodes as a decide
//	18 own      = epoch:uvarint ranges      a data group's slots from this
//	              entry on (its fence, fence.go): ranges = n:uvarint
//	              (lo:uvarint hi:uvarint)*, in order and disjoint
//	19 slots    = epoch:uvarint n:uvarint (lo:uvarint hi:uvarint group:uvarint)*
//	              the meta group's whole slot table at a new epoch (meta.go);
//	              applied only if epoch is above the table's
//	20 group    = group:uvarint term:uvarint leader:bytes n:uvarint (id:bytes resp:bytes raft:bytes)*
//	              the meta group's record of a data group: its members and
//	              addresses as its leader of term reports them (meta.go);
//	              applied only if term is not below the record's; with an
//	              empty leader and no members it removes the group's record
//	              (SLUICE.FORGET), refused while the group owns a slot
//	21 migration = epoch:uvarint lo:uvarint hi:uvarint from:uvarint to:uvarint
//	              state:u8 started:varint deadline:varint finished:varint
//	              the meta group's record of a slot migration (migrate.go):
//	              state 1 (planned) with epoch 0 asks for a new migration of
//	              lo-hi to the group to, the FSM assigning the epoch and
//	              from and reading deadline as the timeout; state 2
//	              (committed) or 3 (aborted) with an epoch records that
//	              planned migration's outcome; a snapshot restores records
//	              whole
//	22 fence    = kind:u8 body
//	              a data group's step of a slot migration (reshard.go):
//	              kinds 1 seal, 2 install, 3 refuse, 4 drop, 5 unseal and
//	              7 part have body epoch:uvarint lo:uvarint hi:uvarint; an
//	              install then applied:varint ship:uvarint parts:uvarint
//	              image:bytes (the source's applied instant; the shipment
//	              whose parts it completes, or 0 parts; the range's entries
//	              as store.Export encodes them), a part ship:uvarint
//	              index:uvarint image:bytes (one chunk of a shipment's
//	              image); kind 6 (snapshots only) is the per-slot migration
//	              state, n:uvarint (lo:uvarint hi:uvarint epoch:uvarint
//	              state:u8)* with state 0 none, 1 owned, 2 sealed
//
// Any other code, a count or length beyond the entry's end, a varint that
// does not end, or an exec whose sha1 and cmd disagree makes the entry
// corrupt (errCorrupt); decoding never panics.
//
// A transaction (MULTI/EXEC) is a tx op followed by its nreq commands in
// order (decide ops, and exec ops for its scripts, string and key-space
// commands; an older entry holds only decide ops), in
// one submission and so in one entry; the FSM carries them out in one
// store.Transact call. Its result's n is 1 if it was carried out, 0 if a
// watched key's version had changed.
//
// The same encoding carries a follower's forwarded submission to the leader
// (without the header's timestamp mattering: the leader stamps its own).

const codecVersion = 1

const (
	kindOps byte = 1
)

type opCode uint8

const (
	opDecide opCode = 1 + iota
	opDelete
	opFlush
	opExists
	opType
	opTTL
	opDBSize
	opMember
	opInfo
	opExec
	opVersion
	opTx
	opACL
	opPolicy
	opCheck     // on the wire only: an opDecide whose request names an override key (RL.CHECK)
	opOverride  // RL.OVERRIDE SET: argv = key, the 24 bytes of the packed words
	opTake      // on the wire only: an opDecide with Request.Min > 0 (RL.TAKE)
	opOwn       // a data group's slots (fence.go)
	opSlots     // the meta group's slot table (meta.go)
	opGroup     // the meta group's record of a data group (meta.go)
	opMigration // the meta group's record of a slot migration (migrate.go)
	opFence     // a data group's step of a slot migration (reshard.go)
)

// op is one operation of a batch.
type op struct {
	code opCode
	req  algorithms.Request // opDecide
	keys [][]byte           // opDelete, opExists (several), opType, opTTL, opInfo (one)
	id   string             // opMember
	addr string             // opMember
	xop  compat.Op          // opExec, with keys and argv
	argv [][]byte           // opExec, opACL, opPolicy

	watches []algorithms.Watch // opTx
	count   int                // opTx: the decide ops that follow and belong to it

	epoch  uint64      // opOwn, opSlots
	ranges []slotRange // opOwn, opSlots (with their groups)
	group  uint16      // opGroup
	term   uint64      // opGroup
	nodes  []GroupNode // opGroup; its leader's id is id

	mig     Migration // opMigration
	fence   fenceKind // opFence, with epoch and ranges[0] (kinds 1-5)
	applied int64     // opFence install: the source's applied instant
	image   []byte    // opFence install: the range's entries (store.Export)
	ship    uint64    // opFence install, part: the shipment
	part    int       // opFence install: the shipment's parts; part: this part's index
	runs    []slotRun // opFence state
}

// result is one operation's answer: an outcome for decisions, a number for
// the others, or an error.
type result struct {
	out   algorithms.Outcome
	n     int64
	info  *algorithms.KeyInfo // opInfo (a pointer: an entry's results are mostly decisions', kept small)
	exec  bool                // opExec: the answer is reply
	reply *compat.Reply       // opExec, with exec
	acl   bool                // opACL, opPolicy, opOverride: n is the count, index the entry's
	index uint64              // opACL, opPolicy, opOverride: the log index the change was applied at
}

// appendBatch encodes ops with the timestamp now.
func appendBatch(b []byte, now int64, ops []op) []byte {
	b = appendBatchHead(b, now, len(ops))
	for i := range ops {
		b = appendOp(b, &ops[i])
	}
	return b
}

// appendDecisions encodes decisions with the timestamp now, as appendBatch
// encodes them as decide ops.
func appendDecisions(b []byte, now int64, reqs []algorithms.Request) []byte {
	b = appendBatchHead(b, now, len(reqs))
	for i := range reqs {
		b = appendDecide(b, &reqs[i], reqs[i].Group)
	}
	return b
}

// appendBatchHead starts an entry of count ops with the timestamp now.
func appendBatchHead(b []byte, now int64, count int) []byte {
	b = append(b, codecVersion, kindOps)
	b = binary.LittleEndian.AppendUint64(b, uint64(now))
	return binary.AppendUvarint(b, uint64(count))
}

// appendDecide encodes a decide op for r, in RL.ALL group group.
func appendDecide(b []byte, r *algorithms.Request, group int32) []byte {
	code := opDecide
	switch {
	case r.Min != 0:
		code = opTake
	case r.Override != nil:
		code = opCheck
	}
	b = append(b, byte(code))
	b = binary.AppendUvarint(b, uint64(uint32(group)))
	b = append(b, byte(r.Limit.Algo))
	b = binary.AppendVarint(b, r.Limit.Count)
	b = binary.AppendVarint(b, r.Limit.Period)
	b = binary.AppendVarint(b, r.N)
	b = appendBytes(b, r.Key)
	b = appendBytes(b, r.ID)
	switch {
	case r.Min != 0:
		b = binary.AppendVarint(b, r.Min)
	case r.Override != nil:
		b = appendBytes(b, r.Override)
	}
	return b
}

func appendOp(b []byte, o *op) []byte {
	if o.code == opDecide {
		return appendDecide(b, &o.req, o.req.Group)
	}
	b = append(b, byte(o.code))
	switch o.code {
	case opTx:
		b = binary.AppendUvarint(b, uint64(len(o.watches)))
		for _, w := range o.watches {
			b = appendBytes(b, w.Key)
			b = binary.LittleEndian.AppendUint64(b, w.Version)
		}
		b = binary.AppendUvarint(b, uint64(o.count))
	case opDelete, opExists, opType, opTTL, opInfo, opVersion:
		b = binary.AppendUvarint(b, uint64(len(o.keys)))
		for _, k := range o.keys {
			b = appendBytes(b, k)
		}
	case opMember:
		b = appendBytes(b, []byte(o.id))
		b = appendBytes(b, []byte(o.addr))
	case opExec:
		b = append(b, byte(o.xop.Cmd), 0)
		if o.xop.ReadOnly {
			b[len(b)-1] = 1
		}
		var sha []byte
		if o.xop.Script != nil {
			sha = []byte(o.xop.Script.SHA1)
		}
		b = appendBytes(b, sha)
		b = appendList(b, o.keys)
		b = appendList(b, o.argv)
	case opACL, opPolicy, opOverride:
		b = appendList(b, o.argv)
	case opOwn, opSlots:
		b = binary.AppendUvarint(b, o.epoch)
		b = binary.AppendUvarint(b, uint64(len(o.ranges)))
		for _, r := range o.ranges {
			b = binary.AppendUvarint(b, uint64(r.lo))
			b = binary.AppendUvarint(b, uint64(r.hi))
			if o.code == opSlots {
				b = binary.AppendUvarint(b, uint64(r.group))
			}
		}
	case opMigration:
		m := &o.mig
		for _, v := range []uint64{m.Epoch, uint64(m.Lo), uint64(m.Hi), uint64(m.From), uint64(m.To)} {
			b = binary.AppendUvarint(b, v)
		}
		b = append(b, byte(m.State))
		b = binary.AppendVarint(b, m.Started)
		b = binary.AppendVarint(b, m.Deadline)
		b = binary.AppendVarint(b, m.Finished)
	case opFence:
		b = append(b, byte(o.fence))
		if o.fence == fenceState {
			b = binary.AppendUvarint(b, uint64(len(o.runs)))
			for _, r := range o.runs {
				b = binary.AppendUvarint(b, uint64(r.lo))
				b = binary.AppendUvarint(b, uint64(r.hi))
				b = binary.AppendUvarint(b, r.epoch)
				b = append(b, byte(r.state))
			}
			break
		}
		var r slotRange
		if len(o.ranges) > 0 {
			r = o.ranges[0]
		}
		b = binary.AppendUvarint(b, o.epoch)
		b = binary.AppendUvarint(b, uint64(r.lo))
		b = binary.AppendUvarint(b, uint64(r.hi))
		switch o.fence {
		case fenceInstall:
			b = binary.AppendVarint(b, o.applied)
			b = binary.AppendUvarint(b, o.ship)
			b = binary.AppendUvarint(b, uint64(o.part))
			b = appendBytes(b, o.image)
		case fencePart:
			b = binary.AppendUvarint(b, o.ship)
			b = binary.AppendUvarint(b, uint64(o.part))
			b = appendBytes(b, o.image)
		}
	case opGroup:
		b = binary.AppendUvarint(b, uint64(o.group))
		b = binary.AppendUvarint(b, o.term)
		b = appendBytes(b, []byte(o.id))
		b = binary.AppendUvarint(b, uint64(len(o.nodes)))
		for _, nd := range o.nodes {
			b = appendBytes(b, []byte(nd.ID))
			b = appendBytes(b, []byte(nd.RESPAddr))
			b = appendBytes(b, []byte(nd.RaftAddr))
		}
	}
	return b
}

// ranges reads an own or slots op's ranges (with groups for slots): in
// order, disjoint, within the slots, and for slots each with a group.
func (d *decoder) ranges(withGroup bool) []slotRange {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	rs := make([]slotRange, 0, n)
	for j := uint64(0); j < n && d.err == nil; j++ {
		lo, hi := d.uvarint(), d.uvarint()
		var g uint64
		if withGroup {
			if g = d.uvarint(); g == 0 || g > math.MaxUint16 {
				d.fail()
			}
		}
		if lo > math.MaxUint16 || hi > math.MaxUint16 {
			d.fail()
			break
		}
		rs = append(rs, slotRange{lo: uint16(lo), hi: uint16(hi), group: uint16(g)})
	}
	if d.err == nil && !validRanges(rs) {
		d.fail()
	}
	return rs
}

func appendList(b []byte, list [][]byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(list)))
	for _, v := range list {
		b = appendBytes(b, v)
	}
	return b
}

// list reads what appendList wrote; the elements alias the entry.
func (d *decoder) list() [][]byte {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	l := make([][]byte, 0, n)
	for j := uint64(0); j < n && d.err == nil; j++ {
		l = append(l, d.bytes())
	}
	return l
}

func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// decoder reads a batch; every read is bounds-checked, so a corrupt or
// hostile entry yields errCorrupt, never a panic.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errCorrupt
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.fail()
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) u64() uint64 {
	if len(d.b) < 8 {
		d.fail()
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

// decodeBatch decodes an entry. The ops' keys alias data.
func decodeBatch(data []byte) (now int64, ops []op, err error) {
	return decodeBatchInto(data, nil)
}

// decodeBatchInto is decodeBatch decoding into ops's array when it has room
// (an apply's scratch: an entry of a few hundred ops would otherwise
// allocate, zero and leave for the collector a few hundred kilobytes on
// every replica). The ops returned alias data and ops.
func decodeBatchInto(data []byte, ops []op) (now int64, _ []op, err error) {
	d := decoder{b: data}
	now, count, ok := d.head()
	if !ok {
		return 0, nil, errCorrupt
	}
	if uint64(cap(ops)) < count {
		ops = make([]op, count)
	}
	ops = ops[:count]
	for i := range ops {
		if d.err != nil {
			return 0, nil, errCorrupt
		}
		d.opInto(&ops[i], count)
	}
	if d.err != nil || len(d.b) != 0 {
		return 0, nil, errCorrupt
	}
	return now, ops, nil
}

// head reads an entry's header: its timestamp and its count of ops. It
// reports false for an unknown version or kind, a short header, or a count
// the rest cannot hold (every op takes at least one byte).
func (d *decoder) head() (now int64, count uint64, ok bool) {
	if d.byte() != codecVersion || d.byte() != kindOps || len(d.b) < 8 {
		return 0, 0, false
	}
	now = int64(binary.LittleEndian.Uint64(d.b))
	d.b = d.b[8:]
	count = d.uvarint()
	if d.err != nil || count > uint64(len(d.b)) {
		return 0, 0, false
	}
	return now, count, true
}

// decodeDecisionsInto decodes an entry whose ops are all decisions
// (decide, check and take ops) into reqs's array when it has room: the
// requests decodeBatchInto would decode into its ops, without the rest of
// an op. It reports false, having decoded nothing of use, for an entry
// holding any other op, and for one that does not decode: decodeBatchInto
// reads those. The requests alias data and reqs.
func decodeDecisionsInto(data []byte, reqs []algorithms.Request) (now int64, _ []algorithms.Request, ok bool) {
	d := decoder{b: data}
	now, count, ok := d.head()
	if !ok {
		return 0, reqs, false
	}
	if uint64(cap(reqs)) < count {
		reqs = make([]algorithms.Request, count)
	}
	reqs = reqs[:count]
	for i := range reqs {
		switch code := opCode(d.byte()); code {
		case opDecide, opCheck, opTake:
			d.decideInto(code, &reqs[i])
		default:
			d.fail()
		}
		if d.err != nil {
			clear(reqs[:i+1]) // no references into data left behind
			return 0, reqs[:0], false
		}
	}
	if len(d.b) != 0 {
		clear(reqs)
		return 0, reqs[:0], false
	}
	return now, reqs, true
}

// decideInto decodes the body of a decide, check or take op (code) into
// r, which it overwrites whole; a fault is left in d.err.
func (d *decoder) decideInto(code opCode, r *algorithms.Request) {
	*r = algorithms.Request{}
	g := d.uvarint()
	if g > math.MaxUint32 {
		d.fail()
	}
	r.Group = int32(uint32(g))
	r.Limit.Algo = algorithms.Algo(d.byte())
	r.Limit.Count = d.varint()
	r.Limit.Period = d.varint()
	r.N = d.varint()
	r.Key = d.bytes()
	r.ID = d.bytes()
	switch code {
	case opCheck:
		r.Override = d.bytes()
		if r.Override == nil {
			r.Override = []byte{} // named, if empty
		}
	case opTake:
		if r.Min = d.varint(); r.Min == 0 {
			d.fail() // a take of min 0 would encode as a decide
		}
	}
}

// op decodes one op of an entry of count ops; a fault is left in d.err.
func (d *decoder) op(count uint64) op {
	var o op
	d.opInto(&o, count)
	return o
}

// opInto is op decoding into *o, which it clears first.
func (d *decoder) opInto(o *op, count uint64) {
	*o = op{}
	o.code = opCode(d.byte())
	switch o.code {
	case opDecide, opCheck, opTake:
		d.decideInto(o.code, &o.req)
		o.code = opDecide
	case opTx:
		n := d.uvarint()
		if n > uint64(len(d.b)) {
			d.fail()
			break
		}
		o.watches = make([]algorithms.Watch, 0, n)
		for j := uint64(0); j < n && d.err == nil; j++ {
			k := d.bytes()
			o.watches = append(o.watches, algorithms.Watch{Key: k, Version: d.u64()})
		}
		c := d.uvarint()
		if c > count {
			d.fail()
		}
		o.count = int(c)
	case opDelete, opExists, opType, opTTL, opInfo, opVersion:
		n := d.uvarint()
		if n > uint64(len(d.b)) {
			d.fail()
			break
		}
		o.keys = make([][]byte, 0, n)
		for j := uint64(0); j < n && d.err == nil; j++ {
			o.keys = append(o.keys, d.bytes())
		}
	case opFlush, opDBSize:
	case opMember:
		o.id = string(d.bytes())
		o.addr = string(d.bytes())
	case opExec:
		o.xop.Cmd = compat.Cmd(d.byte())
		o.xop.ReadOnly = d.byte() == 1
		if sha := d.bytes(); len(sha) > 0 {
			if o.xop.Script = compat.Known.Lookup(sha); o.xop.Script == nil {
				d.fail()
			}
		}
		if (o.xop.Cmd == compat.CmdScript) != (o.xop.Script != nil) {
			d.fail()
		}
		o.keys = d.list()
		o.argv = d.list()
	case opACL, opPolicy, opOverride:
		o.argv = d.list()
	case opOwn, opSlots:
		o.epoch = d.uvarint()
		o.ranges = d.ranges(o.code == opSlots)
	case opMigration:
		m := &o.mig
		m.Epoch = d.uvarint()
		lo, hi, from, to := d.uvarint(), d.uvarint(), d.uvarint(), d.uvarint()
		m.State = MigrationState(d.byte())
		m.Started, m.Deadline, m.Finished = d.varint(), d.varint(), d.varint()
		if lo > hi || hi >= keyslot.Slots || from > math.MaxUint16 || to == 0 || to > math.MaxUint16 ||
			m.State < MigrationPlanned || m.State > MigrationAborted {
			d.fail()
		}
		m.Lo, m.Hi, m.From, m.To = int(lo), int(hi), uint16(from), uint16(to)
	case opFence:
		o.fence = fenceKind(d.byte())
		switch o.fence {
		case fenceSeal, fenceInstall, fenceRefuse, fenceDrop, fenceUnseal, fencePart:
			o.epoch = d.uvarint()
			lo, hi := d.uvarint(), d.uvarint()
			if lo > hi || hi >= keyslot.Slots || o.epoch == 0 {
				d.fail()
			}
			o.ranges = []slotRange{{lo: uint16(lo), hi: uint16(hi)}}
			switch o.fence {
			case fenceInstall:
				o.applied = d.varint()
				fallthrough
			case fencePart:
				o.ship = d.uvarint()
				part := d.uvarint()
				if part > math.MaxInt32 {
					d.fail()
				}
				o.part, o.image = int(part), d.bytes()
			}
		case fenceState:
			n := d.uvarint()
			if n > uint64(len(d.b)) {
				d.fail()
				break
			}
			next := uint64(0)
			for j := uint64(0); j < n && d.err == nil; j++ {
				lo, hi, e := d.uvarint(), d.uvarint(), d.uvarint()
				st := slotState(d.byte())
				if lo < next || lo > hi || hi >= keyslot.Slots || st > slotSealed {
					d.fail()
					break
				}
				next = hi + 1
				o.runs = append(o.runs, slotRun{lo: uint16(lo), hi: uint16(hi), epoch: e, state: st})
			}
		default:
			d.fail()
		}
	case opGroup:
		g := d.uvarint()
		if g == 0 || g > math.MaxUint16 {
			d.fail()
		}
		o.group, o.term, o.id = uint16(g), d.uvarint(), string(d.bytes())
		n := d.uvarint()
		if n > uint64(len(d.b)) {
			d.fail()
			break
		}
		for j := uint64(0); j < n && d.err == nil; j++ {
			o.nodes = append(o.nodes, GroupNode{ID: string(d.bytes()), RESPAddr: string(d.bytes()), RaftAddr: string(d.bytes())})
		}
	default:
		d.fail()
	}
}

// appendResults encodes results for a forwarded submission's reply.
//
//	results = count:uvarint result*
//	result  = 0:u8 allowed:u8 limit:varint remaining:varint retry:varint reset:varint n:varint
//	                                     (allowed: the deciding override's kind<<1 | 1 if admitted)
//	        | 1:u8 error:bytes
//	        | 2:u8 algo:u8 expire:varint nfields:uvarint field*      (RL.INFO)
//	        | 3:u8 reply:bytes                                        (exec: compat.Reply.AppendBinary)
//	        | 4:u8 n:varint index:uvarint                             (a change of the users, the policies or an override)
//	        | 5:u8 granted:varint, then the fields of 0 after its tag    (a take's decision that granted units)
//	field   = name:bytes value:varint flags:u8 [len:uvarint value:varint*]   (flags: 1 list, 2 pairs)
func appendResults(b []byte, rs []result) []byte {
	b = binary.AppendUvarint(b, uint64(len(rs)))
	for i := range rs {
		r := &rs[i]
		if r.out.Err != nil {
			b = append(b, 1)
			b = appendBytes(b, []byte(r.out.Err.Error()))
			continue
		}
		if r.exec {
			b = appendBytes(append(b, 3), r.reply.AppendBinary(nil))
			continue
		}
		if r.acl {
			b = binary.AppendVarint(append(b, 4), r.n)
			b = binary.AppendUvarint(b, r.index)
			continue
		}
		if r.info != nil && r.info.Algo != algorithms.None {
			b = appendInfo(append(b, 2), r.info)
			continue
		}
		if g := r.out.Result.Granted; g != 0 {
			b = binary.AppendVarint(append(b, 5), g)
		} else {
			b = append(b, 0)
		}
		allowed := byte(r.out.Result.Override) << 1 // the override that decided, if any
		if r.out.Result.Allowed {
			allowed |= 1
		}
		b = append(b, allowed)
		b = binary.AppendVarint(b, r.out.Result.Limit)
		b = binary.AppendVarint(b, r.out.Result.Remaining)
		b = binary.AppendVarint(b, r.out.Result.RetryAfter)
		b = binary.AppendVarint(b, r.out.Result.ResetAfter)
		b = binary.AppendVarint(b, r.n)
	}
	return b
}

// replyError is an error relayed from another node, with its Redis text.
type replyError string

func (e replyError) Error() string { return string(e) }

func decodeResults(data []byte) ([]result, error) {
	d := decoder{b: data}
	count := d.uvarint()
	if count > uint64(len(d.b)) {
		return nil, errCorrupt
	}
	rs := make([]result, count)
	for i := range rs {
		switch tag := d.byte(); tag {
		case 0, 5:
			r := &rs[i]
			if tag == 5 {
				if r.out.Result.Granted = d.varint(); r.out.Result.Granted == 0 {
					d.fail() // it would encode with tag 0
				}
			}
			a := d.byte()
			r.out.Result.Allowed = a&1 == 1
			r.out.Result.Override = algorithms.OverrideKind(a >> 1)
			r.out.Result.Limit = d.varint()
			r.out.Result.Remaining = d.varint()
			r.out.Result.RetryAfter = d.varint()
			r.out.Result.ResetAfter = d.varint()
			r.n = d.varint()
		case 1:
			rs[i].out.Err = replyError(d.bytes())
		case 2:
			info := d.info()
			rs[i].info = &info
		case 3:
			rep, err := compat.DecodeReply(d.bytes())
			if err != nil {
				d.fail()
			}
			rs[i].exec, rs[i].reply = true, &rep
		case 4:
			rs[i].acl, rs[i].n, rs[i].index = true, d.varint(), d.uvarint()
		default:
			d.fail()
		}
		if d.err != nil {
			return nil, d.err
		}
	}
	if len(d.b) != 0 {
		return nil, errCorrupt
	}
	return rs, nil
}

func appendInfo(b []byte, ki *algorithms.KeyInfo) []byte {
	b = append(b, byte(ki.Algo))
	b = binary.AppendVarint(b, ki.Expire)
	b = binary.AppendUvarint(b, uint64(len(ki.Fields)))
	for _, f := range ki.Fields {
		b = appendBytes(b, []byte(f.Name))
		b = binary.AppendVarint(b, f.Value)
		flags := byte(0)
		if f.List != nil {
			flags |= 1
		}
		if f.Pairs {
			flags |= 2
		}
		b = append(b, flags)
		if f.List != nil {
			b = binary.AppendUvarint(b, uint64(len(f.List)))
			for _, v := range f.List {
				b = binary.AppendVarint(b, v)
			}
		}
	}
	return b
}

func (d *decoder) info() algorithms.KeyInfo {
	ki := algorithms.KeyInfo{Algo: algorithms.Algo(d.byte()), Expire: d.varint()}
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return ki
	}
	for i := uint64(0); i < n && d.err == nil; i++ {
		f := algorithms.Field{Name: string(d.bytes()), Value: d.varint()}
		flags := d.byte()
		f.Pairs = flags&2 != 0
		if flags&1 != 0 {
			m := d.uvarint()
			if m > uint64(len(d.b)) {
				d.fail()
				break
			}
			f.List = make([]int64, 0, m)
			for j := uint64(0); j < m && d.err == nil; j++ {
				f.List = append(f.List, d.varint())
			}
		}
		ki.Fields = append(ki.Fields, f)
	}
	return ki
}
