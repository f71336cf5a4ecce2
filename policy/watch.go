package policy

import (
	"crypto/sha256"
	"sync"
	"sync/atomic"
	"time"
)

// Watcher reloads the rules files when they change, and on demand (SIGHUP,
// RL.POLICY RELOAD). It compares what the files hold, read through any
// symlinks, not their paths' modification times: a Kubernetes ConfigMap
// update swaps a ..data symlink, which changes no visible path's mtime.
// A set with an error is refused whole and the rules in force stay; the
// watcher then waits for the files to change again (or a Reload) before it
// tries anew. A set that defines no domain does not replace one that
// defines some unless the reload is forced (ReloadWithin): a file set
// emptied by mistake would otherwise admit every request of every domain.
//
// Its methods are safe for concurrent use; loads run one at a time. No
// lock that Status waits for is held while files are read: a load builds
// its status aside and swaps it in, and Status reads the last one with an
// atomic load. ReloadWithin bounds how long its caller waits. The watcher
// reads no clock: callers pass the instant (unix ns) their status records,
// and the poller uses its ticker's time.
type Watcher struct {
	cfg WatchConfig

	// sem is held by the one load under way (a channel, so that a caller
	// can bound its wait for it); it guards seen and tried.
	sem    chan struct{}
	seen   [32]byte // fingerprint of the files (or the read error) last tried
	tried  bool
	status atomic.Pointer[WatchStatus] // the last load's; never changed once stored

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
	w := &Watcher{cfg: cfg, sem: make(chan struct{}, 1)}
	w.status.Store(&WatchStatus{Paths: append([]string(nil), cfg.Paths...)})
	return w
}

// Reload reads the files now and applies them if they are valid, whether or
// not they changed, waiting for a load under way to end first. It returns
// the load's error; the rules in force stay on error. It does not force:
// a set without domains does not replace one with domains.
func (w *Watcher) Reload(now int64) error {
	w.sem <- struct{}{}
	defer func() { <-w.sem }()
	return w.reload(now, false)
}

// ReloadWithin is Reload for a caller that must not wait long (a command
// on an event loop), and force says whether a set that defines no domain
// may replace one that defines some. It returns within about wait:
// ErrLoadUnderWay if another load held on for all of it, ErrLoadSlow if
// its own load has not ended by then; that load goes on, and Status gives
// its outcome once it ends.
func (w *Watcher) ReloadWithin(now int64, force bool, wait time.Duration) error {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case w.sem <- struct{}{}:
	case <-t.C:
		return ErrLoadUnderWay
	}
	done := make(chan error, 1)
	go func() {
		defer func() { <-w.sem }()
		done <- w.reload(now, force)
	}()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return ErrLoadSlow
	}
}

// reload reads the files and loads them. It requires w.sem.
func (w *Watcher) reload(now int64, force bool) error {
	files, err := readFiles(w.cfg.Paths, w.cfg.Options.maxBytes())
	w.seen, w.tried = fingerprintOf(files, err), true
	return w.load(now, force)
}

// Poll reads the files and applies them if what they hold differs from
// what the last attempt read. It reports whether it tried a load, and the
// load's error. It never forces.
func (w *Watcher) Poll(now int64) (tried bool, err error) {
	w.sem <- struct{}{}
	defer func() { <-w.sem }()
	files, err := readFiles(w.cfg.Paths, w.cfg.Options.maxBytes())
	fp := fingerprintOf(files, err)
	if w.tried && fp == w.seen {
		return false, nil
	}
	w.seen, w.tried = fp, true
	return true, w.load(now, false)
}

// fingerprintOf hashes a read's result: the files, or the error.
func fingerprintOf(files []File, err error) [32]byte {
	if err != nil {
		return sha256.Sum256([]byte("error: " + err.Error()))
	}
	return fingerprint(files)
}

// load reads a stable file set, parses and applies it, and stores the
// outcome's status. Unless force, a set that defines no domain is refused
// while the rules in force define some. It requires w.sem.
func (w *Watcher) load(now int64, force bool) error {
	prev := w.status.Load()
	st := *prev
	st.LastAttempt = now
	rs, err := Load(w.cfg.Paths, w.cfg.Options)
	if err == nil && !force && prev.Loaded && prev.Domains > 0 && len(rs.Domains()) == 0 {
		err = errDropsAllDomains(prev.Domains)
	}
	if err == nil && w.cfg.Apply != nil {
		err = w.cfg.Apply(rs)
	}
	if err != nil {
		st.Failures++
		st.LastError = err.Error()
		w.status.Store(&st)
		return err
	}
	st.Loads++
	st.LastSuccess, st.LastError = now, ""
	st.Loaded = true
	st.Files = rs.Files()
	st.Hash = rs.Hash()
	st.Domains, st.Rules, st.Policies = len(rs.Domains()), rs.Rules(), len(rs.Policies())
	w.status.Store(&st)
	return nil
}

// Status returns the status of the last load, without waiting for one
// under way.
func (w *Watcher) Status() WatchStatus {
	st := *w.status.Load()
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
