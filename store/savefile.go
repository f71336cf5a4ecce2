package store

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Snapshot files: writing one without ever leaving a partial file, loading
// one at start-up, removing the temporary files of saves that did not
// finish, and the lock that keeps one server per data directory.

// tmpInfix joins a snapshot's file name and the random digits of the
// temporary file it is written to ("sluice.snap.tmp-123456789").
const tmpInfix = ".tmp-"

// saveFile writes the store's snapshot to path without ever leaving a
// partial file there: it writes a temporary file in the same directory,
// syncs it, renames it over path and syncs the directory. Traffic goes on
// during the save (see snapshotAt).
func (st *Store) saveFile(path string) error {
	_, err := writeFile(path, func(w io.Writer) (uint64, error) {
		return 0, st.Snapshot(w)
	})
	return err
}

// hold locks every shard, in ascending order as lockAll does, and returns
// the function that unlocks them. While the store is held nothing changes
// it: decisions, deletions and the sweep wait.
func (st *Store) hold() (release func()) {
	for i := range st.shards {
		st.shards[i].Lock()
	}
	return func() {
		for i := len(st.shards) - 1; i >= 0; i-- {
			st.shards[i].Unlock()
		}
	}
}

// saveFileHeld writes a point-in-time snapshot to path as saveFile does,
// at the latest instant any shard was given, and returns how many entries
// it holds. It requires that the caller holds the store (hold).
func (st *Store) saveFileHeld(path string) (uint64, error) {
	var now int64
	for i := range st.shards {
		now = max(now, st.shards[i].Now())
	}
	return writeFile(path, func(w io.Writer) (uint64, error) {
		sw := newSnapWriter(w, now)
		sw.sidecar(st.sidecarBytes())
		var buf []byte
		var spans []span
		for i := range st.shards {
			sh := &st.shards[i]
			buf, spans = buf[:0], spans[:0]
			for pos := 0; ; {
				if pos, buf, spans = copyStepLocked(sh, pos, now, buf, spans); pos == 0 {
					break
				}
			}
			sw.addSorted(buf, spans)
		}
		err := sw.finish()
		return sw.entries, err
	})
}

// writeFile writes what write writes to a temporary file beside path,
// syncs it, renames it over path and syncs the directory. The temporary
// file is removed if anything fails.
func writeFile(path string, write func(io.Writer) (uint64, error)) (uint64, error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+tmpInfix+"*")
	if err != nil {
		return 0, err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op after the rename
	w := bufio.NewWriterSize(f, 1<<20)
	n, err := write(w)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(dir)
	}
	return n, err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// LoadedFile says what LoadFile found at its path.
type LoadedFile struct {
	Loaded  bool      // a snapshot was read
	ModTime time.Time // when the loaded file was last written
	Size    int64     // its bytes
	// DanglingTo is the target of a symbolic link at the path that points
	// to nothing, "" otherwise.
	DanglingTo string
}

// LoadFile restores the store from the snapshot at path. A missing file is
// no error (Loaded is false): the store starts empty; a symbolic link to a
// missing file is reported in DanglingTo. A file that cannot be read whole
// is an error and the store is left as it was.
func (st *Store) LoadFile(path string) (LoadedFile, error) {
	var out LoadedFile
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		if target, lerr := os.Readlink(path); lerr == nil {
			out.DanglingTo = target
		}
		return out, nil
	}
	if err != nil {
		return out, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil {
		out.ModTime, out.Size = fi.ModTime(), fi.Size()
	}
	if err := st.Restore(f); err != nil {
		return out, fmt.Errorf("%s: %w", path, err)
	}
	out.Loaded = true
	return out, nil
}

// RemoveStaleTemps removes the temporary files that saves of the snapshot
// at path leave behind when the process dies during the write (kill -9
// during BGSAVE): the files of path's directory named path's base name,
// ".tmp-" and digits, as saveFile names them. It returns the files it
// removed and their sizes. Call it only while no save to path can be
// running, that is, while holding the directory's lock (LockDir).
func RemoveStaleTemps(path string) ([]RemovedFile, error) {
	dir, prefix := filepath.Dir(path), filepath.Base(path)+tmpInfix
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var removed []RemovedFile
	for _, e := range entries {
		digits, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.Type().IsRegular() || !allDigits(digits) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		var size int64
		if fi, err := e.Info(); err == nil {
			size = fi.Size()
		}
		if err := os.Remove(p); err != nil {
			return removed, err
		}
		removed = append(removed, RemovedFile{Path: p, Size: size})
	}
	return removed, nil
}

// RemovedFile is a file RemoveStaleTemps removed.
type RemovedFile struct {
	Path string
	Size int64
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// LockFile is the name of the file in a data directory that a running
// server holds locked.
const LockFile = "sluice.lock"

// DirLock is a data directory held for the life of a process (LockDir).
type DirLock struct {
	f *os.File
}

// LockDir makes dir if it is missing and takes an exclusive lock on its
// LockFile, so that two servers never share one directory's snapshot or
// Raft state. The lock is the kernel's (flock): it goes with the process,
// even on kill -9, and is never left stale. The file holds the pid of the
// process that holds it. When another process holds it, the error wraps
// ErrDirLocked and names the directory and that pid.
func LockDir(dir string) (*DirLock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, LockFile)
	// Opened read-only, so that no descriptor stays open for writing (a
	// read-only remount of the directory's file system is then possible).
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := flock(f); err != nil {
		f.Close()
		if errors.Is(err, errWouldBlock) {
			holder := "another process"
			if b, rerr := os.ReadFile(path); rerr == nil {
				if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
					holder = "pid " + strconv.Itoa(pid)
				}
			}
			return nil, fmt.Errorf("--dir %s is %w (%s holds %s); give each server its own --dir",
				dir, ErrDirLocked, holder, path)
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	// Written through another descriptor; the lock stays with f.
	os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
	return &DirLock{f: f}, nil
}

// Unlock lets the directory go.
func (l *DirLock) Unlock() error { return l.f.Close() }
