package policy

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Rules files that cannot be read as rules: devices, FIFOs, endless and
// oversized files, dangling symlinks, and a set that would drop every
// domain. Each is refused whole, without holding anything a command waits
// for, and the rules in force stay.

// allocated runs f and returns the bytes the process allocated meanwhile.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// within runs f in a goroutine and fails the test if it has not returned
// in 10 s (a file that blocks its reader).
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s still blocked after 10 s", what)
	}
}

// swapLink points path at target the way `ln -s target tmp && mv -T tmp
// path` does: one rename over whatever path was.
func swapLink(t *testing.T, target, path string) {
	t.Helper()
	tmp := path + ".link"
	if err := os.Symlink(target, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestLoadRefusesADeviceBehindASymlink(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.yaml"), rulesV1)
	swapLink(t, "/dev/zero", filepath.Join(dir, "rules.yaml"))
	var err error
	n := allocated(func() { within(t, "Load of /dev/zero", func() { _, err = Load([]string{dir}, Options{}) }) })
	want := "rules file " + filepath.Join(dir, "rules.yaml") + " is not a regular file (a character device)"
	if !errors.Is(err, ErrNotRegular) || err.Error() != want {
		t.Fatalf("Load of a directory with a link to /dev/zero: %v; want %s", err, want)
	}
	if n > 1<<20 {
		t.Fatalf("Load of a link to /dev/zero allocated %d bytes; want it refused before reading", n)
	}
	// A path given directly is held to the same rule.
	if _, err := Load([]string{filepath.Join(dir, "rules.yaml")}, Options{}); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("Load of the link itself: %v; want ErrNotRegular", err)
	}
}

// TestLoadCapsAnEndlessRegularFile reads /proc/self/pagemap, which stat
// calls a regular file of size 0 but which reads on for hundreds of
// gigabytes: only the byte cap stops it.
func TestLoadCapsAnEndlessRegularFile(t *testing.T) {
	st, err := os.Stat("/proc/self/pagemap")
	if err != nil || !st.Mode().IsRegular() {
		t.Skipf("no /proc/self/pagemap to read: %v", err)
	}
	dir := t.TempDir()
	swapLink(t, "/proc/self/pagemap", filepath.Join(dir, "rules.yaml"))
	const limit = 1 << 20
	n := allocated(func() {
		within(t, "Load of /proc/self/pagemap", func() { _, err = Load([]string{dir}, Options{MaxBytes: limit}) })
	})
	want := "rules files hold more than 1048576 bytes (rules-max-bytes), at " + filepath.Join(dir, "rules.yaml")
	if !errors.Is(err, ErrRulesTooLarge) || err.Error() != want {
		t.Fatalf("Load of an endless file: %v; want %s", err, want)
	}
	if n > 16*limit { // a buffer grown by doubling to the cap allocates about 8 times it in all
		t.Fatalf("Load of an endless file allocated %d bytes; want at most a few times the cap (%d)", n, limit)
	}
}

func TestLoadRefusesFilesOverTheCapBeforeReadingThem(t *testing.T) {
	const limit = 1 << 20
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.yaml"), rulesV1)
	big := filepath.Join(dir, "big.yaml")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	// 64 MiB of holes: nothing on disk, everything for a reader.
	if err := f.Truncate(64 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	n := allocated(func() { _, err = Load([]string{dir}, Options{MaxBytes: limit}) })
	if !errors.Is(err, ErrRulesTooLarge) || !strings.HasSuffix(err.Error(), "at "+big) {
		t.Fatalf("Load with a 64 MiB file: %v; want ErrRulesTooLarge at %s", err, big)
	}
	if n > limit {
		t.Fatalf("Load allocated %d bytes; want the 64 MiB file refused by its size, unread", n)
	}

	// The cap is on the set: files that fit it one by one but not together
	// are refused; a set of exactly the cap is taken.
	os.Remove(big)
	pad := func(name string, size int) {
		head := "domain: " + name + "\n"
		write(t, filepath.Join(dir, name+".yaml"), head+"#"+strings.Repeat("x", size-len(head)-2)+"\n")
	}
	os.Remove(filepath.Join(dir, "a.yaml"))
	pad("b", limit/2)
	pad("c", limit/2)
	if rs, err := Load([]string{dir}, Options{MaxBytes: limit}); err != nil || len(rs.Domains()) != 2 {
		t.Fatalf("a set of exactly the cap: %v, %v", rs, err)
	}
	pad("d", 1+len("domain: d\n")+2)
	if _, err := Load([]string{dir}, Options{MaxBytes: limit}); !errors.Is(err, ErrRulesTooLarge) ||
		!strings.HasSuffix(err.Error(), "at "+filepath.Join(dir, "d.yaml")) {
		t.Fatalf("a set one file past the cap: %v; want ErrRulesTooLarge at d.yaml", err)
	}
}

func TestWatcherRefusesAFIFOWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.yaml"), rulesV1)
	w, r := newWatched(t, dir)
	if err := w.Reload(1); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "x.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	var err error
	within(t, "Poll with a FIFO in the directory", func() { _, err = w.Poll(2) })
	if want := "rules file " + fifo + " is not a regular file (a named pipe)"; !errors.Is(err, ErrNotRegular) || err.Error() != want {
		t.Fatalf("Poll: %v; want %s", err, want)
	}
	within(t, "Reload with a FIFO in the directory", func() { err = w.Reload(3) })
	if !errors.Is(err, ErrNotRegular) || rpuOf(t, r) != 1 {
		t.Fatalf("Reload: %v, rules in force %d; want ErrNotRegular and the old rules", err, rpuOf(t, r))
	}
	within(t, "Load of the FIFO itself", func() { _, err = Load([]string{fifo}, Options{}) })
	if !errors.Is(err, ErrNotRegular) {
		t.Fatalf("Load of the FIFO: %v", err)
	}
	if st := w.Status(); st.Failures != 2 || !strings.Contains(st.LastError, "not a regular file") || st.Domains != 1 {
		t.Fatalf("status = %+v", st)
	}
}

// TestWatcherStatusDoesNotWaitForALoad: a load under way (here an Apply
// that does not return, standing for files that are slow to read) holds
// nothing that Status or a bounded reload waits for.
func TestWatcherStatusDoesNotWaitForALoad(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.yaml"), rulesV1)
	r := NewRegistry()
	entered, release := make(chan struct{}, 1), make(chan struct{})
	var hold atomic.Bool
	w := NewWatcher(WatchConfig{Paths: []string{dir}, Apply: func(rs *RuleSet) error {
		if hold.Load() {
			entered <- struct{}{}
			<-release
		}
		r.SetRules(rs)
		return nil
	}})
	if err := w.Reload(1); err != nil {
		t.Fatal(err)
	}
	hold.Store(true)
	write(t, filepath.Join(dir, "a.yaml"), rulesV2)
	loaded := make(chan error, 1)
	go func() { loaded <- w.Reload(2) }()
	<-entered
	var st WatchStatus
	within(t, "Status during a load", func() { st = w.Status() })
	if st.Loads != 1 || st.Domains != 1 {
		t.Fatalf("status during a load = %+v; want the last load's", st)
	}
	var err error
	within(t, "ReloadWithin during a load", func() { err = w.ReloadWithin(3, false, 20*time.Millisecond) })
	if err != ErrLoadUnderWay {
		t.Fatalf("ReloadWithin during a load: %v; want ErrLoadUnderWay", err)
	}
	release <- struct{}{}
	if err := <-loaded; err != nil || rpuOf(t, r) != 2 {
		t.Fatalf("the load under way: %v", err)
	}

	// A load that outlasts ReloadWithin's wait goes on, and its outcome
	// reaches Status.
	write(t, filepath.Join(dir, "a.yaml"), rulesV1)
	within(t, "ReloadWithin of a slow load", func() { err = w.ReloadWithin(4, false, 20*time.Millisecond) })
	if err != ErrLoadSlow {
		t.Fatalf("ReloadWithin of a slow load: %v; want ErrLoadSlow", err)
	}
	<-entered
	release <- struct{}{}
	waitFor(t, func() bool { return w.Status().Loads == 3 })
	if rpuOf(t, r) != 1 || w.Status().LastSuccess != 4 {
		t.Fatalf("the slow load: rules %d, status %+v", rpuOf(t, r), w.Status())
	}
	hold.Store(false)
	if err := w.ReloadWithin(5, false, 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestWatcherRefusesADanglingSymlink(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "v1"), rulesV1)
	link := filepath.Join(dir, "rules", "api.yaml")
	if err := os.Mkdir(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	swapLink(t, filepath.Join(dir, "v1"), link)
	w, r := newWatched(t, filepath.Dir(link))
	if err := w.Reload(1); err != nil {
		t.Fatal(err)
	}
	swapLink(t, filepath.Join(dir, "missing"), link)
	tried, err := w.Poll(2)
	want := "rules file " + link + " cannot be read: no such file or directory"
	if !tried || !errors.Is(err, os.ErrNotExist) || err.Error() != want {
		t.Fatalf("Poll of a dangling symlink: %v, %v; want %s", tried, err, want)
	}
	if err := w.Reload(3); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Reload of a dangling symlink: %v", err)
	}
	if r.Rules() == nil || len(r.Rules().Domains()) != 1 || rpuOf(t, r) != 1 {
		t.Fatalf("the rules in force did not stay")
	}
	if st := w.Status(); st.Failures != 2 || st.Domains != 1 || st.Rules != 1 || st.LastError != want {
		t.Fatalf("status = %+v", st)
	}
}

func TestWatcherRefusesToDropEveryDomainUnlessForced(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.yaml")
	write(t, path, rulesV1)
	w, r := newWatched(t, dir)
	if err := w.Reload(1); err != nil {
		t.Fatal(err)
	}
	want := "the rules files define no domain, which would drop all 1 domains in force: refused " +
		"(RL.POLICY RELOAD FORCE takes such a set)"
	// A file that keeps only policies, then an empty directory.
	write(t, path, "policies:\n  - name: p\n    algorithm: fixed\n    limit: 2\n    window: 1d\n")
	if tried, err := w.Poll(2); !tried || !errors.Is(err, ErrDropsAllDomains) || err.Error() != want {
		t.Fatalf("Poll of a set without domains: %v, %v; want %s", tried, err, want)
	}
	os.Remove(path)
	if tried, err := w.Poll(3); !tried || !errors.Is(err, ErrDropsAllDomains) {
		t.Fatalf("Poll of an empty directory: %v, %v", tried, err)
	}
	if err := w.Reload(4); !errors.Is(err, ErrDropsAllDomains) {
		t.Fatalf("Reload of an empty directory: %v", err)
	}
	if err := w.ReloadWithin(5, false, 10*time.Second); !errors.Is(err, ErrDropsAllDomains) || rpuOf(t, r) != 1 {
		t.Fatalf("ReloadWithin of an empty directory: %v", err)
	}
	if err := w.ReloadWithin(6, true, 10*time.Second); err != nil {
		t.Fatalf("a forced reload of an empty directory: %v", err)
	}
	if st := w.Status(); len(r.Rules().Domains()) != 0 || st.Domains != 0 || st.LastError != "" || st.Loads != 2 {
		t.Fatalf("after the forced reload: domains %v, status %+v", r.Rules().Domains(), st)
	}
	// From no domain, neither an empty set nor a new domain needs force.
	if err := w.Reload(7); err != nil {
		t.Fatal(err)
	}
	write(t, path, rulesV2)
	if tried, err := w.Poll(8); !tried || err != nil || rpuOf(t, r) != 2 {
		t.Fatalf("a domain added after the forced reload: %v %v", tried, err)
	}
}
