package shard

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// extEntry is an entry with a variable part of n words (a log's ring, a
// concurrency limit's leases), numbered from first.
func extEntry(n int, first int64) Entry {
	ext := make([]int64, n)
	for i := range ext {
		ext[i] = first + int64(i)
	}
	return Entry{Algo: 6, Expire: t0 + 1_000_000, State: [3]int64{7}, Ext: ext}
}

// fillArena inserts 64-byte-key token buckets until the shard refuses one:
// records large enough that the arena, not the index, runs out first.
func fillArena(t *testing.T, s *Shard, prefix string, tat int64, depleted bool) int {
	t.Helper()
	return fill(t, s, prefix+"-"+string(make([]byte, 56)), tat, t0, depleted)
}

// TestGrowthAtTheLimitIsRefusedAndChangesNothing: at the limit, an existing
// key whose record must grow is refused like a new key, and keeps its
// entry; an entry that fits its record, or shrinks, is stored; once room is
// freed, the same growth goes through.
func TestGrowthAtTheLimitIsRefusedAndChangesNothing(t *testing.T) {
	var s Shard
	const limit = 1 << 20
	s.SetLimit(limit, NoEviction)
	put(t, &s, "grow", extEntry(10, 100), t0)
	fillArena(t, &s, "k", t0+1000, false)
	refused := s.stats.Refused

	ref, _ := s.Find([]byte("grow"), t0)
	big := extEntry(20_000, 500)
	if err := s.Commit(ref, []byte("grow"), &big, t0); !errors.Is(err, ErrOOM) {
		t.Fatalf("growing by 160 KB at the limit: %v; want ErrOOM", err)
	}
	if e, _ := get(&s, "grow", t0); !sameEntry(e, extEntry(10, 100)) {
		t.Fatalf("after the refused growth: %+v; want the entry unchanged", e)
	}
	if st := s.Stats(); st.Used() > limit || st.Refused != refused+1 {
		t.Fatalf("used %d of %d, refused %d (was %d)", st.Used(), limit, st.Refused, refused)
	}
	// The same size, and a smaller record, are never refused.
	put(t, &s, "grow", extEntry(10, 900), t0)
	put(t, &s, "grow", extEntry(3, 900), t0)
	if e, _ := get(&s, "grow", t0); !sameEntry(e, extEntry(3, 900)) {
		t.Fatalf("after shrinking: %+v", e)
	}
	// Freed room takes the growth: delete a run of neighbours.
	for i := 0; i < 6000; i++ {
		s.Delete([]byte(fmt.Sprintf("k-%s%06d", string(make([]byte, 56)), i)), t0)
	}
	put(t, &s, "grow", big, t0)
	if e, _ := get(&s, "grow", t0); !sameEntry(e, big) {
		t.Fatal("the growth after deletions did not store the entry")
	}
	if st := s.Stats(); st.Used() > limit {
		t.Fatalf("used %d of %d after growing into freed room", st.Used(), limit)
	}
	checkArena(t, &s.arena)
}

// TestGrowthEvictsOthersUnderVolatileTTLButNeverItself: under volatile-ttl
// a record that must grow makes room by evicting other, non-depleted
// entries, as a new key does, even when it is itself the entry nearest to
// its expiry; depleted entries stay. (The larger record must fit in the
// room one eviction frees, here a record of the same size: evicting small
// records one by one seldom frees a large run of words, so a record that
// grows by much is refused at the limit under either policy.)
func TestGrowthEvictsOthersUnderVolatileTTLButNeverItself(t *testing.T) {
	var s Shard
	const limit = 1 << 20
	s.SetLimit(limit, VolatileTTL)
	soon := extEntry(3, 1) // 8 words
	soon.Expire = t0 + 5   // the first candidate for eviction
	put(t, &s, "grow", soon, t0)
	for i := 0; ; i++ { // alternately depleted and not, until eviction starts
		e := tokenEntry(t0 + 1_000_000 + int64(i))
		e.Depleted = i%2 == 1
		k := fmt.Sprintf("k%s%06d", string(make([]byte, 56)), i)
		ref, _ := s.Find([]byte(k), t0)
		if err := s.Commit(ref, []byte(k), &e, t0); err != nil || s.stats.Evicted > 0 {
			break
		}
	}
	if _, ok := get(&s, "grow", t0); !ok {
		t.Fatal("filling evicted the growing key before it grew")
	}
	evicted := s.stats.Evicted
	grown := extEntry(5, 1) // 10 words, as a token bucket with a 64-byte key
	grown.Expire = soon.Expire
	put(t, &s, "grow", grown, t0)
	if e, ok := get(&s, "grow", t0); !ok || !sameEntry(e, grown) {
		t.Fatalf("grown key: %+v, present %v", e, ok)
	}
	if s.stats.Evicted == evicted {
		t.Fatal("the growth evicted nothing")
	}
	for i := 1; ; i += 2 {
		k := fmt.Sprintf("k%s%06d", string(make([]byte, 56)), i)
		if i > 2000 {
			break
		}
		if _, ok := get(&s, k, t0); !ok {
			t.Fatalf("depleted %d was evicted", i)
		}
	}
	if st := s.Stats(); st.Used() > limit {
		t.Fatalf("used %d of %d", st.Used(), limit)
	}
}

