package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// LockFile is the name of the file in a data directory that a running
// server holds locked.
const LockFile = "sluice.lock"

// ErrDirLocked is LockDir's error when another process holds the directory.
var ErrDirLocked = errors.New("in use by another sluice process")

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
