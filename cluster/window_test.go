package cluster

import (
	"testing"
	"time"
)

// fill takes the window to its limit, as the batcher does under load.
func fill(t *testing.T, w *window) {
	t.Helper()
	for w.inflight < w.limit {
		if _, ok := w.acquire(nil); !ok {
			t.Fatal("acquire = false with room in flight")
		}
	}
}

func TestWindowGrowsWhileApplyTimeStaysNearItsLeast(t *testing.T) {
	w := &window{limit: 2, wake: make(chan struct{}, 1)}
	t0 := time.Unix(0, 0)
	for i := 0; i < 40; i++ {
		fill(t, w)
		w.release(time.Millisecond, t0.Add(time.Duration(i)*time.Millisecond), true, 0, 0, nil)
	}
	if w.limit != maxInflight {
		t.Fatalf("after 40 entries of 1 ms each with the window full, limit = %d; want %d", w.limit, maxInflight)
	}
}

func TestWindowShrinksWhenEntriesQueueInTheGroup(t *testing.T) {
	w := &window{limit: maxInflight, wake: make(chan struct{}, 1)}
	t0 := time.Unix(0, 0)
	fill(t, w)
	w.release(time.Millisecond, t0, true, 0, 0, nil) // the least: 1 ms
	for i := 1; i < 40; i++ {
		fill(t, w)
		w.release(5*time.Millisecond, t0.Add(time.Duration(i)*time.Millisecond), true, 0, 0, nil)
	}
	if w.limit != 1 {
		t.Fatalf("after entries of 5 ms against a least of 1 ms, limit = %d; want 1", w.limit)
	}
}

func TestWindowDoesNotGrowWhenNotFull(t *testing.T) {
	w := &window{limit: 2, wake: make(chan struct{}, 1)}
	t0 := time.Unix(0, 0)
	for i := 0; i < 20; i++ {
		w.acquire(nil) // one entry at a time: the limit is never reached
		w.release(time.Millisecond, t0.Add(time.Duration(i)*time.Millisecond), true, 0, 0, nil)
	}
	if w.limit != 2 {
		t.Fatalf("one entry at a time, limit = %d; want 2 (unchanged)", w.limit)
	}
}

func TestWindowFailedEntryLeavesLimit(t *testing.T) {
	w := &window{limit: 2, wake: make(chan struct{}, 1)}
	fill(t, w)
	w.release(time.Hour, time.Unix(0, 0), false, 0, 0, nil)
	if w.limit != 2 || w.inflight != 1 || w.avg != 0 {
		t.Fatalf("after a failed entry limit %d, inflight %d, avg %v; want 2, 1, 0", w.limit, w.inflight, w.avg)
	}
}

func TestWindowAcquireWaitsForARelease(t *testing.T) {
	w := &window{limit: 1, wake: make(chan struct{}, 1)}
	fill(t, w)
	got := make(chan bool)
	go func() { _, ok := w.acquire(nil); got <- ok }()
	select {
	case <-got:
		t.Fatal("acquire returned with the window full")
	case <-time.After(20 * time.Millisecond):
	}
	w.release(time.Millisecond, time.Unix(0, 0), true, 0, 0, nil)
	select {
	case ok := <-got:
		if !ok {
			t.Fatal("acquire = false after a release")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("acquire still waits 5 s after a release")
	}
	stop := make(chan struct{})
	close(stop)
	w.limit = 1
	if _, ok := w.acquire(stop); ok {
		t.Fatal("acquire = true with the window full and stop closed")
	}
}