// TestReserveGivesRoomBeforeTheStateIsBuilt: Reserve gives an absent key a
// record with room and an existing one a larger record with its entry
// unchanged; the Ext it hands back has that capacity and aliases the
// record, so that a state written into it and committed stays in place.
// At the limit it refuses and changes nothing.
func TestReserveGivesRoomBeforeTheStateIsBuilt(t *testing.T) {
	var s Shard
	s.SetLimit(1<<20, NoEviction)
	ref, e := s.Find([]byte("new"), t0)
	e = Entry{Algo: 6, Expire: t0 + 100, State: [3]int64{0, 1}}
	if err := s.Reserve(&ref, []byte("new"), &e, 1000, t0); err != nil {
		t.Fatal(err)
	}
	if len(e.Ext) != 0 || cap(e.Ext) < 1000 || ref.Absent() {
		t.Fatalf("reserved new key: len %d cap %d absent %v", len(e.Ext), cap(e.Ext), ref.Absent())
	}
	used := s.Stats().Used()
	e.Ext = e.Ext[:1000]
	for i := range e.Ext {
		e.Ext[i] = int64(i)
	}
	if err := s.Commit(ref, []byte("new"), &e, t0); err != nil || s.Stats().Used() != used {
		t.Fatalf("commit into the reserved room: %v, used %d → %d", err, used, s.Stats().Used())
	}
	// An existing key moves to a larger record, its entry unchanged.
	put(t, &s, "old", extEntry(4, 40), t0)
	ref, e = s.Find([]byte("old"), t0)
	if err := s.Reserve(&ref, []byte("old"), &e, 500, t0); err != nil {
		t.Fatal(err)
	}
	if got, _ := get(&s, "old", t0); !sameEntry(got, extEntry(4, 40)) || cap(e.Ext) < 500 ||
		!slices.Equal(e.Ext, extEntry(4, 40).Ext) {
		t.Fatalf("reserved existing key: %+v, cap %d", got, cap(e.Ext))
	}
	// At the limit: refused, nothing changed.
	fillArena(t, &s, "k", t0+1000, false)
	ref, e = s.Find([]byte("old"), t0)
	if err := s.Reserve(&ref, []byte("old"), &e, 100_000, t0); !errors.Is(err, ErrOOM) {
		t.Fatalf("Reserve of 800 KB at the limit: %v", err)
	}
	ref, e = s.Find([]byte("absent"), t0)
	e = Entry{Algo: 6, Expire: t0 + 100, State: [3]int64{0, 1}}
	if err := s.Reserve(&ref, []byte("absent"), &e, 100_000, t0); !errors.Is(err, ErrOOM) {
		t.Fatalf("Reserve of a new 800 KB key at the limit: %v", err)
	}
	if _, ok := get(&s, "absent", t0); ok {
		t.Fatal("a refused Reserve created its key")
	}
	if got, _ := get(&s, "old", t0); !sameEntry(got, extEntry(4, 40)) {
		t.Fatalf("after a refused Reserve: %+v", got)
	}
	checkArena(t, &s.arena)
}

// TestPinnedRecordsAreNotEvicted: while pinned, through its moves, a
// record is left alone by eviction; unpinned, it is a candidate again.
func TestPinnedRecordsAreNotEvicted(t *testing.T) {
	var s Shard
	s.SetLimit(1<<20, VolatileTTL)
	soon := tokenEntry(t0 + 1)
	put(t, &s, "pinned", soon, t0)
	s.Pin([]byte("pinned"))
	put(t, &s, "pinned", extEntry(40, 0), t0) // moves to a larger record
	for i := 0; s.stats.Evicted < 2000; i++ {
		put(t, &s, fmt.Sprintf("k%06d", i), tokenEntry(t0+10+int64(i)), t0)
	}
	if _, ok := get(&s, "pinned", t0); !ok {
		t.Fatal("a pinned record was evicted")
	}
	s.Unpin([]byte("pinned"))
	put(t, &s, "pinned", soon, t0)
	for i := 0; ; i++ {
		put(t, &s, fmt.Sprintf("n%06d", i), tokenEntry(t0+1_000_000), t0)
		if _, ok := get(&s, "pinned", t0); !ok {
			break
		}
		if i > 100_000 {
			t.Fatal("the unpinned record, nearest to its expiry, was never evicted")
		}
	}
}
