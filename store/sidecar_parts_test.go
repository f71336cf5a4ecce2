package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// partsSidecar is a PartedSidecar of named strings. A part encodes as
// "id=value", or "id" when absent; the whole state as its parts joined by
// newlines, sorted. A value that starts with '!' is refused by a load.
type partsSidecar struct {
	mu sync.Mutex
	m  map[string]string
}

func (s *partsSidecar) set(id, v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]string{}
	}
	s.m[id] = v
}

func (s *partsSidecar) del(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
}

func (s *partsSidecar) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var parts []string
	for id, v := range s.m {
		parts = append(parts, id+"="+v)
	}
	slices.Sort(parts)
	return strings.Join(parts, "\n")
}

func (s *partsSidecar) AppendSidecar(dst []byte) []byte { return append(dst, s.String()...) }

func (s *partsSidecar) LoadSidecar(b []byte) error { return s.LoadSidecarParts(b, nil) }

func (s *partsSidecar) AppendSidecarPart(dst, id []byte) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	dst = append(dst, id...)
	if v, ok := s.m[string(id)]; ok {
		dst = append(append(dst, '='), v...)
	}
	return dst
}

func (s *partsSidecar) LoadSidecarParts(base []byte, parts [][]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[string]string{}
	if base == nil {
		for k, v := range s.m {
			m[k] = v
		}
	} else if len(base) > 0 {
		for _, line := range strings.Split(string(base), "\n") {
			id, v, _ := strings.Cut(line, "=")
			m[id] = v
		}
	}
	for _, p := range parts {
		id, v, ok := strings.Cut(string(p), "=")
		switch {
		case strings.HasPrefix(v, "!"):
			return errors.New("refused")
		case ok:
			m[id] = v
		default:
			delete(m, id)
		}
	}
	s.m = m
	return nil
}

// A change of one part costs the log one part, however large the state:
// the frames of the 2000th change are as long as those of the 1st. A load
// applies them over the whole state a rewrite wrote, in order.
func TestAOFLogsTheChangedPartOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "appendonly.aof")
	st := New(4)
	side := &partsSidecar{}
	side.set("kept", "from the base")
	st.SetSidecar(side)
	a, err := OpenAOF(st, path, AOFConfig{Fsync: FsyncNo})
	if err != nil {
		t.Fatal(err)
	}
	size := func() int64 {
		if err := a.Sync(); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	change := func(i int) {
		id := fmt.Sprintf("key:%06d", i)
		side.set(id, "v1")
		st.SidecarPartChanged(t0, []byte(id))
	}
	start := size()
	change(0)
	first := size() - start
	for i := 1; i < 1999; i++ {
		change(i)
	}
	before := size()
	change(1999)
	if last := size() - before; last != first {
		t.Fatalf("the 2000th change grew the log by %d bytes, the 1st by %d; want the same", last, first)
	}
	side.del("key:000007")
	st.SidecarPartChanged(t0, []byte("key:000007"))
	if err := a.Rewrite(); err != nil { // the base now holds the whole state
		t.Fatal(err)
	}
	side.set("key:000008", "v2")
	st.SidecarPartChanged(t0, []byte("key:000008"))
	want := side.String()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	loaded := New(4)
	got := &partsSidecar{}
	got.set("stale", "gone after the load")
	loaded.SetSidecar(got)
	if _, err := loaded.LoadAOF(path, AOFLoadOptions{}); err != nil {
		t.Fatal(err)
	}
	if got.String() != want {
		t.Fatalf("loaded sidecar differs from the logged one:\n%.200s\nwant\n%.200s", got.String(), want)
	}
}

// After a whole state in the log, only the parts that follow it apply;
// a part the sidecar refuses refuses the load, changing nothing.
func TestAOFPartsFollowTheLastWholeState(t *testing.T) {
	path := filepath.Join(t.TempDir(), "appendonly.aof")
	st := New(4)
	side := &partsSidecar{}
	st.SetSidecar(side)
	a, err := OpenAOF(st, path, AOFConfig{Fsync: FsyncNo})
	if err != nil {
		t.Fatal(err)
	}
	side.set("a", "1")
	st.SidecarPartChanged(t0, []byte("a"))
	side.set("b", "1")
	st.SidecarChanged(t0) // the whole state: a=1, b=1
	side.set("a", "2")
	st.SidecarPartChanged(t0, []byte("a"))
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	got := &partsSidecar{}
	loaded := New(4)
	loaded.SetSidecar(got)
	if _, err := loaded.LoadAOF(path, AOFLoadOptions{}); err != nil || got.String() != "a=2\nb=1" {
		t.Fatalf("load = %v, sidecar %q; want a=2, b=1", err, got.String())
	}

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// A sidecar that knows no parts cannot take them.
	plain := New(4)
	plain.SetSidecar(&textSidecar{text: "old"})
	if _, err := plain.loadAOF(bytes.NewReader(data), int64(len(data)), AOFLoadOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := New(4).installSidecar(plain); err != nil {
		t.Fatalf("a store without a sidecar refused the parts: %v", err)
	}
	into := New(4)
	into.SetSidecar(&textSidecar{})
	if err := into.installSidecar(plain); err == nil {
		t.Fatal("a sidecar without parts took a log of parts")
	}

	// A refused part: the load fails and the sidecar is as it was.
	a2path := filepath.Join(t.TempDir(), "refused.aof")
	st2 := New(4)
	side2 := &partsSidecar{}
	st2.SetSidecar(side2)
	a2, err := OpenAOF(st2, a2path, AOFConfig{Fsync: FsyncNo})
	if err != nil {
		t.Fatal(err)
	}
	side2.set("x", "!bad")
	st2.SidecarPartChanged(t0, []byte("x"))
	a2.Close()
	keep := &partsSidecar{}
	keep.set("mine", "1")
	dst := New(4)
	dst.SetSidecar(keep)
	var ae *AOFError
	if _, err := dst.LoadAOF(a2path, AOFLoadOptions{}); !errors.As(err, &ae) || keep.String() != "mine=1" {
		t.Fatalf("load of a refused part = %v, sidecar %q; want an AOFError, mine=1", err, keep.String())
	}
}
