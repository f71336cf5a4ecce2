package shard

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/algorithms"
)

// checkArena verifies the arena's invariants: records tile every chunk
// from firstWord to its end, the bitmap marks exactly their starts, no two
// free records are adjacent, every free record is on the list for its size
// and the free-word count adds up.
func checkArena(t *testing.T, a *arena) {
	t.Helper()
	var freeWords int64
	onList := map[uint32]bool{}
	for ci, c := range a.chunks {
		if c == nil {
			continue
		}
		prevFree := false
		for w := firstWord; w < int(a.ends[ci]); {
			if c[w/64]&(1<<(w%64)) == 0 {
				t.Fatalf("chunk %d word %d: record start not marked", ci, w)
			}
			l := mkloc(ci, w)
			size := a.size(l)
			if size < minRecord || w+size > int(a.ends[ci]) {
				t.Fatalf("chunk %d word %d: size %d past the end %d", ci, w, size, a.ends[ci])
			}
			for i := w + 1; i < w+size && len(c) == chunkWords; i++ {
				if c[i/64]&(1<<(i%64)) != 0 {
					t.Fatalf("chunk %d word %d: marked inside the record at %d", ci, i, w)
				}
			}
			isFree := c[w]&hdrFree != 0
			if isFree {
				if prevFree {
					t.Fatalf("chunk %d word %d: two free records in a row", ci, w)
				}
				freeWords += int64(size)
				onList[l] = false
			}
			prevFree = isFree
			w += size
		}
	}
	walk := func(h uint32) {
		for prev := uint32(0); h != 0; {
			c, w := a.at(h - 1)
			if uint32(c[w+2]) != prev {
				t.Fatalf("free record %d: prev link %d; want %d", h-1, c[w+2], prev)
			}
			seen, ok := onList[h-1]
			if !ok || seen {
				t.Fatalf("free list holds %d: free %v, twice %v", h-1, ok, seen)
			}
			onList[h-1] = true
			prev, h = h, uint32(c[w+1])
		}
	}
	for s := range a.free {
		if (a.free[s] != 0) != (a.sizes[s/64]&(1<<(s%64)) != 0) {
			t.Fatalf("size %d: list head %d, bitmap disagrees", s, a.free[s])
		}
		walk(a.free[s])
	}
	for _, h := range a.large {
		walk(h)
	}
	for l, seen := range onList {
		if !seen {
			t.Fatalf("free record %d is on no list", l)
		}
	}
	if freeWords != a.freeWords {
		t.Fatalf("free records hold %d words; counted %d", freeWords, a.freeWords)
	}
}

// TestRandomOperationsKeepInvariants runs inserts, resizes and deletes of
// keys and Ext parts of many sizes against a map model, checking the arena
// and every key after each phase.
func TestRandomOperationsKeepInvariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var s Shard
	model := map[string]Entry{}
	phases := 30
	if raceEnabled {
		phases = 8
	}
	for phase := 0; phase < phases; phase++ {
		for step := 0; step < 2000; step++ {
			k := fmt.Sprintf("%s%d", strings.Repeat("k", rng.IntN(40)), rng.IntN(3000))
			if rng.IntN(4) == 0 {
				_, want := model[k]
				if got := s.Delete([]byte(k), t0); got != want {
					t.Fatalf("Delete(%q) = %v; want %v", k, got, want)
				}
				delete(model, k)
				continue
			}
			e := Entry{Algo: 1 + uint8Of(rng.IntN(5)), Expire: t0 + 1 + rng.Int64N(100)}
			e.State[rng.IntN(3)] = rng.Int64()
			if rng.IntN(3) == 0 {
				e.Ext = make([]int64, rng.IntN(600))
				for i := range e.Ext {
					e.Ext[i] = rng.Int64()
				}
			}
			if len(e.Ext) == 0 {
				e.Ext = nil
			}
			put(t, &s, k, e, t0)
			model[k] = e
		}
		checkArena(t, &s.arena)
		if s.idx.n != len(model) {
			t.Fatalf("phase %d: index %d keys, model %d", phase, s.idx.n, len(model))
		}
		for k, want := range model {
			if got, ok := get(&s, k, t0); !ok || !sameEntry(got, want) {
				t.Fatalf("phase %d: %q = %+v (%v); want %+v", phase, k, got.State, ok, want.State)
			}
		}
	}
	// Everything expires; the sweep takes it all and the arena is one free
	// record per chunk.
	for i := 0; i < 10_000 && s.stats.Keys > 0; i++ {
		s.Sweep(t0+1000, 20)
	}
	checkArena(t, &s.arena)
	if s.stats.Keys != 0 || s.arena.freeWords*8+int64(len(s.arena.chunks))*firstWord*8 > s.arena.words*8 {
		t.Fatalf("after the sweep: %+v", s.Stats())
	}
}

func uint8Of(n int) algorithms.Algo { return algorithms.Algo(n) }

// TestRecordThatNeverExpiresKeepsNoExpiryWord: an entry whose Expire is
// math.MaxInt64 (an override or a string without a TTL) is stored without
// an expiry word, one word less than the same entry with an expiry, and
// reads back, expiry included, and is never swept.
func TestRecordThatNeverExpiresKeepsNoExpiryWord(t *testing.T) {
	var s Shard
	key := []byte("ovr:quota:client:0000001") // 24 bytes: 3 words
	forever := Entry{Algo: algorithms.Override, Expire: math.MaxInt64, State: [3]int64{2}, Depleted: true}
	timed := forever
	timed.Expire = 1_000
	if a, b := layoutOf(len(key), &forever, 0).size, layoutOf(len(key), &timed, 0).size; a != 5 || b != 6 {
		t.Fatalf("records of %d and %d words; want 5 (header, state, key) and 6", a, b)
	}
	for i, e := range []Entry{forever, timed, {Algo: algorithms.Override, Expire: math.MaxInt64, State: [3]int64{math.MaxInt64, 7}}} {
		k := append(key[:len(key):len(key)], byte('a'+i))
		ref, _ := s.Find(k, 0)
		if err := s.Commit(ref, k, &e, 0); err != nil {
			t.Fatal(err)
		}
		if _, got := s.Find(k, 0); got.Expire != e.Expire || got.State != e.State || got.Algo != e.Algo || got.Depleted != e.Depleted {
			t.Fatalf("entry %d read back as %+v; want %+v", i, got, e)
		}
	}
	s.Sweep(math.MaxInt64-1, 1<<20)
	if n := s.Len(math.MaxInt64 - 1); n != 2 {
		t.Fatalf("after a sweep at the end of time %d entries; want the 2 that never expire", n)
	}
}
