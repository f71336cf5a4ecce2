package store

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Snapshot files, and the Saver behind SAVE, BGSAVE, LASTSAVE and the
// periodic save.

// SaveFile writes the store's snapshot to path without ever leaving a
// partial file there: it writes a temporary file in the same directory,
// syncs it, renames it over path and syncs the directory.
func (st *Store) SaveFile(path string) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op after the rename
	w := bufio.NewWriterSize(f, 1<<20)
	err = st.Snapshot(w)
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
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// LoadFile restores the store from the snapshot at path. A missing file is
// no error (loaded is false): the store starts empty. A file that cannot be
// read whole is an error and the store is left as it was.
func (st *Store) LoadFile(path string) (loaded bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	if err := st.Restore(f); err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	return true, nil
}

// ErrSaveInProgress is the reply to SAVE or BGSAVE while a background save
// runs, in Redis's words.
var ErrSaveInProgress = errors.New("ERR Background save already in progress")

// Saver writes a store's snapshot file on demand, in the background and
// periodically. It reads the wall clock only to stamp LASTSAVE.
type Saver struct {
	st   *Store
	path string

	mu      sync.Mutex
	running bool
	done    chan struct{} // closed when the running background save ends

	lastSave atomic.Int64 // unix seconds of the last successful save (start-up before any)
	lastOK   atomic.Bool
	saves    atomic.Int64
	lastNS   atomic.Int64 // how long the last save took
}

// NewSaver returns a saver of st to path. LASTSAVE reports the time of its
// creation until a save succeeds, as Redis reports its start-up time.
func NewSaver(st *Store, path string) *Saver {
	s := &Saver{st: st, path: path}
	s.lastSave.Store(time.Now().Unix())
	s.lastOK.Store(true)
	return s
}

// Path returns the snapshot file's path.
func (s *Saver) Path() string { return s.path }

// Save writes the snapshot now, in the caller's goroutine. It is refused
// while a background save runs.
func (s *Saver) Save() error {
	s.mu.Lock()
	if s.running {
		s.mu.Unlock()
		return ErrSaveInProgress
	}
	s.running = true
	s.mu.Unlock()
	err := s.save()
	s.mu.Lock()
	s.running = false
	s.mu.Unlock()
	return err
}

// BackgroundSave starts writing the snapshot in its own goroutine. It is
// refused while another save runs.
func (s *Saver) BackgroundSave() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running {
		return ErrSaveInProgress
	}
	s.running = true
	s.done = make(chan struct{})
	go func(done chan struct{}) {
		s.save()
		s.mu.Lock()
		s.running = false
		s.mu.Unlock()
		close(done)
	}(s.done)
	return nil
}

// Wait waits for a running background save, if any.
func (s *Saver) Wait() {
	s.mu.Lock()
	done, running := s.done, s.running
	s.mu.Unlock()
	if running && done != nil {
		<-done
	}
}

func (s *Saver) save() error {
	start := time.Now()
	err := s.st.SaveFile(s.path)
	s.lastNS.Store(int64(time.Since(start)))
	s.lastOK.Store(err == nil)
	if err == nil {
		s.lastSave.Store(time.Now().Unix())
		s.saves.Add(1)
	}
	return err
}

// LastSave returns the unix time of the last successful save.
func (s *Saver) LastSave() int64 { return s.lastSave.Load() }

// Run saves in the background every period until stop is closed; a save
// still running when the next is due is let be.
func (s *Saver) Run(period time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			s.BackgroundSave()
		}
	}
}

// Info returns INFO persistence fields, in Redis's names where it has them.
func (s *Saver) Info() [][2]string {
	s.mu.Lock()
	running := s.running
	s.mu.Unlock()
	status := "ok"
	if !s.lastOK.Load() {
		status = "err"
	}
	b := func(v bool) string {
		if v {
			return "1"
		}
		return "0"
	}
	return [][2]string{
		{"rdb_bgsave_in_progress", b(running)},
		{"rdb_last_save_time", strconv.FormatInt(s.lastSave.Load(), 10)},
		{"rdb_last_bgsave_status", status},
		{"rdb_last_save_time_ms", strconv.FormatInt(s.lastNS.Load()/1e6, 10)},
		{"rdb_saves", strconv.FormatInt(s.saves.Load(), 10)},
		{"snapshot_file", s.path},
	}
}
