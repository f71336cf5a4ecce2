package cluster

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/algorithms"
)

func gatherBatcher() *batcher {
	return &batcher{in: make(chan *submission, 64), stop: make(chan struct{}), quiet: quietFor}
}

// queued is a submission of n decisions, queued as the batcher's seq-th.
func queued(seq int64, n int) *submission {
	return &submission{reqs: make([]algorithms.Request, n), seq: seq}
}

// from is queued for a submission from client.
func from(client, seq int64, n int) *submission {
	s := queued(seq, n)
	s.client = client
	return s
}

func countOps(batch []*submission) (n int) {
	for _, s := range batch {
		n += s.len()
	}
	return n
}

// gatherFrom runs gather on batch as the loop does after draining it. It
// panics, rather than failing t, if gather's counts are not its batch's:
// the tests call it from goroutines too.
func gatherFrom(b *batcher, batch []*submission, room freed) []*submission {
	nops, size := 0, 0
	for _, s := range batch {
		nops += s.len()
		size += s.size()
	}
	batch, n, sz := b.gather(batch, nops, size, room)
	want, wantSize := 0, 0
	for _, s := range batch {
		want += s.len()
		wantSize += s.size()
	}
	if n != want || sz != wantSize {
		panic("gather's counts do not match its batch")
	}
	return batch
}

func TestGatherWaitsForTheClientsTheReleaseAnswered(t *testing.T) {
	b := gatherBatcher()
	// A release of 16 operations when 10 submissions had been queued; its
	// bound lies far ahead, so that only the arrivals end the wait.
	room := freed{ops: 16, seq: 10, at: time.Now().Add(time.Minute), took: time.Hour}
	batch := []*submission{queued(3, 4)} // queued before the release: not one of its clients
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		b.in <- queued(8, 8)  // also from before the release: taken, not counted
		b.in <- queued(11, 5) // answered clients coming back
		b.in <- queued(12, 7)
		b.in <- queued(13, 4) // 16 of 16 back: all, enough
		b.in <- queued(14, 1) // left for the next entry
	}()
	done := make(chan []*submission)
	go func() { done <- gatherFrom(b, batch, room) }()
	var got []*submission
	select {
	case got = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("gather still waits 10 s after all the answered operations came back")
	}
	<-sent
	if len(got) != 5 || countOps(got) != 28 {
		t.Fatalf("gather took %d submissions, %d operations; want 5, 28 (the queued one, the older arrival, and the three that brought 16 of 16 back)", len(got), countOps(got))
	}
	if len(b.in) != 1 || (<-b.in).seq != 14 {
		t.Fatal("gather took more than it waited for")
	}
}

func TestGatherReturnsAtOnceWhenTheClientsAreBack(t *testing.T) {
	b := gatherBatcher()
	b.in <- queued(20, 1)
	room := freed{ops: 8, seq: 10, at: time.Now().Add(time.Minute), took: time.Hour}
	got := gatherFrom(b, []*submission{queued(11, 6), queued(12, 2)}, room) // 8 of 8 already drained
	if len(got) != 2 || len(b.in) != 1 {
		t.Fatalf("with all the answered operations already in the batch, gather took %d submissions and left %d queued; want 2 and 1", len(got), len(b.in))
	}
	got = gatherFrom(b, []*submission{queued(5, 1)}, freed{ops: 8, seq: 10, at: time.Now().Add(-time.Second), took: time.Hour})
	if len(got) != 1 || len(b.in) != 1 {
		t.Fatalf("a second after the release, gather took %d submissions and left %d queued; want 1 and 1 (its bound had passed)", len(got), len(b.in))
	}
}

func TestGatherWaitsNoLongerThanItsBound(t *testing.T) {
	for _, c := range []struct {
		took, bound time.Duration
	}{
		{time.Hour, gatherFor},                           // a slow entry: gatherFor
		{400 * time.Microsecond, 100 * time.Microsecond}, // a fast one: a quarter of its time
	} {
		b := gatherBatcher()
		at := time.Now()
		got := gatherFrom(b, []*submission{queued(5, 1)}, freed{ops: 64, seq: 10, at: at, took: c.took})
		waited := time.Since(at)
		if len(got) != 1 {
			t.Fatalf("nothing arrived, yet gather returned %d submissions", len(got))
		}
		if waited < c.bound || waited > 5*time.Second {
			t.Fatalf("after an entry that took %v, gather waited %v; want at least its bound %v, and returned then", c.took, waited, c.bound)
		}
	}
}

