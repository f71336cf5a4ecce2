package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	walfs "github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/types"
)

// appendRecords writes records from, from+1, … at off until at least
// upTo bytes are written, syncing after each; it returns the new offset.
func appendRecords(t *testing.T, w types.WritableFile, want []byte, from int, off, upTo int64) int64 {
	t.Helper()
	for i := from; off < upTo; i++ {
		r := record(i)
		if n, err := w.WriteAt(r, off); err != nil || n != len(r) {
			t.Fatalf("WriteAt(%d bytes, %d) = %d, %v", len(r), off, n, err)
		}
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
		copy(want[off:], r)
		off += int64(len(r))
	}
	return off
}

// checkContents fails unless the file at path is exactly want.
func checkContents(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("the file is %d bytes, want %d: the zeros changed its size", len(got), len(want))
	}
	if i := firstDiff(got, want); i >= 0 {
		t.Fatalf("byte %d is %d, want %d", i, got[i], want[i])
	}
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

func TestZeroAheadFileKeepsEveryAppendAndTheSize(t *testing.T) {
	dir := t.TempDir()
	const size = 3*zeroChunk + 12345 // the last chunk is cut short by the size
	fs := zeroAheadFS{walfs.New()}
	w, err := fs.Create(dir, "seg", size)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, size)
	off := appendRecords(t, w, want, 0, 0, zeroChunk+zeroChunk/2)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkContents(t, filepath.Join(dir, "seg"), want)

	// Reopened as raft-wal reopens a tail after a crash: appends go on
	// from the end of the last one, and the zeros never reach back over
	// what is written.
	w, err = fs.OpenWriter(dir, "seg")
	if err != nil {
		t.Fatal(err)
	}
	if z, ok := w.(*zeroAheadFile); !ok {
		t.Fatalf("OpenWriter gave a %T, want a *zeroAheadFile", w)
	} else if z.size != size {
		t.Fatalf("the reopened file zeros up to %d, want its size %d", z.size, size)
	}
	// Up to the last byte: the final append is cut to fit.
	for i := 1000; off < size; i++ {
		r := record(i)[:min(len(record(i)), int(size-off))]
		if _, err := w.WriteAt(r, off); err != nil {
			t.Fatal(err)
		}
		copy(want[off:], r)
		off += int64(len(r))
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkContents(t, filepath.Join(dir, "seg"), want)
}

// failingZeros is a file whose writes of zeroAheadFile's zeros fail.
type failingZeros struct {
	types.WritableFile
	zeroWrites, dataWrites int
}

func (f *failingZeros) WriteAt(p []byte, off int64) (int, error) {
	if len(p) > 0 && &p[0] == &zeros[0] {
		f.zeroWrites++
		return 0, errors.New("no space left on device")
	}
	f.dataWrites++
	return f.WritableFile.WriteAt(p, off)
}

func TestZeroAheadFileAppendsOnWhenItsZerosFail(t *testing.T) {
	dir := t.TempDir()
	inner, err := walfs.New().Create(dir, "seg", 4*zeroChunk)
	if err != nil {
		t.Fatal(err)
	}
	f := &failingZeros{WritableFile: inner}
	w := newZeroAheadFile(f, 4*zeroChunk)
	want := make([]byte, 4*zeroChunk)
	appendRecords(t, w, want, 0, 0, 3*zeroChunk)
	if f.zeroWrites != 1 || f.dataWrites == 0 {
		t.Fatalf("%d writes of zeros (want the 1 that failed, then none), %d of data", f.zeroWrites, f.dataWrites)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkContents(t, filepath.Join(dir, "seg"), want)
}
