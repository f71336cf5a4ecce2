package store

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// textSidecar is a Sidecar holding one string; an encoding that starts
// with '!' is refused by LoadSidecar.
type textSidecar struct {
	mu    sync.Mutex
	text  string
	loads int
}

func (s *textSidecar) set(v string) {
	s.mu.Lock()
	s.text = v
	s.mu.Unlock()
}

func (s *textSidecar) get() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.text
}

func (s *textSidecar) AppendSidecar(dst []byte) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append(dst, s.text...)
}

func (s *textSidecar) LoadSidecar(b []byte) error {
	if bytes.HasPrefix(b, []byte("!")) {
		return errors.New("refused")
	}
	s.mu.Lock()
	s.text, s.loads = string(b), s.loads+1
	s.mu.Unlock()
	return nil
}

func TestSnapshotKeepsTheSidecarBesideTheEntries(t *testing.T) {
	st := New(4)
	st.SetSidecar(&textSidecar{text: "policies v1"})
	want := fillShapes(t, st)
	snap := snapshotBytes(t, st, t0)

	got := New(2)
	side := &textSidecar{}
	got.SetSidecar(side)
	if err := got.Restore(bytes.NewReader(snap)); err != nil {
		t.Fatal(err)
	}
	if side.get() != "policies v1" {
		t.Fatalf("restored sidecar = %q; want %q", side.get(), "policies v1")
	}
	if n, _ := got.DBSize(t0); int(n) != len(want) {
		t.Fatalf("%d keys; want %d", n, len(want))
	}
	// A store without a sidecar reads the file all the same.
	if err := New(4).Restore(bytes.NewReader(snap)); err != nil {
		t.Fatalf("restore without a sidecar: %v", err)
	}
	// A file without a sidecar block leaves the sidecar as it was.
	plain := New(4)
	fillShapes(t, plain)
	side.set("kept")
	if err := got.Restore(bytes.NewReader(snapshotBytes(t, plain, t0))); err != nil || side.get() != "kept" {
		t.Fatalf("restore of a file without a sidecar = %v, sidecar %q; want nil, %q", err, side.get(), "kept")
	}
	// The file a shutdown writes with the store held carries it too.
	path := filepath.Join(t.TempDir(), "sluice.snap")
	release := st.hold()
	_, err := st.saveFileHeld(path)
	release()
	fromFile := &textSidecar{}
	loaded := New(4)
	loaded.SetSidecar(fromFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loaded.LoadFile(path); err != nil || fromFile.get() != "policies v1" {
		t.Fatalf("LoadFile of a held save = %v, sidecar %q; want %q", err, fromFile.get(), "policies v1")
	}
	// The point-in-time capture carries it too, byte for byte.
	var b bytes.Buffer
	if err := st.Capture(t0).Write(&b); err != nil || !bytes.Equal(b.Bytes(), snap) {
		t.Fatalf("Capture.Write = %v, equal %v; want the snapshot's bytes", err, bytes.Equal(b.Bytes(), snap))
	}
}

func TestRestoreRefusesASidecarItCannotLoadAndChangesNothing(t *testing.T) {
	src := New(4)
	src.SetSidecar(&textSidecar{text: "!broken"})
	decide(src, t0, token("k", time.Second, 10, 3))
	snap := snapshotBytes(t, src, t0)

	dst := New(4)
	side := &textSidecar{text: "old"}
	dst.SetSidecar(side)
	decide(dst, t0, token("mine", time.Second, 10, 1))
	err := dst.Restore(bytes.NewReader(snap))
	var se *SnapshotError
	if !errors.As(err, &se) || !strings.Contains(se.Reason, "policies") || se.Offset != headerLen {
		t.Fatalf("Restore = %v; want a SnapshotError about the policies at byte %d", err, headerLen)
	}
	if side.get() != "old" {
		t.Fatalf("sidecar = %q after a refused restore; want %q", side.get(), "old")
	}
	if n, _ := dst.Exists(t0, [][]byte{[]byte("mine"), []byte("k")}); n != 1 {
		t.Fatalf("after a refused restore %d of mine, k exist; want mine only", n)
	}

	// Two sidecar blocks are corruption.
	var b bytes.Buffer
	sw := newSnapWriter(&b, t0)
	sw.sidecar([]byte("a"))
	sw.sidecar([]byte("b"))
	if err := sw.finish(); err != nil {
		t.Fatal(err)
	}
	if err := New(4).Restore(bytes.NewReader(b.Bytes())); !errors.As(err, &se) {
		t.Fatalf("Restore of two sidecar blocks = %v; want a SnapshotError", err)
	}
}

func TestAOFReplaysTheLastSidecarState(t *testing.T) {
	path := filepath.Join(t.TempDir(), "appendonly.aof")
	st := New(4)
	side := &textSidecar{text: "base"}
	st.SetSidecar(side)
	a, err := OpenAOF(st, path, AOFConfig{Fsync: FsyncAlways})
	if err != nil {
		t.Fatal(err)
	}
	now := t0
	for i, v := range []string{"one", "two", "three"} {
		now += int64(time.Millisecond)
		decide(st, now, token("k", time.Second, 10, int64(i+1)))
		side.set(v)
		st.SidecarChanged(now)
		a.Sync()
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	got := New(4)
	loaded := &textSidecar{}
	got.SetSidecar(loaded)
	l, err := got.LoadAOF(path, AOFLoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if loaded.get() != "three" || loaded.loads != 1 || l.Frames != 6 {
		t.Fatalf("sidecar %q after %d loads, %d frames; want %q once, 6 frames (3 decisions, 3 changes)",
			loaded.get(), loaded.loads, l.Frames, "three")
	}
	if !bytes.Equal(snapshotBytes(t, got, now), snapshotBytes(t, st, now)) {
		t.Fatal("the loaded store differs from the one the log was written from")
	}

	// A rewrite folds the state into the base.
	st2 := New(4)
	st2.SetSidecar(&textSidecar{text: "folded"})
	path2 := filepath.Join(t.TempDir(), "appendonly.aof")
	a2, err := OpenAOF(st2, path2, AOFConfig{Fsync: FsyncNo})
	if err != nil {
		t.Fatal(err)
	}
	a2.Close()
	got2 := New(4)
	loaded2 := &textSidecar{}
	got2.SetSidecar(loaded2)
	if l, err := got2.LoadAOF(path2, AOFLoadOptions{}); err != nil || l.Frames != 0 || loaded2.get() != "folded" {
		t.Fatalf("base only: %+v, %v, sidecar %q; want no frames and %q", l, err, loaded2.get(), "folded")
	}
}

func TestAOFRefusesASidecarFrameItCannotLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "appendonly.aof")
	st := New(4)
	side := &textSidecar{text: "ok"}
	st.SetSidecar(side)
	a, err := OpenAOF(st, path, AOFConfig{Fsync: FsyncAlways})
	if err != nil {
		t.Fatal(err)
	}
	side.set("!bad")
	st.SidecarChanged(t0)
	a.Sync()
	a.Close()
	_, ends := frameEnds(t, path)
	got := New(4)
	loaded := &textSidecar{text: "before"}
	got.SetSidecar(loaded)
	_, err = got.LoadAOF(path, AOFLoadOptions{})
	var ae *AOFError
	if !errors.As(err, &ae) || len(ends) != 1 || ae.Offset >= ends[0] || ae.Offset < 32 {
		t.Fatalf("LoadAOF = %v (frames end at %v); want an AOFError at the sidecar's frame", err, ends)
	}
	if loaded.get() != "before" {
		t.Fatalf("sidecar = %q after a refused load; want %q", loaded.get(), "before")
	}
	// A store without a sidecar loads the log and ignores the state.
	if _, err := New(4).LoadAOF(path, AOFLoadOptions{}); err != nil {
		t.Fatalf("LoadAOF without a sidecar: %v", err)
	}
}
