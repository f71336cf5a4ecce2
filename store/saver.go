package store

import (
	"sync"
	"sync/atomic"
	"time"
)

// The Saver behind SAVE, BGSAVE, LASTSAVE, the periodic save and the save
// at shutdown.

// Saver writes a store's snapshot file on demand, in the background and
// periodically. It reads the wall clock only to stamp LASTSAVE.
type Saver struct {
	st   *Store
	path string

	mu      sync.Mutex
	running bool
	done    chan struct{} // closed when the running save ends

	lastSave atomic.Int64 // unix seconds of the last successful save (start-up before any)
	lastOK   atomic.Bool
	saves    atomic.Int64
	lastNS   atomic.Int64 // how long the last save took
	bg       atomic.Bool  // the running save is a background one
	periodic atomic.Int32 // Runs running: while one is, a failed background save refuses changes
	started  atomic.Int64 // unix ns when the running (or last) save began
}

// saveRetry is how soon a failed periodic save is tried again, as Redis's
// CONFIG_BGSAVE_RETRY_DELAY.
const saveRetry = 5 * time.Second

// NewSaver returns a saver of st to path. LASTSAVE reports the time of its
// creation until a save succeeds, as Redis reports its start-up time.
func NewSaver(st *Store, path string) *Saver {
	s := &Saver{st: st, path: path}
	st.saved.Store(st.Stats().Changes) // what was loaded is what the file holds
	s.lastSave.Store(time.Now().Unix())
	s.lastOK.Store(true)
	return s
}

// Path returns the snapshot file's path.
func (s *Saver) Path() string { return s.path }

// begin marks a save as running and returns the channel to close when it
// ends; ok is false if another save runs.
func (s *Saver) begin(background bool) (done chan struct{}, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running {
		return nil, false
	}
	s.running = true
	s.started.Store(time.Now().UnixNano())
	s.done = make(chan struct{})
	s.bg.Store(background)
	return s.done, true
}

func (s *Saver) end(done chan struct{}) {
	s.mu.Lock()
	s.running = false
	s.bg.Store(false)
	s.mu.Unlock()
	close(done)
}

// Save writes the snapshot now, in the caller's goroutine. It is refused
// while a background save runs.
func (s *Saver) Save() error {
	done, ok := s.begin(false)
	if !ok {
		return ErrSaveInProgress
	}
	defer s.end(done)
	err := s.record(s.mark(), s.st.saveFile(s.path))
	if err == nil {
		s.st.saveRefuses(false)
	}
	return err
}

// BackgroundSave starts writing the snapshot in its own goroutine. It is
// refused while another save runs.
func (s *Saver) BackgroundSave() error {
	done, ok := s.begin(true)
	if !ok {
		return ErrSaveInProgress
	}
	go func() {
		defer s.end(done)
		err := s.record(s.mark(), s.st.saveFile(s.path))
		s.st.saveRefuses(err != nil && s.periodic.Load() > 0)
	}()
	return nil
}

// SaveAndHold waits for a save in progress, then holds the store (nothing
// changes it: decisions, deletions and the sweep wait) and writes a
// point-in-time snapshot. On success it returns the entries written and
// keeps holding the store for good, with every later save refused: the
// process is expected to exit, and no decision taken after the snapshot
// can be lost. On error it lets go, and the store serves on.
func (s *Saver) SaveAndHold() (entries uint64, err error) {
	var done chan struct{}
	for {
		var ok bool
		if done, ok = s.begin(false); ok {
			break
		}
		s.Wait()
	}
	start := s.mark() // before hold: Stats takes the shards' locks
	release := s.st.hold()
	entries, err = s.st.saveFileHeld(s.path)
	if s.record(start, err) != nil {
		release()
		s.end(done)
		return 0, err
	}
	return entries, nil
}

// Wait waits for a running save, if any.
func (s *Saver) Wait() {
	s.mu.Lock()
	done, running := s.done, s.running
	s.mu.Unlock()
	if running {
		<-done
	}
}

// record stamps the outcome of a save that started at start and returns
// its error.
func (s *Saver) record(start saveStart, err error) error {
	s.lastNS.Store(int64(time.Since(start.at)))
	s.lastOK.Store(err == nil)
	if err == nil {
		s.lastSave.Store(time.Now().Unix())
		s.saves.Add(1)
		s.st.saved.Store(start.changes)
	}
	return err
}

// saveStart is when a save began and the store's changes then: a change
// made while the save runs counts as unsaved.
type saveStart struct {
	at      time.Time
	changes int64
}

func (s *Saver) mark() saveStart { return saveStart{changes: s.st.Stats().Changes, at: time.Now()} }

// LastSave returns the unix time of the last successful save.
func (s *Saver) LastSave() int64 { return s.lastSave.Load() }

// Run saves in the background every period until stop is closed; a save
// still running when the next is due is let be. While it runs, a failed
// background save refuses every change (Store.SetStopWritesOnSaveError)
// and is tried again every saveRetry until one works.
func (s *Saver) Run(period time.Duration, stop <-chan struct{}) {
	s.periodic.Add(1)
	defer func() {
		if s.periodic.Add(-1) == 0 {
			s.st.saveRefuses(false)
		}
	}()
	t := time.NewTicker(period)
	defer t.Stop()
	retry := time.NewTicker(min(saveRetry, period))
	defer retry.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			s.BackgroundSave()
		case <-retry.C:
			if !s.lastOK.Load() {
				s.BackgroundSave()
			}
		}
	}
}

// SaverStats are what INFO persistence reports of a Saver.
type SaverStats struct {
	Running  bool          // a background save is running
	LastSave int64         // unix seconds of the last successful save
	LastOK   bool          // the last save worked
	LastTook time.Duration // how long the last save took
	Saves    int64         // successful saves
	Path     string        // the snapshot file
}

// Stats returns the saver's figures.
func (s *Saver) Stats() SaverStats {
	return SaverStats{
		Running:  s.bg.Load(),
		LastSave: s.lastSave.Load(),
		LastOK:   s.lastOK.Load(),
		LastTook: time.Duration(s.lastNS.Load()),
		Saves:    s.saves.Load(),
		Path:     s.path,
	}
}
