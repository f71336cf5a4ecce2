package store

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-rl/sluice/shard"
)

// The append-only log (appendonly, appendfsync, appendfilename): every
// state change the store applies is appended to it, so that a crash loses
// at most the fsync window, never everything since the last snapshot.
//
// File format, version 1. Integers are little-endian.
//
//	header  "SLUICAOF" | version u32 | flags u32 (0) | base length u64 | xxhash64 of the 24 bytes before
//	base    a snapshot (snapshot.go's format) of base length bytes: the state the log starts from
//	frame*  payload length u32 | CRC-32C of payload u32 | payload
//	payload now i64 | item+
//	item    'S' entry (snapshot.go's entry encoding): key now holds this state
//	        'D' uvarint key length | key: key was deleted
//	        'F': every key was deleted
//	        'X' uvarint length | the sidecar's whole state (sidecar.go)
//	        'P' uvarint length | the state of one part of the sidecar (sidecar.go)
//
// A frame is one atomic change: a decision on one key is one frame with
// one item; an RL.ALL group (or any multi-key change) is one frame with
// all its keys, so that recovery applies all of it or none. Items are
// absolute states, not operations: replaying a frame twice, or replaying
// frames over a base that already holds some of them, gives the same
// store. That is what lets the base be written while traffic goes on
// (see aof_rewrite.go) and the log record one entry per change whatever
// the algorithm.

