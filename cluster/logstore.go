package cluster

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	wal "github.com/hashicorp/raft-wal"
	walfs "github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"
)

// LogStore names the store that keeps a node's Raft log and votes in
// Dir/raft.
type LogStore string

const (
	// LogStoreWAL is hashicorp/raft-wal: append-only segment files in
	// Dir/raft/wal, one fsync per append.
	LogStoreWAL LogStore = "wal"
	// LogStoreBolt is hashicorp/raft-boltdb: one bbolt file, Dir/raft/raft.db,
	// a transaction (two fsyncs) per append.
	LogStoreBolt LogStore = "bolt"
)

// ParseLogStore accepts "wal" and "bolt".
func ParseLogStore(s string) (LogStore, error) {
	switch LogStore(s) {
	case LogStoreWAL, LogStoreBolt:
		return LogStore(s), nil
	}
	return "", fmt.Errorf("cluster: unknown log store %q (wal or bolt)", s)
}

// logStore is an open log and stable store and what closes it.
type logStore interface {
	raft.LogStore
	raft.StableStore
	io.Closer
}

// openLogStore opens the log in dir (Dir/raft). A directory that holds a
// log already keeps the kind it holds, whatever want says: raft.db is
// bolt's, wal/ is raft-wal's; only a directory with neither gets want. It
// returns the kind it opened. fsync false skips the fsync of appends.
func openLogStore(dir string, want LogStore, fsync bool) (logStore, LogStore, error) {
	kind, err := logStoreIn(dir, want)
	if err != nil {
		return nil, "", err
	}
	switch kind {
	case LogStoreBolt:
		s, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db"), NoSync: !fsync})
		if err != nil {
			return nil, "", fmt.Errorf("cluster: opening the log %s: %w", filepath.Join(dir, "raft.db"), err)
		}
		return s, kind, nil
	default:
		path := filepath.Join(dir, "wal")
		if err := os.MkdirAll(path, 0o755); err != nil {
			return nil, "", err
		}
		var vfs types.VFS = zeroAheadFS{walfs.New()}
		if !fsync {
			vfs = noSyncFS{walfs.New()}
		}
		s, err := openWAL(path, vfs)
		if err != nil {
			return nil, "", fmt.Errorf("cluster: opening the log %s: %w", path, err)
		}
		return s, kind, nil
	}
}

// openWAL opens the raft-wal log in path, an existing directory, on vfs.
func openWAL(path string, vfs types.VFS) (walStore, error) {
	logger := hclog.New(&hclog.LoggerOptions{Name: "wal", Level: hclog.Warn, Output: os.Stderr})
	meta := &metadb.BoltMetaDB{}
	w, err := wal.Open(path, wal.WithSegmentFiler(segment.NewFiler(path, vfs)), wal.WithMetaStore(meta), wal.WithLogger(logger))
	if err != nil {
		return walStore{}, errors.Join(err, meta.Close())
	}
	return walStore{w, meta}, nil
}

// walStore is a raft-wal log and its meta database. raft-wal's Close
// (v0.4.0) leaves the database open, and with it the file lock that makes
// a later open of the same directory in the same process wait forever;
// walStore's Close closes both.
type walStore struct {
	*wal.WAL
	meta *metadb.BoltMetaDB
}

func (s walStore) Close() error {
	return errors.Join(s.WAL.Close(), s.meta.Close())
}

// logStoreIn is the kind of log dir holds, or want if it holds none.
func logStoreIn(dir string, want LogStore) (LogStore, error) {
	bolt, err := exists(filepath.Join(dir, "raft.db"))
	if err != nil {
		return "", err
	}
	w, err := exists(filepath.Join(dir, "wal"))
	if err != nil {
		return "", err
	}
	switch {
	case bolt && w:
		return "", fmt.Errorf("cluster: %s holds both a bolt log (raft.db) and a raft-wal log (wal/); remove the one not in use", dir)
	case bolt:
		return LogStoreBolt, nil
	case w:
		return LogStoreWAL, nil
	case want == "":
		return LogStoreWAL, nil
	}
	return want, nil
}

