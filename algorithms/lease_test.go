package algorithms

import (
	"math"
	"testing"
	"time"
)

// leases drives a LeaseLimit the way a keyspace does: the state is kept
// when an acquire is admitted or a release released something.
type leases struct {
	l LeaseLimit
	s LeaseState
}

func (ls *leases) do(at time.Duration, id uint64, op int64) Result {
	r, s := ls.l.Take(ls.s, t0+int64(at), id, op)
	if r.Allowed && op != LeasePeek {
		ls.s = s
	}
	return r
}

func TestLeasesScript(t *testing.T) {
	ls := &leases{l: LeaseLimit{Limit: 2, Lease: int64(30 * sec)}}
	script := []struct {
		at   time.Duration
		id   uint64
		op   int64
		want Result
	}{
		{0, 1, LeasePeek, ok(2, 2, 0)},
		{0, 1, LeaseAcquire, ok(2, 1, 30*sec)},
		{10 * sec, 2, LeaseAcquire, ok(2, 0, 30*sec)},
		{15 * sec, 3, LeaseAcquire, no(2, 0, 15*sec, 25*sec)}, // id 1's lease ends at 30s
		{15 * sec, 1, LeaseAcquire, ok(2, 0, 30*sec)},         // a retry renews: no new slot
		{30 * sec, 3, LeaseAcquire, no(2, 0, 10*sec, 15*sec)}, // now id 2's (40s) is the earliest
		{40*sec - 1, 3, LeaseAcquire, no(2, 0, 1, 5*sec+1)},
		{40 * sec, 3, LeaseAcquire, ok(2, 0, 30*sec)}, // id 2's lease ended exactly at 40s
		{41 * sec, 1, LeaseRelease, ok(2, 1, 29*sec)},
		{41 * sec, 1, LeaseRelease, no(2, 1, 0, 29*sec)}, // released already: nothing to release
		{41 * sec, 3, LeaseRelease, ok(2, 2, 0)},         // the last one: no state left
	}
	for i, st := range script {
		if got := ls.do(st.at, st.id, st.op); got != st.want {
			t.Fatalf("step %d: op %d by id %d at t0+%v = %s; want %s", i, st.op, st.id, st.at, fmtResult(got), fmtResult(st.want))
		}
	}
	if ls.s.Leases != nil {
		t.Fatalf("leases after the last release: %v; want none", ls.s.Leases)
	}
}

func TestLeasesDeadHoldersComeBack(t *testing.T) {
	ls := &leases{l: LeaseLimit{Limit: 3, Lease: int64(sec)}}
	for id := uint64(1); id <= 3; id++ {
		ls.do(0, id, LeaseAcquire)
	}
	if r := ls.do(sec-1, 9, LeaseAcquire); r.Allowed {
		t.Fatalf("acquire before the leases end: %s; want denied", fmtResult(r))
	}
	if r := ls.do(sec, 9, LeaseAcquire); r != ok(3, 2, sec) {
		t.Fatalf("acquire after three holders died: %s; want admitted, 2 free", fmtResult(r))
	}
	if n := len(ls.s.Leases); n != 2 {
		t.Fatalf("state holds %d words; want 2 (the dead leases dropped)", n)
	}
	if h := ls.s.Holders(t0 + int64(sec)); h != 1 {
		t.Fatalf("Holders = %d; want 1", h)
	}
}

func TestLeasesLimitShrinkAndHugeLease(t *testing.T) {
	ls := &leases{l: LeaseLimit{Limit: 3, Lease: math.MaxInt64}}
	for id := uint64(1); id <= 3; id++ {
		if r := ls.do(0, id, LeaseAcquire); !r.Allowed || r.ResetAfter != math.MaxInt64-t0 {
			t.Fatalf("lease MaxInt64: %s", fmtResult(r))
		}
	}
	ls.l.Limit = 1
	if r := ls.do(0, 4, LeaseAcquire); r.Allowed || r.Remaining != 0 {
		t.Fatalf("acquire over a shrunk limit: %s; want denied", fmtResult(r))
	}
	if r := ls.do(0, 2, LeaseAcquire); !r.Allowed || r.Remaining != 0 {
		t.Fatalf("renewal over a shrunk limit: %s; want admitted", fmtResult(r))
	}
}

func BenchmarkLeaseAcquireRelease(b *testing.B) {
	l := LeaseLimit{Limit: 16, Lease: int64(30 * sec)}
	var s LeaseState
	for id := uint64(100); id < 108; id++ { // eight other holders
		_, s = l.Take(s, t0, id, LeaseAcquire)
	}
	now := t0
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		now += int64(time.Microsecond)
		_, s = l.Take(s, now, 1, LeaseAcquire)
		_, s = l.Take(s, now, 1, LeaseRelease)
	}
}