func TestGatherWaitsOnWhileTheAnsweredClientsComeBack(t *testing.T) {
	// An entry of 400 µs answered clients 1 and 2: gather waits 100 µs
	// for the first of them, and, once one is back, until 400 µs after
	// the answer, at the latest (the quiet gap is an hour here).
	b := gatherBatcher()
	b.quiet = time.Hour
	at := time.Now()
	room := freed{ops: 64, clients: []int64{1, 2}, seq: 10, at: at, took: 400 * time.Microsecond}
	got := gatherFrom(b, []*submission{from(2, 11, 1)}, room)
	if waited := time.Since(at); len(got) != 1 || waited < room.took || waited > 5*time.Second {
		t.Fatalf("with an answered client back, gather returned %d submissions after %v; want 1, after the entry's apply time %v", len(got), waited, room.took)
	}
}

func TestGatherWaitsOnOnlyForTheClientsAnswered(t *testing.T) {
	room := freed{ops: 64, clients: []int64{3, 5, 9}, seq: 10, at: time.Unix(100, 0), took: time.Second}
	first := room.at.Add(100 * time.Microsecond)
	last := room.at.Add(gatherFor)
	before := time.Now()
	for _, c := range []struct {
		s    *submission
		more bool
	}{
		{from(5, 11, 1), true},  // answered
		{from(9, 12, 1), true},  // answered, the last in the list
		{from(4, 13, 1), false}, // not answered: an arrival of its own
		{from(10, 14, 1), false},
		{queued(15, 1), false}, // from a caller that did not say who it is
	} {
		g := gathering{room: room, until: first, last: last}
		until := g.arrive(c.s, time.Hour)
		if g.back != 1 || until != g.until {
			t.Errorf("client %d: arrive counted %d back and returned %v with the wait ending at %v; want 1, and the same end", c.s.client, g.back, until, g.until)
		}
		if !c.more && until != first {
			t.Errorf("client %d, not answered, moved the end of the wait from %v to %v", c.s.client, first, until)
		}
		if c.more && until != last {
			t.Errorf("client %d, answered, with an hour's quiet gap, moved the end of the wait to %v; want its bound %v", c.s.client, until, last)
		}
	}
	// A quiet gap ends where it ends, if that is before the bound.
	g := gathering{room: room, last: before.Add(time.Hour)}
	soon := g.arrive(from(3, 16, 1), time.Millisecond)
	if soon.Before(before.Add(time.Millisecond)) || soon.After(time.Now().Add(time.Millisecond)) {
		t.Errorf("an answered client moved the end of the wait to %v; want a millisecond from its arrival (%v)", soon, before)
	}
}

func TestGatherWaitsForTheRestOnceHalfTheAnsweredAreBack(t *testing.T) {
	at := time.Now().Add(time.Minute) // the bounds lie ahead: only the counts move them
	room := freed{ops: 128, clients: []int64{1, 2, 3, 4, 5, 6, 7, 8}, seq: 10, at: at, took: time.Hour}
	g := room.gathering()
	first := at.Add(gatherFor)
	if g.until != first || g.last != first || g.rest != at.Add(gatherRest) {
		t.Fatalf("after an entry of an hour, the wait ends at +%v, at most +%v, and +%v once half are back; want +%v, +%v and +%v",
			g.until.Sub(at), g.last.Sub(at), g.rest.Sub(at), gatherFor, gatherFor, gatherRest)
	}
	g.arrive(from(20, 11, 64), 0) // as many operations as half, from a client not answered
	for i := int64(1); i <= 3; i++ {
		g.arrive(from(i, 11+i, 16), 0)
	}
	g.arrive(from(4, 15, 15), 0) // 63 in all, one short of the half
	g.arrive(from(9, 16, 16), 0) // not answered either
	if g.until != first {
		t.Fatalf("with 63 of 128 answered operations back, and others, the wait ends at +%v; want +%v", g.until.Sub(at), gatherFor)
	}
	g.arrive(from(5, 17, 1), 0) // 64 of 128: half
	if g.until != g.rest {
		t.Fatalf("with half the answered operations back, the wait ends at +%v; want +%v", g.until.Sub(at), gatherRest)
	}
	g.arrive(from(6, 18, 1), time.Hour) // a quiet gap, bounded by last, never shortens it
	if g.until != g.rest {
		t.Fatalf("an answered client after the half moved the end of the wait to +%v; want +%v", g.until.Sub(at), gatherRest)
	}
	if r := (freed{at: at, took: 800 * time.Microsecond}).gathering().rest; r != at.Add(800*time.Microsecond) {
		t.Errorf("after an entry of 800 µs, the wait once half are back ends at +%v; want +800µs, the entry's time", r.Sub(at))
	}

	// Too few operations answered for half of them to say anything: an
	// open-loop load brings some of them back by chance.
	small := freed{ops: halfAtLeast - 2, clients: []int64{1, 2}, seq: 10, at: at, took: time.Hour}
	g = small.gathering()
	g.arrive(from(1, 11, small.ops), 0)
	if g.until != first {
		t.Errorf("with all %d answered operations back (fewer than %d), the wait ends at +%v; want +%v", small.ops, halfAtLeast, g.until.Sub(at), gatherFor)
	}
}

