package store

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRemoveStaleTempsRemovesOnlyThisSnapshotsTemporaries: the files a
// save killed mid-write leaves (named as saveFile names its temporary
// files) go; anything else in the directory stays.
func TestRemoveStaleTempsRemovesOnlyThisSnapshotsTemporaries(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sluice.snap")
	kept := filepath.Join(dir, "sluice.snap.tmp-2840217734") // as os.CreateTemp names them
	if err := os.WriteFile(kept, make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	stale := []string{kept, filepath.Join(dir, "sluice.snap.tmp-1")}
	others := []string{
		filepath.Join(dir, "sluice.snap"),
		filepath.Join(dir, "sluice.snap.tmp-"),
		filepath.Join(dir, "sluice.snap.tmp-12x"),
		filepath.Join(dir, "other.snap.tmp-123"),
		filepath.Join(dir, "sluice.snapshot.tmp-123"),
		filepath.Join(dir, LockFile),
	}
	for _, p := range append(stale[1:], others...) {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Mkdir(filepath.Join(dir, "sluice.snap.tmp-99"), 0o755) // a directory is not ours

	removed, err := RemoveStaleTemps(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range removed {
		got = append(got, r.Path)
		if r.Path == kept && r.Size != 4096 {
			t.Errorf("%s reported as %d bytes; want 4096", r.Path, r.Size)
		}
	}
	slices.Sort(got)
	slices.Sort(stale)
	if !slices.Equal(got, stale) {
		t.Fatalf("removed %q; want %q", got, stale)
	}
	for _, p := range append(others, filepath.Join(dir, "sluice.snap.tmp-99")) {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
}

// TestSaveFileLeavesNoTemporaryOnFailure: a save whose rename fails
// removes its temporary file, and RemoveStaleTemps's pattern matches the
// names saveFile gives its temporary files.
func TestSaveFileLeavesNoTemporaryOnFailure(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sluice.snap")
	if err := os.MkdirAll(filepath.Join(path, "in-the-way"), 0o755); err != nil {
		t.Fatal(err)
	}
	st := New(4)
	decide(st, t0, token("k", time.Second, 10, 1))
	var seen []string
	_, err := writeFile(path, func(w io.Writer) (uint64, error) {
		names, _ := os.ReadDir(dir)
		for _, n := range names {
			seen = append(seen, n.Name())
		}
		return 0, st.Snapshot(w)
	})
	if err == nil {
		t.Fatal("a save over a directory succeeded")
	}
	var tmp string
	for _, n := range seen {
		if strings.HasPrefix(n, "sluice.snap"+tmpInfix) {
			tmp = n
		}
	}
	if tmp == "" || !allDigits(strings.TrimPrefix(tmp, "sluice.snap"+tmpInfix)) {
		t.Fatalf("temporary file during the save: %q; want sluice.snap.tmp-<digits>", seen)
	}
	if _, err := os.Stat(filepath.Join(dir, tmp)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temporary file %s left after a failed save (%v)", tmp, err)
	}
}

// TestLoadFileReportsWhatItFound: a missing file and a symbolic link to
// nothing both start empty, the link reported; a loaded file's time and
// size are reported.
func TestLoadFileReportsWhatItFound(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sluice.snap")
	if lf, err := New(4).LoadFile(path); err != nil || lf.Loaded || lf.DanglingTo != "" {
		t.Fatalf("missing: %+v, %v", lf, err)
	}
	target := filepath.Join(dir, "volume", "sluice.snap")
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	if lf, err := New(4).LoadFile(path); err != nil || lf.Loaded || lf.DanglingTo != target {
		t.Fatalf("dangling symlink: %+v, %v; want DanglingTo %s", lf, err, target)
	}
	os.Remove(path)
	st := New(4)
	decide(st, t0, token("k", time.Hour, 10, 1))
	if err := st.saveFile(path); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	lf, err := New(4).LoadFile(path)
	if err != nil || !lf.Loaded || lf.Size != fi.Size() || !lf.ModTime.Equal(fi.ModTime()) {
		t.Fatalf("loaded: %+v, %v; want size %d, time %v", lf, err, fi.Size(), fi.ModTime())
	}
}

// TestSaveAndHoldKeepsTheStoreOnSuccessAndLetsGoOnFailure: after a
// successful final save no decision can change the store (it would be
// lost); after a failed one decisions go on.
func TestSaveAndHoldKeepsTheStoreOnSuccessAndLetsGoOnFailure(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sluice.snap")
	st := New(4)
	for i := 0; i < 100; i++ {
		decide(st, t0, token(fmt.Sprintf("k%d", i), time.Hour, 10, 3))
	}
	sv := NewSaver(st, path)

	if err := os.MkdirAll(filepath.Join(path, "in-the-way"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := sv.SaveAndHold(); err == nil {
		t.Fatal("SaveAndHold over a directory succeeded")
	}
	decide(st, t0, token("after-failure", time.Hour, 10, 1)) // would hang if still held
	if err := sv.Save(); err == nil {
		t.Fatal("SAVE succeeded over a directory")
	}
	os.RemoveAll(path)

	n, err := sv.SaveAndHold()
	if err != nil || n != 101 {
		t.Fatalf("SaveAndHold = %d, %v; want 101 entries", n, err)
	}
	decided := make(chan struct{})
	go func() {
		decide(st, t0, token("after-success", time.Hour, 10, 1))
		close(decided)
	}()
	select {
	case <-decided:
		t.Fatal("a decision ran after the final save")
	case <-time.After(50 * time.Millisecond):
	}
	if err := sv.BackgroundSave(); err != ErrSaveInProgress {
		t.Fatalf("BGSAVE after the final save = %v; want %v", err, ErrSaveInProgress)
	}
	got := New(4)
	if _, err := got.LoadFile(path); err != nil {
		t.Fatal(err)
	}
	if n, _ := got.DBSize(t0); n != 101 {
		t.Fatalf("the final snapshot holds %d keys; want 101", n)
	}
	// Let the blocked decision finish so the test leaves no goroutine.
	for i := range st.shards {
		st.shards[i].Unlock()
	}
	<-decided
}

// TestSaveAndHoldWaitsForABackgroundSave: the final save starts after a
// running BGSAVE instead of failing with "already in progress".
func TestSaveAndHoldWaitsForABackgroundSave(t *testing.T) {
	st := New(4)
	decide(st, t0, token("k", time.Hour, 10, 1))
	sv := NewSaver(st, filepath.Join(t.TempDir(), "s.snap"))
	st.shards[1].Lock() // the background save waits at this shard
	if err := sv.BackgroundSave(); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		st.shards[1].Unlock()
	}()
	if _, err := sv.SaveAndHold(); err != nil {
		t.Fatalf("SaveAndHold during BGSAVE = %v", err)
	}
}

// TestLockDirKeepsASecondHolderOut: a second lock on a held directory is
// refused with an error naming the directory and the holder's pid; after
// Unlock the directory can be taken again.
func TestLockDirKeepsASecondHolderOut(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	l, err := LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = LockDir(dir)
	if !errors.Is(err, ErrDirLocked) || !strings.Contains(err.Error(), dir) ||
		!strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("second LockDir: %v; want ErrDirLocked naming %s and pid %d", err, dir, os.Getpid())
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	l, err = LockDir(dir)
	if err != nil {
		t.Fatalf("LockDir after Unlock: %v", err)
	}
	l.Unlock()
}
