package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/algorithms"
)

// openLog opens a log at a new path for a new store of 4 shards.
func openLog(t testing.TB, fsync Fsync) (*Store, *AOF, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "appendonly.aof")
	st := New(4)
	cfg := DefaultAOFConfig()
	cfg.Fsync, cfg.AutoRewritePercentage = fsync, 0
	a, err := OpenAOF(st, path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return st, a, path
}

// loadLog loads the log at path into a new store of 4 shards.
func loadLog(t testing.TB, path string, opt AOFLoadOptions) (*Store, AOFLoad) {
	t.Helper()
	st := New(4)
	l, err := st.LoadAOF(path, opt)
	if err != nil {
		t.Fatal(err)
	}
	return st, l
}

// traffic runs batches of random decisions, with a deletion now and then,
// from now on, a millisecond apart, syncing the log after each batch, and
// returns the last instant.
func traffic(st *Store, a *AOF, rng *rand.Rand, batches int, now int64) int64 {
	var g int32
	for b := 0; b < batches; b++ {
		now += int64(time.Millisecond)
		reqs := randomBatch(rng, &g)
		st.Decide(now, reqs, make([]algorithms.Outcome, len(reqs)))
		if rng.IntN(10) == 0 {
			st.Delete(now, [][]byte{reqs[0].Key})
		}
		a.Sync()
	}
	return now
}

func TestAOFReplaysEveryChange(t *testing.T) {
	for _, fsync := range []Fsync{FsyncAlways, FsyncEverySec, FsyncNo} {
		t.Run(string(fsync), func(t *testing.T) {
			st, a, path := openLog(t, fsync)
			rng := rand.New(rand.NewPCG(1, 2))
			now := traffic(st, a, rng, 300, t0)
			st.Flush(now) // a flush, then more
			now = traffic(st, a, rng, 300, now)
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			got, l := loadLog(t, path, AOFLoadOptions{})
			if l.TornBytes != 0 || len(l.Skipped) != 0 || l.ValidEnd != l.Size {
				t.Fatalf("load = %+v; want a whole log", l)
			}
			if !bytes.Equal(snapshotBytes(t, got, now), snapshotBytes(t, st, now)) {
				t.Fatal("the loaded store differs from the one the log was written from")
			}
		})
	}
}

func TestAOFBaseIsTheStoreItWasOpenedOn(t *testing.T) {
	st := New(4)
	fillShapes(t, st)
	path := filepath.Join(t.TempDir(), "appendonly.aof")
	a, err := OpenAOF(st, path, AOFConfig{Fsync: FsyncNo})
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	got, l := loadLog(t, path, AOFLoadOptions{})
	if l.Frames != 0 || l.Base == 0 {
		t.Fatalf("load = %+v; want a base and no frames", l)
	}
	if !bytes.Equal(snapshotBytes(t, got, t0), snapshotBytes(t, st, t0)) {
		t.Fatal("the loaded base differs from the store")
	}
}

// frameEnds returns where each frame of the log at path ends.
func frameEnds(t *testing.T, path string) (base int64, ends []int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	off := int64(aofHeaderLen) + int64(binary.LittleEndian.Uint64(b[16:]))
	base = off
	for off < int64(len(b)) {
		off += frameHead + int64(binary.LittleEndian.Uint32(b[off:]))
		ends = append(ends, off)
	}
	return base, ends
}

func TestAOFTornTailIsCutAtTheLastWholeFrame(t *testing.T) {
	st, a, path := openLog(t, FsyncNo)
	tok := req(algorithms.Token, "k", 100, time.Hour, 1)
	for i := 0; i < 5; i++ {
		decide(st, t0, tok)
	}
	a.Close()
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, ends := frameEnds(t, path)
	last, prev := ends[4], ends[3]
	for cut := prev + 1; cut < last; cut++ {
		os.WriteFile(path, whole[:cut], 0o644)
		got, l := loadLog(t, path, AOFLoadOptions{})
		if l.Frames != 4 || l.ValidEnd != prev || l.TornBytes != cut-prev {
			t.Fatalf("cut at %d: load = %+v; want 4 frames and %d bytes cut at %d", cut, l, cut-prev, prev)
		}
		if r := remaining(t, got, t0, tok); r != 96 {
			t.Fatalf("cut at %d: remaining = %d; want 96 (4 decisions)", cut, r)
		}
	}
	// A last frame whose bytes never reached the disk: zeros, or garbage.
	for _, fill := range []byte{0, 0xa5} {
		torn := bytes.Clone(whole)
		for i := prev + 10; i < last; i++ {
			torn[i] = fill
		}
		os.WriteFile(path, torn, 0o644)
		if _, l := loadLog(t, path, AOFLoadOptions{}); l.Frames != 4 || l.TornBytes != last-prev {
			t.Fatalf("last frame filled with %#x: load = %+v; want 4 frames, %d bytes cut", fill, l, last-prev)
		}
	}
}