func TestGatherWaitsOutTheEntrysTimeOnceHalfAreBack(t *testing.T) {
	// An entry of 2 ms answered 128 operations; half of them are back at
	// once, so gather waits for the rest until 2 ms after the answer, not
	// the quarter (500 µs) it waits for the first of them.
	b := gatherBatcher()
	at := time.Now()
	room := freed{ops: 128, clients: []int64{1, 2}, seq: 10, at: at, took: 2 * time.Millisecond}
	got := gatherFrom(b, []*submission{from(1, 11, 64)}, room)
	if waited := time.Since(at); len(got) != 1 || waited < room.took || waited > 5*time.Second {
		t.Fatalf("with half the answered operations back, gather returned %d submissions after %v; want 1, after the entry's apply time %v", len(got), waited, room.took)
	}
}

func TestGatherStopsWithTheBatcherOrAFullEntry(t *testing.T) {
	b := gatherBatcher()
	close(b.stop)
	room := freed{ops: 64, seq: 10, at: time.Now().Add(time.Minute), took: time.Hour}
	done := make(chan []*submission)
	go func() { done <- gatherFrom(b, []*submission{queued(5, 1)}, room) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("gather still waits 10 s after the batcher stopped")
	}

	b = gatherBatcher()
	b.in <- queued(11, maxOps) // a full entry, though 2×maxOps were answered
	b.in <- queued(12, 1)
	got := gatherFrom(b, nil, freed{ops: 2 * maxOps, seq: 10, at: time.Now().Add(time.Minute), took: time.Hour})
	if countOps(got) != maxOps || len(b.in) != 1 {
		t.Fatalf("gather took %d operations and left %d submissions; want a full entry (%d) and 1", countOps(got), len(b.in), maxOps)
	}
}

func TestWindowAcquireTellsTheReleaseThatMadeRoom(t *testing.T) {
	w := &window{limit: 1, wake: make(chan struct{}, 1)}
	room, ok := w.acquire(nil)
	if !ok || !reflect.DeepEqual(room, freed{}) {
		t.Fatalf("acquire with room = %+v, %v; want nothing to gather, true", room, ok)
	}
	at := time.Unix(100, 0)
	want := freed{ops: 7, clients: []int64{4, 8}, seq: 42, at: at, took: 3 * time.Millisecond}
	// The window is full, so a second acquire waits, unless the release
	// below comes first; then it had room, and says nothing. Try until it
	// waited.
	for try := 0; ; try++ {
		got := make(chan freed)
		go func() {
			room, _ := w.acquire(nil)
			got <- room
		}()
		time.Sleep(time.Duration(try+1) * time.Millisecond)
		w.release(want.took, at, true, want.ops, want.seq, want.clients)
		room = <-got
		if reflect.DeepEqual(room, want) {
			break
		}
		if !reflect.DeepEqual(room, freed{}) || try == 20 {
			t.Fatalf("acquire after a release returned %+v; want that release's, %+v", room, want)
		}
	}
	w.release(time.Millisecond, at, false, 9, 44, []int64{1})
	if !reflect.DeepEqual(w.last, freed{}) {
		t.Fatalf("after a failed entry's release, the window hands on %+v; want nothing to gather: its clients were refused", w.last)
	}
}

// An entry remembers the connections it answered by their CLIENT ID, from
// the event loop through DecideAsync: gather waits on only for those.
func TestEntryRemembersTheClientsItAnswered(t *testing.T) {
	g := newGroup(t, 1)
	m := g.leader()
	ctx := context.Background()
	conn := m.client(t).Conn()
	defer conn.Close()
	id, err := conn.ClientID(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	w := &m.node.batcher.window
	for try := 0; ; try++ {
		if err := connDo(ctx, conn, "RL.TOKEN", "k", "10/s", 20).Err(); err != nil {
			t.Fatal(err)
		}
		// The entry is released before its clients are answered; another
		// entry (an expiry's) may have been released since: try again.
		w.mu.Lock()
		clients := w.last.clients
		w.mu.Unlock()
		if slices.Equal(clients, []int64{id}) {
			return
		}
		if try == 20 {
			t.Fatalf("after 20 decisions from client %d the last entry answered clients %v; want [%d]", id, clients, id)
		}
	}
}
