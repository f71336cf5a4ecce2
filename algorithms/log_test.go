package algorithms

import (
	"math"
	"slices"
	"testing"
)

func TestLogEntryLeavesAtItsInstantPlusWindow(t *testing.T) {
	// limit 3 per 10s.
	runScript(t, &logLimiter{l: SlidingLog{Limit: 3, Window: int64(10 * sec)}}, []step{
		{0, 1, ok(3, 2, 10*sec)},
		{2 * sec, 2, ok(3, 0, 12*sec-2*sec)},
		{5 * sec, 1, no(3, 0, 5*sec, 7*sec)}, // the t0 entry leaves at t0+10s
		{10*sec - 1, 1, no(3, 0, 1, 2*sec+1)},
		{10 * sec, 1, ok(3, 0, 10*sec)}, // it counts while t > now − window: gone exactly now
		{10 * sec, 2, no(3, 0, 2*sec, 10*sec)},
		{12 * sec, 0, ok(3, 2, 8*sec)}, // both t0+2s entries left at t0+12s
		{20*sec - 1, 0, ok(3, 2, 1)},
		{20 * sec, 0, ok(3, 3, 0)}, // empty: absent
	})
}

func TestLogDenialNeedsEnoughOldEntriesToLeave(t *testing.T) {
	runScript(t, &logLimiter{l: SlidingLog{Limit: 4, Window: int64(sec)}}, []step{
		{0, 1, ok(4, 3, sec)},
		{100 * ms, 1, ok(4, 2, sec)},
		{200 * ms, 1, ok(4, 1, sec)},
		{300 * ms, 1, ok(4, 0, sec)},
		{400 * ms, 3, no(4, 0, 800*ms, 900*ms)},     // the third oldest leaves at 1.2s
		{1200 * ms, 3, ok(4, 0, sec)},               // and then it fits
		{1200 * ms, 5, no(4, 0, -1, sec)},           // n > limit never fits
		{1200*ms + 1, 1, no(4, 0, 100*ms-1, sec-1)}, // the t0+300ms entry leaves at 1.3s
	})
}

func TestLogRefundRemovesTheNewest(t *testing.T) {
	l := &logLimiter{l: SlidingLog{Limit: 5, Window: int64(sec)}}
	runScript(t, l, []step{
		{0, 0, ok(5, 5, 0)},
		{0, -1, ok(5, 5, 0)},
		{0, 2, ok(5, 3, sec)},
		{500 * ms, 2, ok(5, 1, sec)},
		{600 * ms, -1, ok(5, 2, 900*ms)}, // one of the t0+500ms entries goes
		{600 * ms, -1, ok(5, 3, 400*ms)}, // the other: the newest is now at t0
		{600 * ms, math.MinInt64, ok(5, 5, 0)},
	})
	if l.s.Count != 0 || l.s.Ring != nil {
		t.Fatalf("after refunding everything: %+v; want the zero state", l.s)
	}
}

func TestLogRingWrapsGrowsAndShrinks(t *testing.T) {
	log := SlidingLog{Limit: 100, Window: int64(sec)}
	var s LogState
	now := t0
	// One unit every 20ms: 50 in a window, so the ring wraps many times.
	for i := 0; i < 1000; i++ {
		var r Result
		r, s = log.Take(s, now, 1)
		if !r.Allowed || (i >= 50 && r.Remaining != 50) {
			t.Fatalf("unit %d: %s; want admitted with 50 remaining", i, fmtResult(r))
		}
		now += int64(20 * ms)
	}
	if c := len(s.Ring); c > 100 || c < 51 {
		t.Fatalf("ring capacity %d for 50 entries under limit 100", c)
	}
	want := make([]int64, 0, 50)
	for i := 950; i < 1000; i++ {
		want = append(want, t0+int64(i)*int64(20*ms))
	}
	if got := s.Entries(nil); !slices.Equal(got, want) {
		t.Fatalf("entries after wrapping = %v; want the 50 newest", got)
	}
	// A burst to the limit, then quiet: the ring shrinks on the next write.
	_, s = log.Take(s, now, 50)
	big := len(s.Ring)
	now += int64(10 * sec)
	_, s = log.Take(s, now, 1)
	if len(s.Ring) >= big || s.Count != 1 {
		t.Fatalf("ring of %d entries after a burst and a quiet spell, was %d", len(s.Ring), big)
	}
}

func TestLogPeekAndDenialWriteNothing(t *testing.T) {
	log := SlidingLog{Limit: 2, Window: int64(sec)}
	_, s := log.Take(LogState{}, t0, 2)
	ring := slices.Clone(s.Ring)
	log.Take(s, t0+int64(500*ms), 1) // denied
	log.Take(s, t0+int64(500*ms), 0) // peek
	log.Take(s, t0+int64(2*sec), 0)  // peek with every entry gone
	if !slices.Equal(s.Ring, ring) {
		t.Fatalf("ring changed by a denial or a peek: %v; was %v", s.Ring, ring)
	}
}

func TestLogClockGoingBackwardsKeepsTheRingSorted(t *testing.T) {
	log := SlidingLog{Limit: 3, Window: int64(sec)}
	_, s := log.Take(LogState{}, t0, 1)
	r, s := log.Take(s, t0-int64(5*sec), 1) // logged at t0, not before it
	if !r.Allowed || r.ResetAfter != int64(6*sec) {
		t.Fatalf("Take(t0-5s) = %s; want admitted, the entry counting until t0+1s", fmtResult(r))
	}
	if got := s.Entries(nil); !slices.Equal(got, []int64{t0, t0}) {
		t.Fatalf("entries = %v; want [t0 t0]", got)
	}
}

