package store

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"slices"

	"github.com/cespare/xxhash/v2"
	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/shard"
)

// Snapshot format, version 1. Integers are little-endian; uvarint is
// encoding/binary's.
//
//	header  "SLUICEDB" | version u32 | flags u32 (0) | now i64 | xxhash64 of the 24 bytes before
//	sidecar kind 'X' | count u32 (0) | length u32 | payload | xxhash64 of kind..payload   (optional, sidecar.go)
//	block*  kind 'E' | count u32 | length u32 | payload | xxhash64 of kind..payload
//	end     kind 'Z' | count u32 (0) | length u32 (16) | entries u64 | xxhash64 of every byte
//	        before this block | xxhash64 of kind..payload
//
// A payload is count entries, each:
//
//	uvarint key length | key | algo u8 | flags u8 (bit 0: depleted) |
//	expire i64 | state words u8 (0-3) | that many i64 | uvarint ext length | that many i64
//
// Entries are written shard by shard, and within a shard in key order, so
// the same store at the same instant gives the same bytes. Entries that
// have expired at the snapshot's instant are left out. Nothing after the
// end block is allowed: a file that stops early or carries anything else
// is refused.

const (
	snapMagic    = "SLUICEDB"
	snapVersion  = 1
	headerLen    = 32
	blockHead    = 9        // kind, count, length
	blockTarget  = 64 << 10 // a block is cut once its payload passes this
	maxBlock     = 1 << 30  // longest payload a reader accepts
	kindEntries  = byte('E')
	kindEnd      = byte('Z')
	flagDepleted = 1
)

// SnapshotError is a snapshot that cannot be read: truncated, corrupt, or
// of an unknown version. Offset is the byte where the problem was found.
type SnapshotError struct {
	Offset int64
	Reason string
}

func (e *SnapshotError) Error() string {
	return fmt.Sprintf("snapshot unreadable at byte %d: %s", e.Offset, e.Reason)
}

// Snapshot writes every live entry to w as of the latest instant the store
// was given (Now). See snapshotAt.
func (st *Store) Snapshot(w io.Writer) error { return st.snapshotAt(w, st.Now()) }

// snapshotAt writes every entry live at now to w, one shard at a time and
// within a shard 1024 records per lock hold, so traffic goes on throughout.
// Each entry is written as it was at some instant of the save: an entry
// live for the whole save is in it, one created or removed meanwhile may or
// may not be. A point-in-time image needs the writes held off (the Raft FSM
// snapshots between applies). Given the same entries and now, the bytes
// are the same.
func (st *Store) snapshotAt(w io.Writer, now int64) error {
	sw := newSnapWriter(w, now)
	sw.sidecar(st.sidecarBytes())
	var buf []byte
	var spans []span
	for i := range st.shards {
		buf, spans = st.copyShard(i, now, buf[:0], spans[:0])
		sw.addSorted(buf, spans)
	}
	return sw.finish()
}

// Capture is a copy of the store's live entries at one instant, encoded but
// not yet sorted or checksummed: the part of a snapshot that must happen
// while writes are held off, and the quick part. Write then does the rest
// at leisure.
type Capture struct {
	now    int64
	side   []byte // the sidecar's encoding; nil: none
	shards []capturedShard
}

type capturedShard struct {
	buf   []byte
	spans []span
}

// Capture copies every entry live at now. For a point-in-time image the
// caller holds writes off while it runs (the Raft FSM does: it is called
// between applies).
func (st *Store) Capture(now int64) *Capture {
	c := &Capture{now: now, side: st.sidecarBytes(), shards: make([]capturedShard, len(st.shards))}
	for i := range st.shards {
		c.shards[i].buf, c.shards[i].spans = st.copyShard(i, now, nil, nil)
	}
	return c
}

// Write writes the captured entries in the snapshot format: the same
// bytes snapshotAt would have written at the capture's instant.
func (c *Capture) Write(w io.Writer) error {
	sw := newSnapWriter(w, c.now)
	sw.sidecar(c.side)
	for _, cs := range c.shards {
		sw.addSorted(cs.buf, cs.spans)
	}
	return sw.finish()
}

// newSnapWriter writes the header. Every writer of a store's snapshot then
// writes the sidecar (sw.sidecar) before any entry: snapshotAt, Capture's
// Write and saveFileHeld.
func newSnapWriter(w io.Writer, now int64) *snapWriter {
	sw := &snapWriter{w: w, digest: xxhash.New()}
	var hdr [headerLen]byte
	copy(hdr[:], snapMagic)
	binary.LittleEndian.PutUint32(hdr[8:], snapVersion)
	binary.LittleEndian.PutUint64(hdr[16:], uint64(now))
	binary.LittleEndian.PutUint64(hdr[24:], xxhash.Sum64(hdr[:24]))
	sw.write(hdr[:])
	return sw
}

