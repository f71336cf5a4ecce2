package cluster

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/hashicorp/raft"
	walfs "github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/types"
	"github.com/sluice-rl/sluice/internal/testutil"
	"golang.org/x/sys/unix"
)

// FIEMAP (linux/fiemap.h): the extents of a file and their state.
const (
	fsIocFiemap      = 0xC020660B // _IOWR('f', 11, struct fiemap)
	fiemapFlagSync   = 0x1        // flush the file before mapping it
	fiemapExtentLast = 0x1
	fiemapUnwritten  = 0x800 // allocated, read as zeros, converted on write
)

type fiemapExtent struct {
	Logical, Physical, Length uint64
	_                         [2]uint64
	Flags                     uint32
	_                         [3]uint32
}

type fiemap struct {
	Start, Length                   uint64
	Flags, Mapped, ExtentCount, Res uint32
	Extents                         [128]fiemapExtent
}

// unwrittenBytes is how many of the bytes of [0, upTo) of path lie in
// unwritten extents; ok is false if the file system cannot tell (no
// FIEMAP).
func unwrittenBytes(t *testing.T, path string, upTo int64) (n int64, ok bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var start uint64
	for start < uint64(upTo) {
		m := fiemap{Start: start, Length: uint64(upTo) - start, Flags: fiemapFlagSync, ExtentCount: 128}
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), fsIocFiemap, uintptr(unsafe.Pointer(&m))); errno != 0 {
			return 0, false
		}
		if m.Mapped == 0 {
			break
		}
		for _, e := range m.Extents[:m.Mapped] {
			if e.Flags&fiemapUnwritten != 0 {
				from, to := max(e.Logical, start), min(e.Logical+e.Length, uint64(upTo))
				if to > from {
					n += int64(to - from)
				}
			}
			start = e.Logical + e.Length
			if e.Flags&fiemapExtentLast != 0 {
				return n, true
			}
		}
	}
	return n, true
}

// The point of zeroAheadFS, on the file system the tests run on: a
// preallocated segment's appends land in unwritten blocks, which every
// sync must convert and commit; behind zeroAheadFS's frontier no block is
// left unwritten.
func TestZeroAheadFileLeavesNoUnwrittenBlocksBehindItsFrontier(t *testing.T) {
	dir := t.TempDir()
	const size = 4 * zeroChunk
	appendTo := func(fs types.VFS, name string) int64 {
		w, err := fs.Create(dir, name, size)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		return appendRecords(t, w, make([]byte, size), 0, 0, 200<<10)
	}
	end := appendTo(walfs.New(), "plain")
	appendTo(zeroAheadFS{walfs.New()}, "zeroed")
	// The first append put the frontier zeroChunk past its end: the
	// appends that followed stayed behind it.
	plain, ok := unwrittenBytes(t, filepath.Join(dir, "plain"), zeroChunk)
	if !ok || plain == 0 {
		t.Skipf("this file system leaves no preallocated block unwritten (FIEMAP answered: %v): nothing to avoid", ok)
	}
	if want := zeroChunk - end; plain < want-(64<<10) {
		t.Fatalf("a preallocated segment written up to %d has %d unwritten bytes before %d; want about %d", end, plain, zeroChunk, want)
	}
	if n, _ := unwrittenBytes(t, filepath.Join(dir, "zeroed"), zeroChunk); n != 0 {
		t.Fatalf("the same appends through zeroAheadFS leave %d bytes unwritten before %d, want 0", n, zeroChunk)
	}
	// Past the frontier the segment is as preallocated.
	if n, _ := unwrittenBytes(t, filepath.Join(dir, "zeroed"), size); n == 0 {
		t.Fatalf("zeroAheadFS wrote the whole segment ahead; want only %d bytes past the appends", zeroChunk)
	}
}

// BenchmarkLogAppend appends one entry of 12 KiB a call to a raft-wal log
// with fsync, a P16 group's entry at full load: on raft-wal's own file
// system (a preallocated segment, fsync), and on zeroAheadFS's (zeros
// ahead, fdatasync). cpu-ns/op is the process's CPU, the kernel's part of
// the syncs included.
func BenchmarkLogAppend(b *testing.B) {
	for _, c := range []struct {
		name string
		vfs  types.VFS
	}{{"preallocated", walfs.New()}, {"zero-ahead", zeroAheadFS{walfs.New()}}} {
		b.Run(c.name, func(b *testing.B) {
			s, err := openWAL(b.TempDir(), c.vfs)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			data := bytes.Repeat([]byte{7}, 12<<10)
			b.ReportAllocs()
			b.ResetTimer()
			cpu := testutil.ProcessCPU()
			for i := 1; i <= b.N; i++ {
				if err := s.StoreLogs([]*raft.Log{{Index: uint64(i), Term: 1, Type: raft.LogCommand, Data: data}}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(testutil.ProcessCPU()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}
