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
		var vfs types.VFS = walfs.New()
		if !fsync {
			vfs = noSyncFS{vfs}
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
