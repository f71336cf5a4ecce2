package policy

import (
	"crypto/sha256"
	"sync"
	"time"
)

// Watcher reloads the rules files when they change, and on demand (SIGHUP,
// RL.POLICY RELOAD). It compares what the files hold, read through any
// symlinks, not their paths' modification times: a Kubernetes ConfigMap
// update swaps a ..data symlink, which changes no visible path's mtime.
// A set with an error is refused whole and the rules in force stay; the
// watcher then waits for the files to change again (or a Reload) before it
// tries anew.
//
// Its methods are safe for concurrent use; loads run one at a time. The
// watcher reads no clock: callers pass the instant (unix ns) their status
// records, and the poller uses its ticker's time.
type Watcher struct {
	cfg WatchConfig

	mu     sync.Mutex // one load at a time; guards seen and status
	seen   [32]byte   // fingerprint of the files (or the read error) last tried
	tried  bool
	status WatchStatus

	run  sync.Mutex // guards stop and done
	stop chan struct{}
	done chan struct{}
}

// WatchConfig configures a Watcher.
type WatchConfig struct {
	Paths   []string // files and directories, as Load takes them
	Options Options
	// Apply installs a newly loaded set, typically Registry.SetRules, or a
	// proposal to the Raft log. An error keeps the rules in force and is
	// the load's status. Apply is called by one load at a time.
	Apply func(*RuleSet) error
}

// WatchStatus is what INFO policies shows.
type WatchStatus struct {
	Paths []string
	// Loaded says whether rules from the files are in force; Files, Hash
	// and the counts describe them.
	Loaded                   bool
	Files                    []string
	Hash                     [32]byte
	Domains, Rules, Policies int
	// Loads and Failures count the attempts that took effect and those
	// refused; LastAttempt and LastSuccess are their instants (unix ns, 0:
	// never) and LastError the last attempt's error ("" if it succeeded).
	Loads, Failures          int64
	LastAttempt, LastSuccess int64
	LastError                string
}

// NewWatcher returns a watcher that has loaded nothing yet.
func NewWatcher(cfg WatchConfig) *Watcher {
	return &Watcher{cfg: cfg, status: WatchStatus{Paths: append([]string(nil), cfg.Paths...)}}
}

// Reload reads the files now and applies them if they are valid, whether or
// not they changed. It returns the load's error; the rules in force stay
// on error.
func (w *Watcher) Reload(now int64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	files, err := readFiles(w.cfg.Paths)
	w.seen, w.tried = fingerprintOf(files, err), true
	return w.load(now)
}

// Poll reads the files and applies them if what they hold differs from
// what the last attempt read. It reports whether it tried a load, and the
// load's error.
func (w *Watcher) Poll(now int64) (tried bool, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	files, err := readFiles(w.cfg.Paths)
	fp := fingerprintOf(files, err)
	if w.tried && fp == w.seen {
		return false, nil
	}
	w.seen, w.tried = fp, true
	return true, w.load(now)
}

// fingerprintOf hashes a read's result: the files, or the error.
func fingerprintOf(files []File, err error) [32]byte {
	if err != nil {
		return sha256.Sum256([]byte("error: " + err.Error()))
	}
	return fingerprint(files)
}

// load reads a stable file set, parses and applies it, and records the
// outcome. It requires w.mu.
func (w *Watcher) load(now int64) error {
	w.status.LastAttempt = now
	rs, err := Load(w.cfg.Paths, w.cfg.Options)
	if err == nil && w.cfg.Apply != nil {
		err = w.cfg.Apply(rs)
	}
	if err != nil {
		w.status.Failures++
		w.status.LastError = err.Error()
		return err
	}
	w.status.Loads++
	w.status.LastSuccess, w.status.LastError = now, ""
	w.status.Loaded = true
	w.status.Files = rs.Files()
	w.status.Hash = rs.Hash()
	w.status.Domains, w.status.Rules, w.status.Policies = len(rs.Domains()), rs.Rules(), len(rs.Policies())
	return nil
}

// Status returns the watcher's status.
func (w *Watcher) Status() WatchStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.status
	st.Paths = append([]string(nil), st.Paths...)
	st.Files = append([]string(nil), st.Files...)
	return st
}

// Start polls every interval in a goroutine until Stop. It refuses to start
// twice.
func (w *Watcher) Start(interval time.Duration) error {
	w.run.Lock()
	defer w.run.Unlock()
	if w.stop != nil {
		return ErrWatcherRunning
	}
	w.stop, w.done = make(chan struct{}), make(chan struct{})
	go w.poll(interval, w.stop, w.done)
	return nil
}

func (w *Watcher) poll(interval time.Duration, stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case tick := <-t.C:
			w.Poll(tick.UnixNano())
		}
	}
}

// Stop stops the poller and waits until it has returned (a load under way
// finishes first). Stop without Start, or twice, does nothing.
func (w *Watcher) Stop() {
	w.run.Lock()
	defer w.run.Unlock()
	if w.stop == nil {
		return
	}
	close(w.stop)
	<-w.done
	w.stop, w.done = nil, nil
}