func exists(path string) (bool, error) {
	_, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// noSyncFS is raft-wal's file system with the fsync of writable files
// skipped (--raft-fsync no): a crash of the machine may lose appends, a
// crash of the process does not.
type noSyncFS struct{ types.VFS }

func (f noSyncFS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	w, err := f.VFS.Create(dir, name, size)
	if err != nil {
		return nil, err
	}
	return noSyncFile{w}, nil
}

func (f noSyncFS) OpenWriter(dir, name string) (types.WritableFile, error) {
	w, err := f.VFS.OpenWriter(dir, name)
	if err != nil {
		return nil, err
	}
	return noSyncFile{w}, nil
}

type noSyncFile struct{ types.WritableFile }

func (noSyncFile) Sync() error { return nil }

// zeroAheadFS is raft-wal's file system for a log whose appends are
// fsynced. raft-wal preallocates a segment, which on ext4 and XFS leaves
// its blocks unwritten: each append then converts the blocks it lands in,
// and each sync commits the file system's journal as well as writing the
// data. The files of zeroAheadFS write zeros ahead of the appends,
// zeroChunk at a time, so that most syncs find their blocks written, need
// no journal commit, and flush only the data (fdatasync where there is
// one); the journal is committed once a chunk. PostgreSQL zero-fills its
// WAL segments for the same reason.
type zeroAheadFS struct{ types.VFS }

// zeroChunk is how far ahead of the appends a file's zeros reach after a
// chunk is written. The sync that follows flushes the chunk too and is
// the slower for it: at 2 MiB that is one sync in about 170 for entries
// of 12 KiB (a P16 group's at full load), rarer than a p99 sees.
const zeroChunk = 2 << 20

// zeros is what zeroAheadFile writes ahead.
var zeros [128 << 10]byte

func (f zeroAheadFS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	w, err := f.VFS.Create(dir, name, size)
	if err != nil {
		return nil, err
	}
	return newZeroAheadFile(w, int64(size)), nil
}

func (f zeroAheadFS) OpenWriter(dir, name string) (types.WritableFile, error) {
	w, err := f.VFS.OpenWriter(dir, name)
	if err != nil {
		return nil, err
	}
	var size int64
	if st, ok := w.(interface{ Stat() (os.FileInfo, error) }); ok {
		if fi, err := st.Stat(); err == nil {
			size = fi.Size()
		}
	}
	return newZeroAheadFile(w, size), nil
}

// zeroAheadFile is a segment being written (raft-wal writes and syncs it
// from one goroutine at a time, under its write lock). It never writes
// past size, the size the segment was preallocated to, so it changes no
// file's size; and it writes zeros only past the end of every write so
// far, where raft-wal has written nothing it will read.
type zeroAheadFile struct {
	types.WritableFile
	syncData func() error // flushes the data and what reading it needs; nil: Sync's
	size     int64        // zeros stop here
	frontier int64        // every byte before it has been written, with data or zeros
	synced   bool         // a Sync of the wrapped file has succeeded
}

func newZeroAheadFile(w types.WritableFile, size int64) *zeroAheadFile {
	return &zeroAheadFile{WritableFile: w, syncData: dataSyncer(w), size: size}
}

// WriteAt writes p at off, first writing zeros over the zeroChunk bytes
// after p if p reaches past the frontier.
func (f *zeroAheadFile) WriteAt(p []byte, off int64) (int, error) {
	if end := off + int64(len(p)); end > f.frontier && end < f.size {
		f.zeroFrom(end)
	}
	return f.WritableFile.WriteAt(p, off)
}

// zeroFrom writes zeros from from, past the frontier, up to zeroChunk
// bytes on, within size. If a write fails it stops writing zeros for
// good: the zeros only make syncs cheaper, and the appends go on as they
// would without them.
func (f *zeroAheadFile) zeroFrom(from int64) {
	to := min(f.size, from+zeroChunk)
	for at := from; at < to; {
		n := min(to-at, int64(len(zeros)))
		if _, err := f.WritableFile.WriteAt(zeros[:n], at); err != nil {
			f.size = 0
			return
		}
		at += n
	}
	f.frontier = to
}

// Sync makes the file's writes durable. The first Sync is the wrapped
// file's (raft-wal's fsync of a new segment also syncs its directory,
// once); later ones flush the data and only the metadata needed to read
// it back (dataSyncer), as the file's size never changes.
func (f *zeroAheadFile) Sync() error {
	if !f.synced || f.syncData == nil {
		err := f.WritableFile.Sync()
		f.synced = err == nil
		return err
	}
	return f.syncData()
}
