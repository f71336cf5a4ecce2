package store

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/cespare/xxhash/v2"
	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/shard"
)

// Reading the log at start-up: the base, then every whole frame after it.
// What a crash mid-write leaves (the last write cut short, or a last frame
// whose bytes did not all reach the disk) is a torn tail: it is cut, and
// the load says how many bytes. Anything else that cannot be read is
// corruption: the load fails with the offset and the reason, unless it is
// told to skip what it cannot read (AOFLoadOptions.SkipCorrupt).

// AOFError is a log that cannot be loaded. Offset is the byte where the
// problem was found.
type AOFError struct {
	Path   string
	Offset int64
	Reason string
}

func (e *AOFError) Error() string {
	return fmt.Sprintf("append-only log %s unreadable at byte %d: %s", e.Path, e.Offset, e.Reason)
}

// AOFLoadOptions says what a load does with corruption.
type AOFLoadOptions struct {
	// SkipCorrupt: frames that cannot be read before the tail are skipped,
	// up to the next frame that can, instead of failing the load. The base
	// must be whole either way.
	SkipCorrupt bool
}

// AOFLoad says what a load found.
type AOFLoad struct {
	Loaded   bool  // there was a file
	Size     int64 // its bytes
	Base     int64 // bytes of its base
	Frames   int64 // frames applied
	ValidEnd int64 // where the last whole frame ends; the file is to be cut here
	// TornBytes is how many bytes of a torn tail were cut, at ValidEnd, and
	// TornReason why they could not be read.
	TornBytes  int64
	TornReason string
	Skipped    []AOFSkip // corrupt ranges skipped (SkipCorrupt)
}

// AOFSkip is a corrupt range of the log that a load skipped.
type AOFSkip struct {
	Offset, Bytes int64
	Reason        string
}

// Limits of the reader: a torn tail is at most tornMax bytes (more than
// any one batch writes); a frame found by the search after corruption is
// at most resyncMax bytes, which bounds the search's work.
const (
	tornMax   = 64 << 20
	resyncMax = 1 << 20
)

// LoadAOF replaces the store's entries with the log's at path: its base,
// then its frames. A missing file is no error (Loaded is false). A log that
// cannot be loaded is an *AOFError and leaves the store as it was. Entries
// are kept whatever the memory limit, as Restore keeps them. The caller
// cuts the file at ValidEnd before appending to it.
func (st *Store) LoadAOF(path string, opt AOFLoadOptions) (AOFLoad, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return AOFLoad{}, nil
	}
	if err != nil {
		return AOFLoad{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return AOFLoad{}, err
	}
	tmp := New(len(st.shards))
	out, err := tmp.loadAOF(f, fi.Size(), opt)
	if err != nil {
		tmp.Flush(0)
		var ae *AOFError
		if errors.As(err, &ae) {
			ae.Path = path
		}
		return out, err
	}
	if err := st.installSidecar(tmp); err != nil {
		tmp.Flush(0)
		return out, &AOFError{Path: path, Offset: aofHeaderLen + tmp.sidecarAt, Reason: err.Error()}
	}
	st.takeShards(tmp)
	return out, nil
}

