package process

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercentForKeepsTheGoalAboveTheFloor(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		floor, live uint64
		base, want  int
	}{
		{16 * mb, 2 * mb, 100, 450},        // the minimum heap: 4 MB × 4.5 = 18 MB = 2 + 16
		{16 * mb, 3 * mb, 100, 475},        // 4 MB × 4.75 = 19 MB
		{16 * mb, 4 * mb, 100, 400},        // both terms: 4 × 5 = 20 MB
		{16 * mb, 8 * mb, 100, 200},        // live × 3 = 24 MB
		{16 * mb, 6 * mb, 100, 267},        // rounded up: live × 3.67 ≥ 22 MB
		{16 * mb, 16 * mb, 100, 100},       // GOGC's goal is the floor's
		{16 * mb, 400 * mb, 100, 100},      // a large heap: GOGC decides
		{16 * mb, 1 << 30, 100, 100},       // 1 GB
		{16 * mb, 2 * mb, 1000, 1000},      // a GOGC above the floor's stays
		{16 * mb, 4 * mb, 200, 400},        // GOGC 200 against 400
		{16 * mb, 100 * mb / 2, 50, 50},    // a low GOGC on a large heap stays
		{16 * mb, 0, 100, 425},             // before the first collection: 1 MB assumed
		{16 * mb, 1 * mb, 100, 425},        // 4 MB × 4.25 = 17 MB
		{16 * mb, 33 * mb / 2, 100, 100},   // floor/live under 100 %
		{64 * mb, 1 * mb, 100, 1625},       // 4 MB × 16.25 = 65 MB
		{1 << 40, 1 * mb, 100, 100000},     // bounded
		{16 * mb, 1 << 20, 100000, 100000}, // GOGC at the bound
	} {
		if got := percentFor(c.floor, c.live, c.base); got != c.want {
			t.Errorf("percentFor(floor %d, live %d, base %d) = %d; want %d", c.floor, c.live, c.base, got, c.want)
		}
	}
}

// TestHeapFloorRaisesTheGoalOfASmallHeap: with the floor on, the collector's
// goal stays at least the floor above the live heap after collections, and
// stopping the floor gives GOGC's percentage back.
func TestHeapFloorRaisesTheGoalOfASmallHeap(t *testing.T) {
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	const floor = 64 << 20
	stop := startHeapFloor(floor)
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}, {Name: "/gc/heap/live:bytes"}}
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC() // the finalizer of the cycle's marker runs after it
		time.Sleep(10 * time.Millisecond)
		metrics.Read(s)
		goal, live := s[0].Value.Uint64(), s[1].Value.Uint64()
		if goal >= live+floor*7/8 { // within the adjustment's eighth
			t.Logf("live heap %d bytes, goal %d bytes", live, goal)
			if goal > live+floor*3/2 {
				t.Fatalf("goal %d bytes with a live heap of %d: far above the floor %d", goal, live, floor)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("goal %d bytes with a live heap of %d; want at least %d above it", goal, live, floor)
		}
	}
	// Collections keep it there.
	for i := 0; i < 3; i++ {
		runtime.GC()
	}
	time.Sleep(10 * time.Millisecond)
	metrics.Read(s)
	if goal, live := s[0].Value.Uint64(), s[1].Value.Uint64(); goal < live+floor*7/8 {
		t.Fatalf("after more collections: goal %d, live %d; want the floor kept", goal, live)
	}
	stop()
	stopped = true
	if pct := debug.SetGCPercent(100); pct != 100 {
		t.Fatalf("after stop the percentage is %d; want GOGC's 100 back", pct)
	}
}

// TestHeapFloorOffLeavesTheCollectorAlone: a floor of 0, or GOGC=off,
// changes nothing.
func TestHeapFloorOffLeavesTheCollectorAlone(t *testing.T) {
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	startHeapFloor(0)()
	if pct := debug.SetGCPercent(100); pct != 100 {
		t.Fatalf("floor 0: percentage %d; want 100", pct)
	}
	debug.SetGCPercent(-1)
	stop := startHeapFloor(64 << 20)
	runtime.GC()
	time.Sleep(10 * time.Millisecond)
	if pct := debug.SetGCPercent(-1); pct != -1 {
		t.Fatalf("GOGC=off: percentage %d; want it left off", pct)
	}
	stop()
}
