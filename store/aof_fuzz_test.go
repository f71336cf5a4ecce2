package store

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/algorithms"
)

// FuzzAOFLoad feeds arbitrary bytes to the log reader. It must never panic
// or allocate more than the input holds, and what it accepts must hold
// together: the whole frames end at ValidEnd, the cut tail is the rest, and
// the file cut at ValidEnd loads again to the same frames with nothing cut
// or skipped. The seed corpus (testdata/fuzz/FuzzAOFLoad) holds logs of
// every algorithm, a group, deletions and a flush, whole, torn and
// corrupted.
func FuzzAOFLoad(f *testing.F) {
	for _, seed := range aofSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, skip := range []bool{false, true} {
			st := New(2)
			l, err := st.loadAOF(bytes.NewReader(data), int64(len(data)), AOFLoadOptions{SkipCorrupt: skip})
			if err != nil {
				continue
			}
			if l.ValidEnd > l.Size || l.ValidEnd+l.TornBytes > l.Size || (l.TornBytes > 0 && l.ValidEnd+l.TornBytes != l.Size) {
				t.Fatalf("load = %+v of %d bytes: inconsistent", l, len(data))
			}
			if skip && len(l.Skipped) > 0 {
				continue
			}
			again := New(2)
			l2, err := again.loadAOF(bytes.NewReader(data[:l.ValidEnd]), l.ValidEnd, AOFLoadOptions{})
			if err != nil || l2.Frames != l.Frames || l2.TornBytes != 0 || l2.ValidEnd != l.ValidEnd {
				t.Fatalf("cut at %d: load = %+v, %v; want %d frames, whole", l.ValidEnd, l2, err, l.Frames)
			}
		}
	})
}

// aofSeeds returns small logs: one of every kind of change, and that log
// torn and corrupted.
func aofSeeds(t testing.TB) [][]byte {
	path := filepath.Join(t.TempDir(), "seed.aof")
	st := New(2)
	a, err := OpenAOF(st, path, AOFConfig{Fsync: FsyncNo})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range oneOfEach(1) {
		decide(st, t0, r)
	}
	decideAll(st, t0, group(1, req(algorithms.Token, "a", 5, time.Hour, 1), req(algorithms.Log, "b", 5, time.Hour, 2)))
	st.Delete(t0, [][]byte{[]byte("token")})
	st.Flush(t0 + 1)
	decide(st, t0+2, req(algorithms.Sliding, "s", 5, time.Minute, 1))
	a.Close()
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	torn := whole[:len(whole)-3]
	corrupt := bytes.Clone(whole)
	corrupt[len(corrupt)/2] ^= 1
	return [][]byte{whole, torn, corrupt, whole[:aofHeaderLen]}
}