func TestLogOverflowSizedParametersAndBrokenStates(t *testing.T) {
	log := SlidingLog{Limit: 3, Window: math.MaxInt64}
	r, s := log.Take(LogState{}, t0, 3)
	if !r.Allowed || r.ResetAfter != math.MaxInt64-t0 {
		t.Fatalf("window MaxInt64: %s", fmtResult(r))
	}
	if r, _ := log.Take(s, math.MaxInt64-1, 1); r.Allowed || r.RetryAfter != 1 {
		t.Fatalf("window MaxInt64 near the end of time: %s", fmtResult(r))
	}
	// n far above the limit is refused without touching memory.
	if r, _ := (SlidingLog{Limit: math.MaxInt64, Window: 1}).Take(LogState{}, t0, 0); r.Remaining != math.MaxInt64 {
		t.Fatalf("peek under limit MaxInt64: %s", fmtResult(r))
	}
	// A state that is not a ring (a corrupt restore) counts as empty.
	for _, bad := range []LogState{
		{Head: 5, Count: 1, Ring: make([]int64, 2)},
		{Head: 0, Count: 3, Ring: make([]int64, 2)},
		{Head: -1, Count: 1, Ring: make([]int64, 2)},
	} {
		r, s := log.Take(bad, t0, 1)
		if !r.Allowed || r.Remaining != 2 || s.Count != 1 {
			t.Fatalf("Take on %+v = %s, %+v; want a fresh log", bad, fmtResult(r), s)
		}
	}
}

func BenchmarkLogTake(b *testing.B) {
	log := SlidingLog{Limit: 1000, Window: int64(sec)}
	var s LogState
	now := t0
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		now += int64(ms) // a steady 1000/s: the ring stays full and wraps
		_, s = log.Take(s, now, 1)
	}
}

// TestLogDraftDecidesLikeTakesInARow: decisions taken on one draft at one
// instant, then applied once, give the results and the entries that the
// same decisions give as Takes one after another, whatever their limits,
// windows and costs, and the base ring is not written before Apply.
func TestLogDraftDecidesLikeTakesInARow(t *testing.T) {
	rng := newRand(35)
	for trial := 0; trial < 2000; trial++ {
		var s LogState
		now := t0
		for k := int(rng.int63n(40)); k > 0; k-- { // a history: units logged over 3 s
			now += rng.int63n(int64(100 * ms))
			_, s = SlidingLog{Limit: 50, Window: int64(3 * sec)}.Take(s, now, 1+rng.int63n(3))
		}
		now += rng.int63n(int64(2 * sec))
		seq := s.Clone()
		base := s.Clone()
		d := NewLogDraft(s)
		for m := 1 + int(rng.int63n(12)); m > 0; m-- {
			l := SlidingLog{Limit: 1 + rng.int63n(60), Window: int64(1+int(rng.int63n(4))) * int64(sec)}
			n := rng.int63n(8) - 2
			want, next := l.Take(seq, now, n)
			seq = next
			got := l.Decide(&d, now, n)
			if got != want {
				t.Fatalf("trial %d: Decide(n=%d, %+v) = %s; Take gave %s", trial, n, l, fmtResult(got), fmtResult(want))
			}
			if !slices.Equal(s.Ring, base.Ring) {
				t.Fatalf("trial %d: Decide wrote into the base ring", trial)
			}
		}
		applied := d.Apply(60)
		if got, want := applied.Entries(nil), seq.Entries(nil); !slices.Equal(got, want) {
			t.Fatalf("trial %d: applied draft holds %v; Takes in a row %v", trial, got, want)
		}
		if applied.Count == 0 && applied.Ring != nil {
			t.Fatalf("trial %d: an empty draft applied to %+v; want the zero state", trial, applied)
		}
	}
}

// TestLogGrowsWithinTheRingsCapacity: a ring whose backing array has room
// grows (and shrinks) in place, its entries in order, allocating nothing:
// what lets a keyspace give a log its room before building it.
func TestLogGrowsWithinTheRingsCapacity(t *testing.T) {
	log := SlidingLog{Limit: 1000, Window: int64(sec)}
	backing := make([]int64, 0, 1000)
	s := LogState{Ring: backing}
	now := t0
	for i := 0; i < 900; i++ {
		now += int64(ms) / 10
		allocs := testing.AllocsPerRun(1, func() { _, s = log.Take(s, now, 1) })
		_, s = log.Take(s, now, -1) // AllocsPerRun runs it twice
		if allocs != 0 || &s.Ring[:1][0] != &backing[:1][0] {
			t.Fatalf("unit %d: %v allocations, ring of %d in the same array: %v", i, allocs, len(s.Ring), &s.Ring[:1][0] == &backing[:1][0])
		}
	}
	if s.Count != 900 || s.Entries(nil)[899] != now {
		t.Fatalf("after 900 units: %d entries, newest %d; want 900, %d", s.Count, s.Entries(nil)[899], now)
	}
	d := NewLogDraft(s)
	log.Decide(&d, now+int64(2*sec), 1) // everything left: the ring is mostly empty
	if want := d.RingLen(log.Limit); want >= int64(len(s.Ring)) {
		t.Fatalf("RingLen after the log emptied = %d; want less than %d", want, len(s.Ring))
	}
	if s = d.Apply(log.Limit); s.Count != 1 || &s.Ring[:1][0] != &backing[:1][0] {
		t.Fatalf("shrunk log: %+v; want one entry in the same array", s.Count)
	}
}