// loadAOF loads the log of size bytes that r holds into st, which is new
// and serves no one.
func (st *Store) loadAOF(r io.ReaderAt, size int64, opt AOFLoadOptions) (AOFLoad, error) {
	out := AOFLoad{Loaded: true, Size: size}
	fail := func(off int64, reason string) (AOFLoad, error) {
		return out, &AOFError{Offset: off, Reason: reason}
	}
	var hdr [aofHeaderLen]byte
	if n, _ := r.ReadAt(hdr[:], 0); n < aofHeaderLen {
		return fail(int64(n), "truncated: the file ends inside its header")
	}
	switch {
	case string(hdr[:8]) != aofMagic:
		return fail(0, "not a sluice append-only log (bad magic)")
	case binary.LittleEndian.Uint64(hdr[24:]) != xxhash.Sum64(hdr[:24]):
		return fail(24, "header checksum mismatch")
	case binary.LittleEndian.Uint32(hdr[8:]) != aofVersion:
		return fail(8, fmt.Sprintf("version %d; this sluice reads version %d", binary.LittleEndian.Uint32(hdr[8:]), aofVersion))
	}
	base := binary.LittleEndian.Uint64(hdr[16:])
	if base > uint64(size-aofHeaderLen) {
		return fail(16, fmt.Sprintf("the base is %d bytes; the file holds %d after its header", base, size-aofHeaderLen))
	}
	out.Base = int64(base)
	if err := st.load(bufio.NewReaderSize(io.NewSectionReader(r, aofHeaderLen, out.Base), 256<<10)); err != nil {
		var se *SnapshotError
		if errors.As(err, &se) {
			return fail(aofHeaderLen+se.Offset, "base: "+se.Reason)
		}
		return fail(aofHeaderLen, "base: "+err.Error())
	}
	fr := frameReader{r: r, size: size, off: aofHeaderLen + out.Base}
	fr.br = bufio.NewReaderSize(io.NewSectionReader(r, fr.off, size-fr.off), 256<<10)
	for {
		payload, reason := fr.next()
		if reason == "" {
			if payload == nil {
				out.ValidEnd = fr.off
				return out, nil
			}
			if err := checkFrame(payload); err != nil {
				reason = "frame: " + err.Error()
			} else {
				applyFrame(st, payload)
				if st.sidecarAt < 0 {
					st.sidecarAt = fr.off - aofHeaderLen
				}
				out.Frames++
				fr.advance()
				continue
			}
		}
		// What cannot be read: a torn tail if no whole frame follows it.
		at := fr.off
		if size-at > tornMax && !opt.SkipCorrupt {
			return fail(at, reason+fmt.Sprintf("; %d bytes follow, more than a crash mid-write leaves", size-at))
		}
		next, found, err := findFrame(r, at+1, size)
		if err != nil {
			return fail(at, err.Error())
		}
		if !found && size-at <= tornMax {
			out.ValidEnd, out.TornBytes, out.TornReason = at, size-at, reason
			return out, nil
		}
		if !opt.SkipCorrupt {
			return fail(at, reason+fmt.Sprintf("; a whole frame follows at byte %d, so this is no torn tail", next))
		}
		if !found {
			next = size
		}
		out.Skipped = append(out.Skipped, AOFSkip{Offset: at, Bytes: next - at, Reason: reason})
		if !found {
			out.ValidEnd = at
			return out, nil
		}
		fr.seek(next)
	}
}

// frameReader reads a log's frames in order.
type frameReader struct {
	r    io.ReaderAt
	br   *bufio.Reader
	size int64
	off  int64 // where the current frame starts
	n    int   // its length, head included, once next returned it
	buf  []byte
}

// next returns the payload of the frame at off, valid until the next call,
// or nil at the end of the file; or the reason it cannot be read. It never
// allocates more than the file holds.
func (fr *frameReader) next() (payload []byte, reason string) {
	left := fr.size - fr.off
	if left == 0 {
		return nil, ""
	}
	if left < frameHead {
		return nil, fmt.Sprintf("the file ends %d bytes into a frame head", left)
	}
	head, err := fr.br.Peek(frameHead)
	if err != nil {
		return nil, "read: " + err.Error()
	}
	length := int64(binary.LittleEndian.Uint32(head))
	sum := binary.LittleEndian.Uint32(head[4:])
	switch {
	case length <= framePrefix || length > maxFrame:
		return nil, fmt.Sprintf("a frame of %d bytes", length)
	case frameHead+length > left:
		return nil, fmt.Sprintf("a frame of %d bytes; the file ends %d bytes into it", length, left-frameHead)
	}
	fr.n = frameHead + int(length)
	if fr.n <= fr.br.Size() {
		b, err := fr.br.Peek(fr.n)
		if err != nil {
			return nil, "read: " + err.Error()
		}
		payload = b[frameHead:]
	} else {
		if cap(fr.buf) < fr.n {
			fr.buf = make([]byte, fr.n) // at most the file's size: frameHead+length <= left
		}
		fr.buf = fr.buf[:fr.n]
		if _, err := fr.r.ReadAt(fr.buf, fr.off); err != nil {
			return nil, "read: " + err.Error()
		}
		payload = fr.buf[frameHead:]
	}
	if crc32.Checksum(payload, crcTable) != sum {
		return nil, "frame checksum mismatch"
	}
	return payload, ""
}

// advance moves past the frame next returned.
func (fr *frameReader) advance() {
	if fr.n <= fr.br.Size() {
		fr.br.Discard(fr.n)
	} else {
		fr.br.Reset(io.NewSectionReader(fr.r, fr.off+int64(fr.n), fr.size-fr.off-int64(fr.n)))
	}
	fr.off += int64(fr.n)
}