const (
	aofMagic      = "SLUICAOF"
	aofVersion    = 1
	aofHeaderLen  = 32
	frameHead     = 8       // payload length, CRC
	framePrefix   = 8       // now, at the start of every payload
	maxFrame      = 1 << 30 // longest payload a reader accepts
	itemSet       = byte('S')
	itemDelete    = byte('D')
	itemFlush     = byte('F')
	keepBufferCap = 1 << 20 // a write buffer grown past this is dropped after its write
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Fsync is appendfsync: when the log is forced to disk.
type Fsync string

// The values of appendfsync, with redis.conf's meaning.
const (
	FsyncAlways   Fsync = "always"   // before any reply of the batch is sent
	FsyncEverySec Fsync = "everysec" // once a second, in the background
	FsyncNo       Fsync = "no"       // when the kernel decides
)

// ParseFsync returns the appendfsync value named s.
func ParseFsync(s string) (Fsync, error) {
	switch f := Fsync(s); f {
	case FsyncAlways, FsyncEverySec, FsyncNo:
		return f, nil
	}
	return "", fmt.Errorf("appendfsync %q: %w", s, errBadFsync)
}

// AOFConfig is the log's configuration. Start from DefaultAOFConfig.
type AOFConfig struct {
	Fsync Fsync
	// AutoRewritePercentage and AutoRewriteMinSize are
	// auto-aof-rewrite-percentage and auto-aof-rewrite-min-size: the log is
	// rewritten in the background when it has grown by this percentage
	// over its base and is at least this large. 0: never automatically.
	AutoRewritePercentage int64
	AutoRewriteMinSize    int64
}

// DefaultAOFConfig returns redis.conf's defaults: everysec, rewrite at 100 %
// growth over at least 64 MB.
func DefaultAOFConfig() AOFConfig {
	return AOFConfig{Fsync: FsyncEverySec, AutoRewritePercentage: 100, AutoRewriteMinSize: 64 << 20}
}

// Validate reports the first setting that cannot work.
func (c *AOFConfig) Validate() error {
	if _, err := ParseFsync(string(c.Fsync)); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if c.AutoRewritePercentage < 0 || c.AutoRewriteMinSize < 0 {
		return fmt.Errorf("store: %w", errBadAutoRewrite)
	}
	return nil
}

// AOF is an open append-only log attached to a store (OpenAOF). The store
// appends a frame for every change while it holds the changed keys' shard
// locks, so a key's frames are in the order its changes were applied, and
// Sync, called once per batch before the batch's replies are sent, writes
// what was appended in one write and, with FsyncAlways, forces it to disk:
// one fsync covers every batch waiting at the time (group commit).
//
// Concurrency: every method is safe for concurrent use. Lock order: shard
// locks, then mu; wmu, then mu; wmu, then smu. Nothing takes a shard lock
// while holding mu, wmu or smu.
type AOF struct {
	cfg  AOFConfig
	path string
	st   *Store

	mu       sync.Mutex // guards buf; taken under shard locks
	buf      []byte     // frames appended and not yet written
	appended atomic.Int64

	wmu   sync.Mutex // one writer at a time; guards f, spare, closed
	f     *os.File
	spare []byte
	// closed: Close ran; nothing is written any more.
	closed bool
	smu    sync.Mutex // held across a background fsync; the file is not swapped under it

	written  atomic.Int64 // bytes appended and written to the file (of appended's count)
	synced   atomic.Int64 // bytes appended and forced to disk
	size     atomic.Int64 // the file's size
	baseSize atomic.Int64 // its size after the last rewrite or at open

	writeOK atomic.Bool // the last write and fsync worked
	// needRewrite: an fsync failed. The kernel may have dropped the pages
	// it could not write and report the next fsync as a success, so no
	// later fsync proves the frames written before it durable: the log is
	// written anew from the store (a rewrite) before writes are accepted
	// again.
	needRewrite  atomic.Bool
	notify       atomic.Pointer[func(error)] // told when writing fails and works again (SetNotify)
	delayedFsync atomic.Int64                // background fsyncs that took longer than 2 s
	rewriting    atomic.Bool
	rewriteOK    atomic.Bool
	rewrites     atomic.Int64

	stop chan struct{}
	done chan struct{}
}

// SetAOF attaches a to the store: from now on every change is appended to
// it. A nil a detaches the log.
func (st *Store) SetAOF(a *AOF) { st.aof.Store(a) }

// appendSet appends the frame that sets key to e at now. It requires the
// lock of key's shard, which orders a key's frames as its changes.
func (a *AOF) appendSet(now int64, key []byte, e *shard.Entry) {
	a.mu.Lock()
	start := len(a.buf)
	a.buf = append(a.buf, make([]byte, frameHead)...)
	a.buf = binary.LittleEndian.AppendUint64(a.buf, uint64(now))
	a.buf = append(a.buf, itemSet)
	a.buf = appendEntry(a.buf, key, e)
	a.seal(start)
	a.mu.Unlock()
}

// appendDelete appends the frame that deletes key at now. It requires the
// lock of key's shard.
func (a *AOF) appendDelete(now int64, key []byte) {
	a.mu.Lock()
	start := len(a.buf)
	a.buf = append(a.buf, make([]byte, frameHead)...)
	a.buf = binary.LittleEndian.AppendUint64(a.buf, uint64(now))
	a.buf = appendDeleteItem(a.buf, key)
	a.seal(start)
	a.mu.Unlock()
}

// appendFrame appends one frame of items (encoded by appendSetItem,
// appendDeleteItem or itemFlush) at now: a change of several keys that
// recovery applies whole or not at all. It requires the locks of every
// shard the items touch.
func (a *AOF) appendFrame(now int64, items []byte) {
	a.mu.Lock()
	start := len(a.buf)
	a.buf = append(a.buf, make([]byte, frameHead)...)
	a.buf = binary.LittleEndian.AppendUint64(a.buf, uint64(now))
	a.buf = append(a.buf, items...)
	a.seal(start)
	a.mu.Unlock()
}

// seal fills in the head of the frame that starts at buf[start] and counts
// its bytes. It requires a.mu.
func (a *AOF) seal(start int) {
	payload := a.buf[start+frameHead:]
	binary.LittleEndian.PutUint32(a.buf[start:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(a.buf[start+4:], crc32.Checksum(payload, crcTable))
	a.appended.Add(int64(len(a.buf) - start))
}

func appendSetItem(b, key []byte, e *shard.Entry) []byte {
	return appendEntry(append(b, itemSet), key, e)
}

func appendDeleteItem(b, key []byte) []byte {
	b = append(b, itemDelete)
	b = binary.AppendUvarint(b, uint64(len(key)))
	return append(b, key...)
}

// Sync makes the frames appended so far durable as the policy says: it
// writes them to the file and, with FsyncAlways, forces the file to disk,
// before it returns. Call it once per batch, after the batch's changes and
// before its replies are sent. When another caller is already writing, it
// waits for that write and then writes, in one write and one fsync, what
// every waiting caller appended.
func (a *AOF) Sync() error {
	pos := a.appended.Load()
	if a.cfg.Fsync == FsyncAlways {
		if a.synced.Load() >= pos {
			return nil
		}
		return a.flush(pos, true)
	}
	if a.written.Load() >= pos {
		return nil
	}
	return a.flush(pos, false)
}

// flush writes what was appended and, if fsync, forces it to disk, unless
// another flush already covered pos meanwhile.
func (a *AOF) flush(pos int64, fsync bool) error {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	if a.closed {
		return errAOFClosed
	}
	if (fsync && a.synced.Load() >= pos) || (!fsync && a.written.Load() >= pos) {
		return nil
	}
	if err := a.refusal(); err != nil && a.needRewrite.Load() {
		return err // only a rewrite makes these frames durable now (retry)
	}
	if err := a.writeLocked(); err != nil {
		return err
	}
	if fsync {
		end := a.written.Load()
		if err := a.f.Sync(); err != nil {
			return a.fsyncFailed(err)
		}
		a.synced.Store(end)
	}
	a.worked()
	return nil
}

// failed records a write of the log that failed with err: from now on the
// store refuses every change (refusal.go), until a retry works. It returns
// the error as the replies word it.
func (a *AOF) failed(err error) error {
	e := &aofError{err: err}
	first := a.writeOK.Swap(false)
	a.st.gate.set(true, e)
	if fn := a.notify.Load(); fn != nil && first {
		(*fn)(e)
	}
	return e
}

// SetNotify has fn called with the error when writing the log starts to
// fail, and with nil when it works again (after a retry). fn must not call
// the log.
func (a *AOF) SetNotify(fn func(error)) { a.notify.Store(&fn) }

// fsyncFailed is failed for an fsync: only a rewrite ends the refusal.
func (a *AOF) fsyncFailed(err error) error {
	a.needRewrite.Store(true)
	return a.failed(err)
}

// worked records a write (and fsync, as the policy says) that worked, and
// ends a refusal unless an fsync failed since the last rewrite.
func (a *AOF) worked() {
	if !a.writeOK.Load() && !a.needRewrite.Load() && !a.writeOK.Swap(true) {
		a.st.gate.set(true, nil)
		if fn := a.notify.Load(); fn != nil {
			(*fn)(nil)
		}
	}
}

// refusal is the error of the failed write that refuses changes, or nil.
func (a *AOF) refusal() error {
	if a.writeOK.Load() {
		return nil
	}
	return a.st.WriteRefusal()
}

// retry tries again, once the log failed, to make durable what is pending:
// the write and fsync that failed or, after a failed fsync, a rewrite.
// Success ends the refusal.
func (a *AOF) retry() {
	if a.needRewrite.Load() {
		if a.Rewrite() == nil {
			a.needRewrite.Store(false)
			a.worked()
		}
		return
	}
	if a.flush(a.appended.Load(), a.cfg.Fsync != FsyncNo) == nil {
		a.worked()
	}
}

// writeLocked writes every frame appended so far to the file in one
// write. It requires a.wmu. A failed write is cut off the file again and
// its frames are kept for the next write, so that a frame is never
// written in part before a whole one.
func (a *AOF) writeLocked() error {
	a.mu.Lock()
	data := a.buf
	a.buf = a.spare[:0]
	end := a.appended.Load()
	a.mu.Unlock()
	if len(data) > 0 {
		if n, err := a.f.Write(data); err != nil {
			if n > 0 {
				a.f.Truncate(a.size.Load())
				a.f.Seek(a.size.Load(), 0)
			}
			a.mu.Lock()
			a.buf = append(data, a.buf...) // the next write starts with these again
			a.mu.Unlock()
			return a.failed(err)
		}
		a.size.Add(int64(len(data)))
	}
	a.written.Store(end)
	if cap(data) > keepBufferCap {
		data = nil
	}
	a.spare = data[:0]
	return nil
}

// run is the log's background loop: once a second it writes what is
// pending and, with FsyncEverySec, forces the file to disk without holding
// up the writers; it starts an automatic rewrite when the file has grown
// enough. While the last write failed, it retries instead, once a second,
// whatever the policy: changes are refused until a retry works.
func (a *AOF) run() {
	defer close(a.done)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-a.stop:
			return
		case <-t.C:
		}
		if !a.writeOK.Load() {
			a.retry()
			continue
		}
		if a.cfg.Fsync == FsyncEverySec {
			a.backgroundSync()
		}
		if a.shouldRewrite() {
			a.BackgroundRewrite()
		}
	}
}

// backgroundSync writes what is pending and forces it to disk; only the
// write holds wmu, so batches wait for no fsync.
func (a *AOF) backgroundSync() {
	a.wmu.Lock()
	if a.closed {
		a.wmu.Unlock()
		return
	}
	err := a.writeLocked()
	end := a.written.Load()
	a.smu.Lock() // before wmu is let go: the file cannot be swapped under the fsync
	f := a.f
	a.wmu.Unlock()
	if err != nil || a.synced.Load() >= end {
		a.smu.Unlock()
		return
	}
	start := time.Now()
	err = f.Sync()
	a.smu.Unlock()
	if time.Since(start) > 2*time.Second {
		a.delayedFsync.Add(1)
	}
	if err != nil {
		a.fsyncFailed(err)
		return
	}
	for {
		old := a.synced.Load()
		if old >= end || a.synced.CompareAndSwap(old, end) {
			break
		}
	}
	a.worked()
}

// shouldRewrite reports whether the file has grown past the automatic
// rewrite's thresholds.
func (a *AOF) shouldRewrite() bool {
	pct := a.cfg.AutoRewritePercentage
	if pct <= 0 || a.rewriting.Load() {
		return false
	}
	size, base := a.size.Load(), a.baseSize.Load()
	return size >= a.cfg.AutoRewriteMinSize && size-base >= base/100*pct
}

// Close stops the background loop, writes what is pending, forces the file
// to disk whatever the policy, and closes it. Frames appended later are
// never written. A rewrite still running is abandoned.
func (a *AOF) Close() error {
	select {
	case <-a.stop:
	default:
		close(a.stop)
	}
	<-a.done
	a.wmu.Lock()
	defer a.wmu.Unlock()
	if a.closed {
		return nil
	}
	err := a.writeLocked()
	if serr := a.f.Sync(); err == nil {
		err = serr
	}
	a.synced.Store(a.written.Load())
	a.closed = true
	if cerr := a.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// AOFStats are what INFO persistence reports of the log.
type AOFStats struct {
	Fsync             Fsync
	Path              string
	RewriteInProgress bool
	LastRewriteOK     bool
	Rewrites          int64
	CurrentSize       int64 // bytes of the file
	BaseSize          int64 // its bytes after the last rewrite or at start-up
	LastWriteOK       bool
	DelayedFsync      int64 // background fsyncs that took longer than 2 s
	Pending           int64 // bytes appended and not yet written
	Unsynced          int64 // bytes written and not yet forced to disk
}

// Stats returns the log's figures.
func (a *AOF) Stats() AOFStats {
	app, wr, sy := a.appended.Load(), a.written.Load(), a.synced.Load()
	return AOFStats{
		Fsync:             a.cfg.Fsync,
		Path:              a.path,
		RewriteInProgress: a.rewriting.Load(),
		LastRewriteOK:     a.rewriteOK.Load(),
		Rewrites:          a.rewrites.Load(),
		CurrentSize:       a.size.Load(),
		BaseSize:          a.baseSize.Load(),
		LastWriteOK:       a.writeOK.Load(),
		DelayedFsync:      a.delayedFsync.Load(),
		Pending:           max(app-wr, 0),
		Unsynced:          max(wr-sy, 0),
	}
}

// Path returns the log file's path.
func (a *AOF) Path() string { return a.path }