// addSorted adds one shard's encoded entries in key order. A key copied
// twice (removed and created again at a later record while the copy went
// from one lock hold to the next) is written once, as copied last: copies
// go forward in time through the shard, so the later one is the newer
// state. Equal keys sort by where they were copied.
func (sw *snapWriter) addSorted(buf []byte, spans []span) {
	slices.SortFunc(spans, func(a, b span) int {
		if c := bytes.Compare(entryKey(buf[a.off:]), entryKey(buf[b.off:])); c != 0 {
			return c
		}
		return a.off - b.off
	})
	for i, sp := range spans {
		if i+1 < len(spans) && bytes.Equal(entryKey(buf[sp.off:]), entryKey(buf[spans[i+1].off:])) {
			continue // an older copy of the next entry's key
		}
		sw.add(buf[sp.off:sp.end])
	}
}

// sidecar writes the sidecar block, if enc is not nil.
func (sw *snapWriter) sidecar(enc []byte) {
	if enc != nil {
		sw.block(kindSidecar, 0, enc)
	}
}

// finish writes the end block.
func (sw *snapWriter) finish() error {
	sw.flush()
	var end [16]byte
	binary.LittleEndian.PutUint64(end[:], sw.entries)
	binary.LittleEndian.PutUint64(end[8:], sw.digest.Sum64())
	sw.block(kindEnd, 0, end[:])
	return sw.err
}

// span is where one encoded entry lies in a buffer.
type span struct{ off, end int }

// copyShard appends shard i's entries live at now, encoded, to buf and
// where each lies to spans, copyStep records per lock hold.
func (st *Store) copyShard(i int, now int64, buf []byte, spans []span) ([]byte, []span) {
	sh := &st.shards[i]
	for pos := 0; ; {
		pos, buf, spans = copyStepOf(sh, pos, now, buf, spans)
		if pos == 0 {
			return buf, spans
		}
	}
}

// copyStepOf copies up to copyStep records of sh from pos, holding its
// lock only for the copy (the buffers grow before), and returns where to
// go on, 0 when the shard is done. A save thus delays a decision by about
// a millisecond at most.
func copyStepOf(sh *shard.Shard, pos int, now int64, buf []byte, spans []span) (int, []byte, []span) {
	buf = slices.Grow(buf, copyStep*48)
	spans = slices.Grow(spans, copyStep)
	sh.Lock()
	defer sh.Unlock()
	return copyStepLocked(sh, pos, now, buf, spans)
}

// copyStepLocked is copyStepOf for a caller that holds sh's lock.
func copyStepLocked(sh *shard.Shard, pos int, now int64, buf []byte, spans []span) (int, []byte, []span) {
	pos, _ = sh.Scan(pos, copyStep, now, func(key []byte, e shard.Entry) {
		off := len(buf)
		buf = appendEntry(buf, key, &e)
		spans = append(spans, span{off, len(buf)})
	})
	return pos, buf, spans
}

// copyStep is how many records a snapshot copies per lock hold.
const copyStep = 1024

