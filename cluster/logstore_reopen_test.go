package cluster

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// record is the i'th of the entries or appends the log tests write:
// lengths that do not divide a chunk of zeros, so appends straddle the
// frontier.
func record(i int) []byte {
	b := make([]byte, 3000+(i*7919)%20000)
	for k := range b {
		b[k] = byte(i + k | 1) // never 0: a zero where a record is shows
	}
	return b
}

// A log closed and opened again in the same process (a Node shut down and
// started again on its --dir) holds every entry: the close released
// everything the open takes. The entries fill more than raft-wal's first
// segment of 64 MiB, so that a second one is made, and the appends after
// the reopen go on in the tail recovered from the files.
func TestLogStoreWithFsyncKeepsEveryEntryAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	const before, after = 6000, 500 // about 78 MB, then 6 MB
	open := func() logStore {
		type opened struct {
			s    logStore
			kind LogStore
			err  error
		}
		done := make(chan opened, 1)
		go func() {
			s, kind, err := openLogStore(dir, LogStoreWAL, true)
			done <- opened{s, kind, err}
		}()
		select {
		case o := <-done:
			if o.err != nil || o.kind != LogStoreWAL {
				t.Fatalf("openLogStore: %v, %v", o.kind, o.err)
			}
			return o.s
		case <-time.After(20 * time.Second):
			t.Fatal("opening the log again still waits after 20s: the first open's file lock is held")
			return nil
		}
	}
	store := func(from, to int) {
		s := open()
		for i := from; i <= to; i += 10 {
			var batch []*raft.Log
			for k := i; k < i+10; k++ {
				batch = append(batch, &raft.Log{Index: uint64(k), Term: 1, Type: raft.LogCommand, Data: record(k)})
			}
			if err := s.StoreLogs(batch); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	store(1, before)
	if segs, _ := filepath.Glob(filepath.Join(dir, "wal", "*.wal")); len(segs) < 2 {
		t.Fatalf("the log is in %d segment files, want at least 2: the test no longer crosses a segment", len(segs))
	}
	store(before+1, before+after)

	s := open()
	defer s.Close()
	if last, err := s.LastIndex(); err != nil || last != before+after {
		t.Fatalf("LastIndex after reopening = %d, %v; want %d", last, err, before+after)
	}
	for i := 1; i <= before+after; i++ {
		var l raft.Log
		if err := s.GetLog(uint64(i), &l); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if !bytes.Equal(l.Data, record(i)) {
			t.Fatalf("entry %d reads back %d bytes that differ from the %d stored", i, len(l.Data), len(record(i)))
		}
	}
}
