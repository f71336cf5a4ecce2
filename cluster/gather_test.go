package cluster

import (
	"testing"
	"time"

	"github.com/sluice-rl/sluice/algorithms"
)

func gatherBatcher() *batcher {
	return &batcher{in: make(chan *submission, 64), stop: make(chan struct{})}
}

// queued is a submission of n decisions, queued as the batcher's seq-th.
func queued(seq int64, n int) *submission {
	return &submission{reqs: make([]algorithms.Request, n), seq: seq}
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
		b.in <- queued(12, 7) // 12 of 16 back: 3/4, enough
		b.in <- queued(13, 1) // left for the next entry
	}()
	done := make(chan []*submission)
	go func() { done <- gatherFrom(b, batch, room) }()
	var got []*submission
	select {
	case got = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("gather still waits 10 s after 3/4 of the answered operations came back")
	}
	<-sent
	if len(got) != 4 || countOps(got) != 24 {
		t.Fatalf("gather took %d submissions, %d operations; want 4, 24 (the queued one, the older arrival, and the two that brought 12 of 16 back)", len(got), countOps(got))
	}
	if len(b.in) != 1 || (<-b.in).seq != 13 {
		t.Fatal("gather took more than it waited for")
	}
}

func TestGatherReturnsAtOnceWhenTheClientsAreBack(t *testing.T) {
	b := gatherBatcher()
	b.in <- queued(20, 1)
	room := freed{ops: 8, seq: 10, at: time.Now().Add(time.Minute), took: time.Hour}
	got := gatherFrom(b, []*submission{queued(11, 6)}, room) // 6 of 8 already drained
	if len(got) != 1 || len(b.in) != 1 {
		t.Fatalf("with 3/4 of the answered operations already in the batch, gather took %d submissions and left %d queued; want 1 and 1", len(got), len(b.in))
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
	if !ok || room != (freed{}) {
		t.Fatalf("acquire with room = %+v, %v; want nothing to gather, true", room, ok)
	}
	at := time.Unix(100, 0)
	want := freed{ops: 7, seq: 42, at: at, took: 3 * time.Millisecond}
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
		w.release(want.took, at, true, want.ops, want.seq)
		room = <-got
		if room == want {
			break
		}
		if room != (freed{}) || try == 20 {
			t.Fatalf("acquire after a release returned %+v; want that release's, %+v", room, want)
		}
	}
	w.release(time.Millisecond, at, false, 9, 44)
	if w.last != (freed{}) {
		t.Fatalf("after a failed entry's release, the window hands on %+v; want nothing to gather: its clients were refused", w.last)
	}
}