func appendEntry(b, key []byte, e *shard.Entry) []byte {
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	var flags byte
	if e.Depleted {
		flags |= flagDepleted
	}
	b = append(b, byte(e.Algo), flags)
	b = binary.LittleEndian.AppendUint64(b, uint64(e.Expire))
	n := 0
	for k := range e.State {
		if e.State[k] != 0 {
			n = k + 1
		}
	}
	b = append(b, byte(n))
	for _, v := range e.State[:n] {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	b = binary.AppendUvarint(b, uint64(len(e.Ext)))
	for _, v := range e.Ext {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	return b
}

// entryKey returns the key of the encoded entry at the start of b, which
// appendEntry wrote.
func entryKey(b []byte) []byte {
	n, k := binary.Uvarint(b)
	return b[k : k+int(n)]
}

// snapWriter cuts entries into checksummed blocks and digests every byte.
type snapWriter struct {
	w       io.Writer
	digest  *xxhash.Digest
	payload []byte
	count   uint32
	entries uint64
	err     error
}

func (sw *snapWriter) write(b []byte) {
	if sw.err != nil {
		return
	}
	sw.digest.Write(b)
	_, sw.err = sw.w.Write(b)
}

func (sw *snapWriter) add(entry []byte) {
	sw.payload = append(sw.payload, entry...)
	sw.count++
	sw.entries++
	if len(sw.payload) >= blockTarget {
		sw.flush()
	}
}

func (sw *snapWriter) flush() {
	if sw.count > 0 {
		sw.block(kindEntries, sw.count, sw.payload)
	}
	sw.payload, sw.count = sw.payload[:0], 0
}

func (sw *snapWriter) block(kind byte, count uint32, payload []byte) {
	var head [blockHead]byte
	head[0] = kind
	binary.LittleEndian.PutUint32(head[1:], count)
	binary.LittleEndian.PutUint32(head[5:], uint32(len(payload)))
	sum := xxhash.New()
	sum.Write(head[:])
	sum.Write(payload)
	sw.write(head[:])
	sw.write(payload)
	sw.write(binary.LittleEndian.AppendUint64(nil, sum.Sum64()))
}

// Restore replaces the store's entries with those of the snapshot r holds.
// The whole snapshot is read and checked (every block's checksum, the
// digest of the file, the entry count, nothing after the end) before any
// shard changes; a snapshot that fails is a *SnapshotError and leaves the
// store as it was. The shards are then swapped one at a time. Entries are
// kept whatever the memory limit (as Redis loads a dump).
func (st *Store) Restore(r io.Reader) error {
	tmp := New(len(st.shards))
	if err := tmp.load(bufio.NewReaderSize(r, 256<<10)); err != nil {
		tmp.Flush(0)
		return err
	}
	if err := st.installSidecar(tmp); err != nil {
		tmp.Flush(0)
		return &SnapshotError{Offset: tmp.sidecarAt, Reason: err.Error()}
	}
	st.takeShards(tmp)
	return nil
}

// takeShards swaps tmp's entries in, one shard at a time, with what they
// mean for the decisions (an override makes Decide look overrides up).
func (st *Store) takeShards(tmp *Store) {
	if tmp.hasOverrides.Load() {
		st.hasOverrides.Store(true)
	}
	for i := range st.shards {
		sh := &st.shards[i]
		sh.Lock()
		sh.Replace(&tmp.shards[i])
		sh.Unlock()
	}
}

func (st *Store) load(r io.Reader) error {
	sr := &snapReader{r: r, digest: xxhash.New()}
	hdr, err := sr.read(headerLen)
	if err != nil {
		return err
	}
	switch {
	case string(hdr[:8]) != snapMagic:
		return sr.fail(0, "not a sluice snapshot (bad magic)")
	case binary.LittleEndian.Uint64(hdr[24:]) != xxhash.Sum64(hdr[:24]):
		return sr.fail(24, "header checksum mismatch")
	case binary.LittleEndian.Uint32(hdr[8:]) != snapVersion:
		return sr.fail(8, fmt.Sprintf("version %d; this sluice reads version %d", binary.LittleEndian.Uint32(hdr[8:]), snapVersion))
	}
	now := int64(binary.LittleEndian.Uint64(hdr[16:]))
	var entries uint64
	for {
		start := sr.off
		fileSum := sr.digest.Sum64()
		kind, count, payload, err := sr.block()
		if err != nil {
			return err
		}
		if kind == kindEnd {
			if count != 0 || len(payload) != 16 {
				return sr.fail(start, "malformed end block")
			}
			if got := binary.LittleEndian.Uint64(payload); got != entries {
				return sr.fail(start, fmt.Sprintf("end block counts %d entries; the blocks hold %d", got, entries))
			}
			if binary.LittleEndian.Uint64(payload[8:]) != fileSum {
				return sr.fail(start, "file digest mismatch")
			}
			var one [1]byte
			if n, _ := io.ReadFull(r, one[:]); n != 0 {
				return sr.fail(sr.off, "data after the end block")
			}
			return nil
		}
		if kind == kindSidecar {
			if count != 0 || st.loadedSidecar != nil || entries > 0 {
				return sr.fail(start, "a sidecar block with a count, twice, or after entries")
			}
			st.loadedSidecar, st.sidecarAt = append([]byte{}, payload...), start
			continue
		}
		if kind != kindEntries {
			return sr.fail(start, fmt.Sprintf("unknown block kind %q", kind))
		}
		for k := uint32(0); k < count; k++ {
			key, e, n, err := decodeEntryKey(payload)
			if err != nil {
				return sr.fail(start, "entry "+fmt.Sprint(k)+": "+err.Error())
			}
			payload = payload[n:]
			if err := st.put(key, e, now); err != nil {
				return sr.fail(start, err.Error())
			}
			entries++
		}
		if len(payload) != 0 {
			return sr.fail(start, "block longer than its entries")
		}
	}
}

// put stores one restored entry, refusing a key seen before.
func (st *Store) put(key []byte, e shard.Entry, now int64) error {
	h := xxhash.Sum64(key)
	sh := &st.shards[h&st.mask]
	ref, _ := sh.FindHash(key, h, now)
	if !ref.Absent() {
		return fmt.Errorf("key %q appears twice", key)
	}
	if e.Algo == algorithms.None || e.Expire <= now {
		return fmt.Errorf("key %q holds no state or had expired when it was written", key)
	}
	st.noteEntry(&e)
	return sh.Commit(ref, key, &e, now)
}

// decodeEntryKey decodes the entry at the start of b; the key and Ext
// alias b. It never reads past b and never allocates more than b holds.
func decodeEntryKey(b []byte) (key []byte, e shard.Entry, n int, err error) {
	klen, k := binary.Uvarint(b)
	if k <= 0 || klen > uint64(len(b)-k) {
		return nil, e, 0, errShort
	}
	key = b[k : k+int(klen)]
	p := k + int(klen)
	if len(b)-p < 11 {
		return nil, e, 0, errShort
	}
	e.Algo = algorithms.Algo(b[p])
	if b[p+1]&^flagDepleted != 0 {
		return nil, e, 0, fmt.Errorf("unknown flags %#x", b[p+1])
	}
	e.Depleted = b[p+1]&flagDepleted != 0
	e.Expire = int64(binary.LittleEndian.Uint64(b[p+2:]))
	ns := int(b[p+10])
	p += 11
	if ns > len(e.State) || len(b)-p < 8*ns {
		return nil, e, 0, errShort
	}
	for i := 0; i < ns; i++ {
		e.State[i] = int64(binary.LittleEndian.Uint64(b[p:]))
		p += 8
	}
	xlen, k := binary.Uvarint(b[p:])
	if k <= 0 || xlen > uint64(len(b)-p-k)/8 {
		return nil, e, 0, errShort
	}
	p += k
	if xlen > 0 {
		e.Ext = make([]int64, xlen)
		for i := range e.Ext {
			e.Ext[i] = int64(binary.LittleEndian.Uint64(b[p:]))
			p += 8
		}
	}
	return key, e, p, nil
}

// snapReader reads blocks, checking each, and digests every byte.
type snapReader struct {
	r      io.Reader
	digest *xxhash.Digest
	off    int64
	buf    []byte
}

func (sr *snapReader) fail(off int64, reason string) error {
	return &SnapshotError{Offset: off, Reason: reason}
}

// read returns the next n bytes, valid until the next read. It grows its
// buffer as bytes arrive, so a corrupt length costs no more memory than
// the file has.
func (sr *snapReader) read(n int) ([]byte, error) {
	sr.buf = sr.buf[:0]
	for len(sr.buf) < n {
		step := min(n-len(sr.buf), 1<<20)
		sr.buf = slices.Grow(sr.buf, step)
		got, err := io.ReadFull(sr.r, sr.buf[len(sr.buf):len(sr.buf)+step])
		sr.buf = sr.buf[:len(sr.buf)+got]
		if err != nil {
			return nil, sr.fail(sr.off+int64(len(sr.buf)), "truncated: the file ends before its end block")
		}
	}
	sr.digest.Write(sr.buf)
	sr.off += int64(n)
	return sr.buf, nil
}

func (sr *snapReader) block() (kind byte, count uint32, payload []byte, err error) {
	start := sr.off
	head, err := sr.read(blockHead)
	if err != nil {
		return 0, 0, nil, err
	}
	kind, count = head[0], binary.LittleEndian.Uint32(head[1:])
	length := binary.LittleEndian.Uint32(head[5:])
	if length > maxBlock {
		return 0, 0, nil, sr.fail(start, fmt.Sprintf("corrupt block header: a length of %d bytes", length))
	}
	sum := xxhash.New()
	sum.Write(head)
	body, err := sr.read(int(length) + 8)
	if err != nil {
		return 0, 0, nil, err
	}
	payload = body[:length]
	sum.Write(payload)
	if binary.LittleEndian.Uint64(body[length:]) != sum.Sum64() {
		return 0, 0, nil, sr.fail(start, "block checksum mismatch")
	}
	return kind, count, payload, nil
}
