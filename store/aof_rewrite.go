package store

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cespare/xxhash/v2"
)

// Opening the log, and rewriting it (BGREWRITEAOF, the automatic rewrite):
// a new file whose base is a snapshot of the store and whose frames are
// those appended since the rewrite began, put in place of the old one by a
// rename, without stopping service.

// OpenAOF opens the log at path for st and attaches it (SetAOF). If there
// is no file, it first writes one whose base is st as it stands (the
// snapshot just loaded, or nothing). Load the file before, with LoadAOF:
// OpenAOF appends to it as it is.
func OpenAOF(st *Store, path string, cfg AOFConfig) (*AOF, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if _, err := writeAOFBase(st, path, nil, 0); err != nil {
			return nil, err
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	a := &AOF{cfg: cfg, path: path, st: st, f: f, stop: make(chan struct{}), done: make(chan struct{})}
	a.size.Store(fi.Size())
	a.baseSize.Store(fi.Size())
	a.writeOK.Store(true)
	a.rewriteOK.Store(true)
	st.SetAOF(a)
	go a.run()
	return a, nil
}

// BackgroundRewrite starts a rewrite in its own goroutine; it is refused
// while one runs.
func (a *AOF) BackgroundRewrite() error {
	if !a.rewriting.CompareAndSwap(false, true) {
		return ErrRewriteInProgress
	}
	go a.rewrite()
	return nil
}

// Rewrite rewrites the log in the caller's goroutine; it is refused while
// another rewrite runs.
func (a *AOF) Rewrite() error {
	if !a.rewriting.CompareAndSwap(false, true) {
		return ErrRewriteInProgress
	}
	return a.rewrite()
}

// rewrite writes a new log beside the old one and renames it over it.
// Traffic goes on throughout; only the last step, which copies the frames
// appended during the last copy (a few milliseconds' worth) and swaps the
// files, holds up the batches' writes.
//
// Why nothing is lost: every frame appended from the moment the rewrite
// marks the old file's end (mark) is copied into the new file after its
// base, and the base holds every key's state as of some instant after
// mark. Items are absolute states, so a frame that the base already
// reflects, replayed over it, changes nothing; the last frame of each key
// is its newest state either way. A crash at any point leaves the old file
// whole (the new one is a temporary file until the rename), and the
// start-up removes the temporary file.
func (a *AOF) rewrite() (err error) {
	defer func() {
		a.rewriteOK.Store(err == nil)
		if err == nil {
			a.rewrites.Add(1)
		}
		a.rewriting.Store(false)
	}()
	a.wmu.Lock()
	if a.closed {
		a.wmu.Unlock()
		return errAOFClosed
	}
	werr := a.writeLocked()
	mark := a.size.Load()
	a.wmu.Unlock()
	if werr != nil {
		return werr
	}
	old, err := os.Open(a.path)
	if err != nil {
		return err
	}
	defer old.Close()
	tmp, err := writeAOFBase(a.st, a.path, old, mark)
	if err != nil {
		return err
	}
	defer os.Remove(tmp.name) // a no-op after the rename
	defer tmp.f.Close()

	a.wmu.Lock()
	defer a.wmu.Unlock()
	if a.closed {
		return errAOFClosed
	}
	if err := a.writeLocked(); err != nil {
		return err
	}
	if err := tmp.copyTail(old, a.size.Load()); err != nil {
		return err
	}
	if err := tmp.f.Sync(); err != nil {
		return err
	}
	// The descriptor the log goes on with, opened before the rename: once
	// the new file is in place, the log can only be written through it.
	nf, err := os.OpenFile(tmp.name, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp.name, a.path); err != nil {
		nf.Close()
		return err
	}
	a.smu.Lock()
	prev := a.f
	a.f = nf
	a.smu.Unlock()
	prev.Close()
	a.size.Store(tmp.off)
	a.baseSize.Store(tmp.off)
	a.synced.Store(a.written.Load()) // the new file was forced to disk whole
	return syncDir(filepath.Dir(a.path))
}

// aofTemp is a new log being written.
type aofTemp struct {
	f    *os.File
	name string
	off  int64 // bytes written
	from int64 // where the next copy of the old file starts
}

// writeAOFBase writes a new log file beside path whose base is st's
// snapshot and, if old is not nil, followed by old's frames from mark on,
// copied while traffic goes on; it returns the file, synced. Without old
// it renames the file to path, closes it and returns nil.
func writeAOFBase(st *Store, path string, old *os.File, mark int64) (*aofTemp, error) {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+tmpInfix+"*")
	if err != nil {
		return nil, err
	}
	t := &aofTemp{f: f, name: f.Name(), from: mark}
	keep := false
	defer func() {
		if !keep {
			f.Close()
			os.Remove(t.name)
		}
	}()
	if _, err := f.Write(make([]byte, aofHeaderLen)); err != nil {
		return nil, err
	}
	cw := &baseCounter{w: bufio.NewWriterSize(f, 1<<20)}
	if err := st.Snapshot(cw); err != nil {
		return nil, err
	}
	if err := cw.w.Flush(); err != nil {
		return nil, err
	}
	if _, err := f.WriteAt(aofHeader(cw.n), 0); err != nil {
		return nil, err
	}
	t.off = aofHeaderLen + cw.n
	if old != nil {
		// Catch up while traffic goes on, until what is left is small.
		for {
			fi, err := old.Stat()
			if err != nil {
				return nil, err
			}
			if fi.Size()-t.from < 1<<20 {
				break
			}
			if err := t.copyTail(old, fi.Size()); err != nil {
				return nil, err
			}
		}
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	if old == nil {
		if err := f.Close(); err != nil {
			return nil, err
		}
		if err := os.Rename(t.name, path); err != nil {
			return nil, err
		}
		if err := syncDir(filepath.Dir(path)); err != nil {
			return nil, err
		}
		keep = true
		return nil, nil
	}
	keep = true
	return t, nil
}

// copyTail copies old's bytes from t.from to end to the end of t.
func (t *aofTemp) copyTail(old *os.File, end int64) error {
	if end <= t.from {
		return nil
	}
	n, err := io.Copy(io.NewOffsetWriter(t.f, t.off), io.NewSectionReader(old, t.from, end-t.from))
	t.off += n
	t.from += n
	if err == nil && t.from != end {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// aofHeader returns the file header for a base of baseLen bytes.
func aofHeader(baseLen int64) []byte {
	h := make([]byte, aofHeaderLen)
	copy(h, aofMagic)
	binary.LittleEndian.PutUint32(h[8:], aofVersion)
	binary.LittleEndian.PutUint64(h[16:], uint64(baseLen))
	binary.LittleEndian.PutUint64(h[24:], xxhash.Sum64(h[:24]))
	return h
}

type baseCounter struct {
	w *bufio.Writer
	n int64
}

func (c *baseCounter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