func TestAOFCorruptionBeforeTheTailIsRefusedWithItsOffset(t *testing.T) {
	st, a, path := openLog(t, FsyncNo)
	for i := 0; i < 10; i++ {
		decide(st, t0, req(algorithms.Fixed, string(rune('a'+i)), 5, time.Hour, 1))
	}
	a.Close()
	_, ends := frameEnds(t, path)
	b, _ := os.ReadFile(path)
	bad := ends[4] + 12 // inside the sixth frame's payload
	b[bad] ^= 0x40
	os.WriteFile(path, b, 0o644)

	fresh := New(4)
	_, err := fresh.LoadAOF(path, AOFLoadOptions{})
	var ae *AOFError
	if !errors.As(err, &ae) || ae.Offset != ends[4] || ae.Path != path {
		t.Fatalf("LoadAOF = %v; want an *AOFError at byte %d of %s", err, ends[4], path)
	}
	if n, _ := fresh.DBSize(t0); n != 0 {
		t.Fatalf("a refused load left %d keys; want the store unchanged", n)
	}

	got, l := loadLog(t, path, AOFLoadOptions{SkipCorrupt: true})
	if len(l.Skipped) != 1 || l.Skipped[0].Offset != ends[4] || l.Skipped[0].Bytes != ends[5]-ends[4] || l.Frames != 9 {
		t.Fatalf("skipping: load = %+v; want the sixth frame skipped and nine applied", l)
	}
	if n, _ := got.Exists(t0, [][]byte{[]byte("f")}); n != 0 {
		t.Fatal("the skipped frame's key is there")
	}
	if n, _ := got.DBSize(t0); n != 9 {
		t.Fatalf("DBSize = %d; want 9", n)
	}
}

func TestAOFGroupIsOneFrameAppliedWholeOrNotAtAll(t *testing.T) {
	st, a, path := openLog(t, FsyncNo)
	reqs := group(1, req(algorithms.Token, "a", 5, time.Hour, 1), req(algorithms.Fixed, "b", 5, time.Hour, 1),
		req(algorithms.Log, "c", 5, time.Hour, 2))
	decideAll(st, t0, reqs)
	a.Close()
	base, ends := frameEnds(t, path)
	if len(ends) != 1 {
		t.Fatalf("%d frames; want the group as one", len(ends))
	}
	whole, _ := os.ReadFile(path)
	for cut := base + 1; cut < ends[0]; cut++ {
		os.WriteFile(path, whole[:cut], 0o644)
		got, l := loadLog(t, path, AOFLoadOptions{})
		if n, _ := got.DBSize(t0); n != 0 || l.Frames != 0 {
			t.Fatalf("cut at %d: %d keys, %d frames; want none of the group", cut, n, l.Frames)
		}
	}
	os.WriteFile(path, whole, 0o644)
	got, _ := loadLog(t, path, AOFLoadOptions{})
	for _, r := range reqs {
		if want := remaining(t, st, t0, r); remaining(t, got, t0, r) != want {
			t.Fatalf("%s: remaining differs after the load; want %d", r.Key, want)
		}
	}
}

func TestAOFRewriteDuringTrafficLosesNothing(t *testing.T) {
	st, a, path := openLog(t, FsyncEverySec)
	now := traffic(st, a, rand.New(rand.NewPCG(3, 4)), 200, t0)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	nows := make([]int64, 2)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			n := now
			for {
				select {
				case <-stop:
					nows[w] = n
					return
				default:
				}
				n = traffic(st, a, rng, 1, n)
			}
		}()
	}
	for i := 0; i < 3; i++ {
		if err := a.Rewrite(); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	a.Close()
	now = max(nows[0], nows[1])
	got, l := loadLog(t, path, AOFLoadOptions{})
	if l.Base == 0 || l.TornBytes != 0 {
		t.Fatalf("load = %+v; want a rewritten base and a whole log", l)
	}
	if !bytes.Equal(snapshotBytes(t, got, now), snapshotBytes(t, st, now)) {
		t.Fatal("the log rewritten during traffic lost or changed something")
	}
	if s := a.Stats(); s.Rewrites != 3 || !s.LastRewriteOK {
		t.Fatalf("stats = %+v; want 3 good rewrites", s)
	}
}

