package policy

import (
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

const (
	rulesV1 = "domain: api\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n"
	rulesV2 = "domain: api\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 2}\n"
	// rulesBroken has a bad unit on line 4, column 24.
	rulesBroken = "domain: api\ndescriptors:\n  - key: k\n    rate_limit: {unit: eon, requests_per_unit: 3}\n"
)

// rpuOf returns the requests_per_unit the registry's rules give k.
func rpuOf(t *testing.T, r *Registry) uint32 {
	t.Helper()
	var p Plan
	if err := r.Rules().Plan(&p, []byte("api"), 1, []Descriptor{desc("k", "x")}); err != nil {
		t.Fatal(err)
	}
	return p.Items[0].Envoy.RequestsPerUnit
}

func newWatched(t *testing.T, paths ...string) (*Watcher, *Registry) {
	t.Helper()
	r := NewRegistry()
	w := NewWatcher(WatchConfig{Paths: paths, Apply: func(rs *RuleSet) error { r.SetRules(rs); return nil }})
	return w, r
}

func TestWatcherFollowsAConfigMapSymlinkSwap(t *testing.T) {
	dir := t.TempDir()
	configMap(t, dir, "..2026_01_01_a", map[string]string{"rules.yaml": rulesV1})
	w, r := newWatched(t, dir)
	if tried, err := w.Poll(1); !tried || err != nil {
		t.Fatalf("first poll: %v %v", tried, err)
	}
	if rpuOf(t, r) != 1 {
		t.Fatalf("v1 not loaded")
	}
	if tried, _ := w.Poll(2); tried {
		t.Fatalf("a poll without change reloaded")
	}
	// The kubelet writes the new version beside the old one and swaps
	// ..data: no visible path changes, the content behind it does.
	link := filepath.Join(dir, "rules.yaml")
	before, _ := os.Lstat(link)
	configMap(t, dir, "..2026_01_01_b", map[string]string{"rules.yaml": rulesV2})
	after, _ := os.Lstat(link)
	if !before.ModTime().Equal(after.ModTime()) {
		t.Fatalf("the visible symlink changed; the test would not simulate a ConfigMap update")
	}
	if tried, err := w.Poll(3); !tried || err != nil {
		t.Fatalf("poll after the swap: %v %v", tried, err)
	}
	if rpuOf(t, r) != 2 {
		t.Fatalf("v2 not loaded after the ..data swap")
	}
	st := w.Status()
	if st.Loads != 2 || st.Failures != 0 || st.LastSuccess != 3 || !st.Loaded || st.Domains != 1 || st.Rules != 1 ||
		len(st.Files) != 1 || st.Hash != r.Rules().Hash() {
		t.Fatalf("status = %+v", st)
	}
}

func TestWatcherRefusesABrokenEditAndKeepsTheOldRules(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.yaml")
	write(t, path, rulesV1)
	w, r := newWatched(t, path)
	if err := w.Reload(10); err != nil {
		t.Fatal(err)
	}
	write(t, path, rulesBroken)
	tried, err := w.Poll(20)
	want := path + ":4:24: invalid rate limit unit 'eon'"
	if !tried || err == nil || err.Error() != want {
		t.Fatalf("broken edit: %v, %v; want %s", tried, err, want)
	}
	if rpuOf(t, r) != 1 {
		t.Fatalf("the old rules did not stay")
	}
	st := w.Status()
	if st.Failures != 1 || st.LastError != want || st.LastAttempt != 20 || st.LastSuccess != 10 || !st.Loaded {
		t.Fatalf("status = %+v", st)
	}
	// The same broken content is not tried again on every poll…
	if tried, _ := w.Poll(30); tried {
		t.Fatalf("retried unchanged broken files")
	}
	// …but a forced reload tries, and the fixed file takes effect.
	if err := w.Reload(40); err == nil {
		t.Fatalf("forced reload of a broken file succeeded")
	}
	write(t, path, rulesV2)
	if tried, err := w.Poll(50); !tried || err != nil || rpuOf(t, r) != 2 {
		t.Fatalf("fixed file: %v %v", tried, err)
	}
	if st := w.Status(); st.LastError != "" || st.Failures != 2 || st.Loads != 2 {
		t.Fatalf("status = %+v", st)
	}
}

func TestWatcherKeepsRulesWhenFilesVanishOrApplyFails(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.yaml")
	write(t, path, rulesV1)
	r := NewRegistry()
	var refuse atomic.Bool
	w := NewWatcher(WatchConfig{Paths: []string{path}, Apply: func(rs *RuleSet) error {
		if refuse.Load() {
			return errors.New("not the leader")
		}
		r.SetRules(rs)
		return nil
	}})
	if err := w.Reload(1); err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	if _, err := w.Poll(2); !errors.Is(err, os.ErrNotExist) || rpuOf(t, r) != 1 {
		t.Fatalf("vanished file: %v", err)
	}
	write(t, path, rulesV2)
	refuse.Store(true)
	if _, err := w.Poll(3); err == nil || err.Error() != "not the leader" || rpuOf(t, r) != 1 {
		t.Fatalf("refused apply: %v", err)
	}
}

func TestWatcherPollsUntilStopped(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.yaml")
	write(t, path, rulesV1)
	w, r := newWatched(t, path)
	if err := w.Start(5 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(time.Millisecond); err != ErrWatcherRunning {
		t.Fatalf("second Start: %v", err)
	}
	waitFor(t, func() bool { return r.Rules() != nil && rpuOf(t, r) == 1 })
	write(t, path, rulesV2)
	waitFor(t, func() bool { return rpuOf(t, r) == 2 })
	w.Stop()
	w.Stop() // twice is harmless
	write(t, path, rulesV1)
	time.Sleep(30 * time.Millisecond)
	if rpuOf(t, r) != 2 {
		t.Fatalf("a stopped watcher reloaded")
	}
	if err := w.Start(5 * time.Millisecond); err != nil {
		t.Fatalf("restart: %v", err)
	}
	waitFor(t, func() bool { return rpuOf(t, r) == 1 })
	w.Stop()
}

// waitFor polls cond for up to 10 s (a loaded machine), failing the test
// if it never holds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestReadStableNeverReturnsASetThatChangedWhileRead(t *testing.T) {
	v1 := []File{{Name: "a.yaml", Data: []byte("1")}, {Name: "b.yaml", Data: []byte("1")}}
	v2 := []File{{Name: "a.yaml", Data: []byte("2")}, {Name: "b.yaml", Data: []byte("2")}}
	torn := []File{{Name: "a.yaml", Data: []byte("1")}, {Name: "b.yaml", Data: []byte("2")}}
	// A swap during the first read: the torn set is read once, then v2
	// twice; v2 is returned.
	reads := [][]File{torn, v2, v2}
	n := 0
	files, err := readStableWith(func() ([]File, error) { n++; return reads[min(n, len(reads))-1], nil })
	if err != nil || !sameFiles(files, v2) {
		t.Fatalf("after a swap: %v %v; want v2", files, err)
	}
	// Files that never read the same twice are refused.
	n = 0
	_, err = readStableWith(func() ([]File, error) {
		n++
		if n%2 == 0 {
			return v1, nil
		}
		return v2, nil
	})
	if err != ErrFilesUnstable || n != stableReads+1 {
		t.Fatalf("ever-changing files: %v after %d reads; want ErrFilesUnstable after %d", err, n, stableReads+1)
	}
}