// seek moves to off.
func (fr *frameReader) seek(off int64) {
	fr.off = off
	fr.br.Reset(io.NewSectionReader(fr.r, off, fr.size-off))
}

// findFrame looks for the first whole, well-formed frame of at most
// resyncMax bytes that starts at or after from; found is false if none
// does before size. It reads the file in chunks of a few megabytes.
func findFrame(r io.ReaderAt, from, size int64) (next int64, found bool, err error) {
	const chunk = 4 << 20
	buf := make([]byte, 0, min(size-from, chunk+frameHead+resyncMax)+1)
	for start := from; start < size; start += chunk {
		n := min(size-start, chunk+frameHead+resyncMax)
		buf = buf[:n]
		if _, err := r.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
			return 0, false, err
		}
		for p := 0; p < int(min(n, chunk)); p++ {
			if frameAt(buf[p:]) {
				return start + int64(p), true, nil
			}
		}
	}
	return 0, false, nil
}

// frameAt reports whether b starts with a whole frame of at most
// resyncMax bytes whose checksum holds and whose items decode.
func frameAt(b []byte) bool {
	if len(b) < frameHead {
		return false
	}
	length := int(binary.LittleEndian.Uint32(b))
	if length <= framePrefix || length > resyncMax || frameHead+length > len(b) {
		return false
	}
	payload := b[frameHead : frameHead+length]
	return crc32.Checksum(payload, crcTable) == binary.LittleEndian.Uint32(b[4:]) && checkFrame(payload) == nil
}

// checkFrame decodes every item of payload, applying nothing, so that a
// frame is applied whole or not at all.
func checkFrame(payload []byte) error {
	return walkFrame(payload, func(byte, []byte, *shard.Entry) {})
}

// applyFrame applies the items of payload, which checkFrame accepted, to
// st, which serves no one.
func applyFrame(st *Store, payload []byte) {
	now := int64(binary.LittleEndian.Uint64(payload))
	walkFrame(payload, func(kind byte, key []byte, e *shard.Entry) {
		switch kind {
		case itemFlush:
			for i := range st.shards {
				st.shards[i].Flush()
			}
		case itemDelete:
			st.shardOf(key).Delete(key, now)
		case itemSidecar:
			st.loadedSidecar, st.loadedParts, st.sidecarAt = append([]byte{}, key...), nil, -1 // loadAOF puts in the frame's offset
		case itemSidecarPart:
			if st.loadedSidecar == nil && st.loadedParts == nil {
				st.sidecarAt = -1
			}
			st.loadedParts = append(st.loadedParts, append([]byte{}, key...))
		case itemSet:
			h := xxhash.Sum64(key)
			sh := &st.shards[h&st.mask]
			if e.Algo == algorithms.None || e.Expire <= now {
				sh.Delete(key, now)
				return
			}
			var cur shard.Entry
			ref := sh.FindInto(key, h, now, &cur)
			st.noteEntry(e)
			if err := sh.Commit(ref, key, e, now); err != nil {
				panic("store: a loaded entry needed room in a store without a limit: " + err.Error())
			}
		}
	})
}

// walkFrame calls fn for each item of payload, in order, and returns the
// first that does not decode; fn has then been called for the items before
// it.
func walkFrame(payload []byte, fn func(kind byte, key []byte, e *shard.Entry)) error {
	b := payload[framePrefix:]
	for len(b) > 0 {
		kind := b[0]
		b = b[1:]
		switch kind {
		case itemFlush:
			fn(kind, nil, nil)
		case itemDelete:
			n, k := binary.Uvarint(b)
			if k <= 0 || n > uint64(len(b)-k) {
				return errShort
			}
			fn(kind, b[k:k+int(n)], nil)
			b = b[k+int(n):]
		case itemSidecar, itemSidecarPart:
			n, k := binary.Uvarint(b)
			if k <= 0 || n > uint64(len(b)-k) {
				return errShort
			}
			fn(kind, b[k:k+int(n)], nil)
			b = b[k+int(n):]
		case itemSet:
			key, e, n, err := decodeEntryKey(b)
			if err != nil {
				return err
			}
			fn(kind, key, &e)
			b = b[n:]
		default:
			return fmt.Errorf("unknown item %q", kind)
		}
	}
	return nil
}