func TestAOFRewriteCompactsAndLeavesNoTemporary(t *testing.T) {
	st, a, path := openLog(t, FsyncNo)
	tok := req(algorithms.Token, "k", 1_000_000, time.Hour, 1)
	for i := 0; i < 2000; i++ {
		decide(st, t0, tok)
	}
	a.Sync()
	before := a.Stats().CurrentSize
	if err := a.Rewrite(); err != nil {
		t.Fatal(err)
	}
	s := a.Stats()
	if s.CurrentSize >= before/10 || s.BaseSize != s.CurrentSize {
		t.Fatalf("after a rewrite: %+v; want far less than %d bytes, all of them base", s, before)
	}
	decide(st, t0, tok)
	a.Close()
	got, _ := loadLog(t, path, AOFLoadOptions{})
	if r := remaining(t, got, t0, tok); r != 1_000_000-2001 {
		t.Fatalf("remaining = %d; want %d", r, 1_000_000-2001)
	}
	if left, _ := filepath.Glob(path + tmpInfix + "*"); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func TestAOFAutomaticRewriteByGrowth(t *testing.T) {
	path := filepath.Join(t.TempDir(), "appendonly.aof")
	st := New(4)
	a, err := OpenAOF(st, path, AOFConfig{Fsync: FsyncNo, AutoRewritePercentage: 100, AutoRewriteMinSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	tok := req(algorithms.Token, "k", 1_000_000, time.Hour, 1)
	for i := 0; i < 500; i++ {
		decide(st, t0, tok)
	}
	a.Sync()
	// The background loop looks once a second; give it a generous while.
	for deadline := time.Now().Add(10 * time.Second); a.Stats().Rewrites == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("no automatic rewrite: %+v", a.Stats())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestAOFFailedWriteIsKeptAndRetried(t *testing.T) {
	st, a, path := openLog(t, FsyncAlways)
	tok := req(algorithms.Token, "k", 100, time.Hour, 1)
	decide(st, t0, tok)
	if err := a.Sync(); err != nil {
		t.Fatal(err)
	}
	// The file becomes unwritable: a descriptor opened for reading only.
	ro, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	a.wmu.Lock()
	good := a.f
	a.f = ro
	a.wmu.Unlock()
	decide(st, t0, tok)
	if err := a.Sync(); err == nil {
		t.Fatal("Sync on an unwritable file = nil; want the write's error")
	}
	if s := a.Stats(); s.LastWriteOK || s.Pending == 0 {
		t.Fatalf("after a failed write: %+v; want LastWriteOK false and the frame pending", s)
	}
	// Changes are refused until a write works; peeks are answered.
	if o := decide(st, t0, tok); o.Err == nil || !strings.HasPrefix(o.Err.Error(), "MISCONF Errors writing to the AOF file: ") {
		t.Fatalf("Take(t0, n=1) while the log fails = %+v; want the MISCONF error", o)
	}
	peek := tok
	peek.N = 0
	if o := decide(st, t0, peek); o.Err != nil || o.Result.Remaining != 98 {
		t.Fatalf("Take(t0, n=0) while the log fails = %+v; want remaining 98", o)
	}
	a.wmu.Lock()
	a.f = good
	a.wmu.Unlock()
	ro.Close()
	if err := a.Sync(); err != nil {
		t.Fatal(err)
	}
	if s := a.Stats(); !s.LastWriteOK || s.Pending != 0 || s.Unsynced != 0 {
		t.Fatalf("after the retry: %+v; want everything written and synced", s)
	}
	a.Close()
	got, l := loadLog(t, path, AOFLoadOptions{})
	if r := remaining(t, got, t0, tok); r != 98 || l.Frames != 2 {
		t.Fatalf("remaining = %d in %d frames; want 98 in 2: the failed write's frame is written once, whole", r, l.Frames)
	}
}

func TestAOFPoliciesSyncWhenTheySay(t *testing.T) {
	tok := req(algorithms.Token, "k", 100, time.Hour, 1)
	for _, tc := range []struct {
		fsync    Fsync
		unsynced bool // bytes written but not on disk right after Sync
	}{{FsyncAlways, false}, {FsyncEverySec, true}, {FsyncNo, true}} {
		st, a, _ := openLog(t, tc.fsync)
		decide(st, t0, tok)
		a.Sync()
		s := a.Stats()
		if s.Pending != 0 || (s.Unsynced > 0) != tc.unsynced {
			t.Fatalf("%s: after Sync %+v; want nothing pending and unsynced bytes %v", tc.fsync, s, tc.unsynced)
		}
		if tc.fsync == FsyncEverySec {
			// The background fsync runs once a second; allow a loaded machine 10.
			for deadline := time.Now().Add(10 * time.Second); a.Stats().Unsynced > 0; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("everysec: still %d bytes unsynced after 10 s", a.Stats().Unsynced)
				}
			}
		}
		a.Close()
	}
}

// BenchmarkDecideWithAOF is a pipelined token decision with the log off
// and on (appendfsync no: the encoding and the write, not the disk, are
// measured), one Sync per batch of 100. The hot path must not allocate.
func BenchmarkDecideWithAOF(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			st, a, _ := openLog(b, FsyncNo)
			defer a.Close()
			if !on {
				st.SetAOF(nil)
			}
			reqs := make([]algorithms.Request, 100)
			keys := make([][]byte, 1000)
			for i := range keys {
				keys[i] = []byte("user:" + string(rune('a'+i%26)) + string(rune('a'+i/26)))
			}
			for i := range reqs {
				reqs[i] = req(algorithms.Token, "", 1_000_000_000, time.Second, 1)
			}
			out := make([]algorithms.Outcome, len(reqs))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += len(reqs) {
				for j := range reqs {
					reqs[j].Key = keys[(i+j)%len(keys)]
				}
				st.Decide(t0, reqs, out)
				a.Sync()
			}
		})
	}
}

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
	side := &textSidecar{text: "base"}
	st.SetSidecar(side)
	a, err := OpenAOF(st, path, AOFConfig{Fsync: FsyncNo})
	if err != nil {
		t.Fatal(err)
	}
	side.set("changed")
	st.SidecarChanged(t0)
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
