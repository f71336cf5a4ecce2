package store

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/shard"
)

// heapAllocated returns the bytes fn allocated on the Go heap, all of them,
// freed or not (MemStats.TotalAlloc): an upper bound on how much the heap
// grew while fn ran. The keyspace's own memory is mapped outside the heap
// and counted by Stats instead. Run without other goroutines allocating.
func heapAllocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestLogGrowthAtTheCapIsRefusedAndChangesNothing: at maxmemory 8 MB,
// 10,000 logs of limit 10,000 with one unit each, then 9,999 more units on
// each: the keys whose ring would grow past the cap are refused with OOM and
// keep their one entry, and memory stays within the cap. Decisions that need
// no more room keep working.
func TestLogGrowthAtTheCapIsRefusedAndChangesNothing(t *testing.T) {
	const limit = 8 << 20
	st := New(4)
	st.SetMaxMemory(limit, NoEviction)
	logReq := func(i int, n int64) algorithms.Request {
		return req(algorithms.Log, fmt.Sprintf("log:%d", i), 10000, time.Hour, n)
	}
	for i := 0; i < 10_000; i++ {
		if o := decide(st, t0, logReq(i, 1)); o.Err != nil || !o.Result.Allowed {
			t.Fatalf("log:%d n=1: %+v", i, o)
		}
	}
	grown, refused := 0, 0
	for i := 0; i < 10_000; i++ {
		o := decide(st, t0+1, logReq(i, 9999))
		switch {
		case o.Err == shard.ErrOOM:
			refused++
			if p := decide(st, t0+1, logReq(i, 0)); p.Result.Remaining != 9999 {
				t.Fatalf("log:%d after its refused growth: remaining %d; want 9999 (unchanged)", i, p.Result.Remaining)
			}
		case o.Err != nil || !o.Result.Allowed || o.Result.Remaining != 0:
			t.Fatalf("log:%d n=9999: %+v", i, o)
		default:
			grown++
		}
	}
	s := st.Stats()
	t.Logf("%d logs grew to 10,000 entries, %d refused; used %d of %d", grown, refused, s.Used(), int64(limit))
	if s.Used() > limit {
		t.Fatalf("used %d bytes; the cap is %d", s.Used(), int64(limit))
	}
	if refused < 9000 || grown < 50 {
		t.Fatalf("%d grew, %d refused: want about 80 full logs in 8 MB and the rest refused", grown, refused)
	}
	// Decisions that fit where the state is keep working at the cap: a unit
	// that fits the ring's room, a refund, a denial, a peek.
	last := 9999
	if o := decide(st, t0+2, logReq(last, 1)); o.Err != nil || !o.Result.Allowed || o.Result.Remaining != 9998 {
		t.Fatalf("one more unit on a refused log at the cap: %+v", o)
	}
	if o := decide(st, t0+2, logReq(last, -1)); o.Err != nil || o.Result.Remaining != 9999 {
		t.Fatalf("refund at the cap: %+v", o)
	}
	for i := 0; i < 10_000; i++ {
		if o := decide(st, t0+2, logReq(i, 1)); o.Err == nil && !o.Result.Allowed {
			if o = decide(st, t0+2, logReq(i, 0)); o.Err != nil || o.Result.Remaining != 0 {
				t.Fatalf("peek at a full log at the cap: %+v", o)
			}
			return
		}
	}
	t.Fatal("no full log denied a unit")
}

// TestLeaseGrowthAtTheCapIsRefused: at the cap, RL.ACQUIRE for a new holder
// on an existing key whose record must grow is refused, the leases as they
// were; renewals and releases, which need no room, keep working.
func TestLeaseGrowthAtTheCapIsRefused(t *testing.T) {
	const limit = 256 << 10
	st := New(1)
	st.SetMaxMemory(limit, NoEviction)
	var refusedAt int
	for i := 0; ; i++ {
		o := decide(st, t0, lease("lease", 1_000_000, time.Hour, fmt.Sprint("holder-", i), algorithms.LeaseAcquire))
		if o.Err == shard.ErrOOM {
			refusedAt = i
			break
		}
		if o.Err != nil || !o.Result.Allowed {
			t.Fatalf("acquire %d: %+v", i, o)
		}
		if i > 100_000 {
			t.Fatal("the cap never refused a lease")
		}
	}
	if used := st.Stats().Used(); used > limit {
		t.Fatalf("used %d of %d", used, limit)
	}
	info, _ := st.Info(t0, []byte("lease"))
	if held := len(info.Fields[0].List) / 2; held != refusedAt {
		t.Fatalf("%d leases after the refusal; want the %d acquired before it", held, refusedAt)
	}
	if o := decide(st, t0, lease("lease", 1_000_000, time.Hour, "holder-7", algorithms.LeaseAcquire)); o.Err != nil || !o.Result.Allowed {
		t.Fatalf("renewal at the cap: %+v", o)
	}
	if o := decide(st, t0, lease("lease", 1_000_000, time.Hour, "holder-8", algorithms.LeaseRelease)); o.Err != nil || !o.Result.Allowed {
		t.Fatalf("release at the cap: %+v", o)
	}
	if o := decide(st, t0, lease("lease", 1_000_000, time.Hour, "holder-new", algorithms.LeaseAcquire)); o.Err != nil || !o.Result.Allowed {
		t.Fatalf("acquire into the released slot's room: %+v", o)
	}
}

// TestLargeLogIsRefusedBeforeItIsBuilt: a log whose ring would pass the
// cap is refused before its ring exists anywhere: the refused decision
// allocates next to nothing on the heap, for a new key and for an existing
// one.
func TestLargeLogIsRefusedBeforeItIsBuilt(t *testing.T) {
	st := New(4)
	st.SetMaxMemory(1<<20, NoEviction)
	big := req(algorithms.Log, "big", 20_000_000, time.Hour, 20_000_000) // a 160 MB ring
	var o algorithms.Outcome
	if alloc := heapAllocated(func() { o = decide(st, t0, big) }); o.Err != shard.ErrOOM || alloc > 64<<10 {
		t.Fatalf("a 160 MB log at a 1 MB cap: %v, %d bytes allocated; want OOM and nothing built", o.Err, alloc)
	}
	decide(st, t0, req(algorithms.Log, "big", 20_000_000, time.Hour, 1))
	big.N--
	if alloc := heapAllocated(func() { o = decide(st, t0, big) }); o.Err != shard.ErrOOM || alloc > 64<<10 {
		t.Fatalf("growing a log to 160 MB at a 1 MB cap: %v, %d bytes allocated; want OOM and nothing built", o.Err, alloc)
	}
	if n, _ := st.DBSize(t0); n != 1 {
		t.Fatalf("DBSize %d; want 1", n)
	}
	// Within the cap, the ring is built in the keyspace's memory, not on
	// the heap.
	st.SetMaxMemory(0, NoEviction)
	if alloc := heapAllocated(func() { o = decide(st, t0, req(algorithms.Log, "big", 20_000_000, time.Hour, 1_000_000)) }); o.Err != nil || alloc > 64<<10 {
		t.Fatalf("an 8 MB log without a cap: %+v, %d heap bytes", o, alloc)
	}
}

// TestGroupRepeatingALogKeyCopiesNoRing: RL.ALL naming one log 20,000
// times (limit 10,000) decides every member on one draft: its outcome is
// that of 20,000 RL.LOG in a row (the 10,001st denies, so nothing is
// taken), and it allocates a few bytes per member, not a ring per member
// (which was 10,000 copies of up to 80 KB). Admitted, it leaves the state
// those RL.LOG in a row leave.
func TestGroupRepeatingALogKeyCopiesNoRing(t *testing.T) {
	st := New(4)
	member := req(algorithms.Log, "k", 10000, time.Hour, 1)
	reqs := make([]algorithms.Request, 20_000)
	for i := range reqs {
		reqs[i] = member
		reqs[i].Group = 1
	}
	out := make([]algorithms.Outcome, len(reqs))
	alloc := heapAllocated(func() { st.Decide(t0, reqs, out) })
	t.Logf("20,000 members: %d heap bytes", alloc)
	if alloc > 16<<20 {
		t.Fatalf("a 20,000-member group allocated %d bytes; want under 16 MB", alloc)
	}
	for i, o := range out {
		want := o.Err == nil && o.Result.Allowed == (i < 10000)
		if i < 10000 {
			want = want && o.Result.Remaining == 10000 // reported as a peek: nothing was taken
		} else {
			want = want && o.Result.RetryAfter == int64(time.Hour)
		}
		if !want {
			t.Fatalf("member %d: %+v", i, o)
		}
	}
	if n, _ := st.DBSize(t0); n != 0 {
		t.Fatalf("the denied group left %d keys", n)
	}

	one := New(4)
	for i := 0; i < 9000; i++ {
		decide(one, t0, member)
	}
	for i := range reqs[:9000] {
		reqs[i].Group = 2
	}
	st.Decide(t0, reqs[:9000], out[:9000])
	for i, o := range out[:9000] {
		if o.Err != nil || !o.Result.Allowed || o.Result.Remaining != int64(9999-i) {
			t.Fatalf("admitted group, member %d: %+v", i, o)
		}
	}
	got, _ := st.Info(t0, []byte("k"))
	want, _ := one.Info(t0, []byte("k"))
	if fmt.Sprint(got.Fields[0], got.Fields[2]) != fmt.Sprint(want.Fields[0], want.Fields[2]) || got.Expire != want.Expire {
		t.Fatalf("after the admitted group: %+v; 9,000 RL.LOG in a row leave %+v", got.Fields[:2], want.Fields[:2])
	}
}

// TestGroupGrowthAtTheCapIsRefusedWhole: a group one of whose logs must
// grow past the cap is refused with OOM and changes nothing, neither its
// other keys nor the log; a group whose log fits its room goes through.
func TestGroupGrowthAtTheCapIsRefusedWhole(t *testing.T) {
	st := New(1)
	st.SetMaxMemory(256<<10, NoEviction)
	decide(st, t0, token("tok", time.Hour, 10, 1))
	decide(st, t0, req(algorithms.Log, "log", 100_000, time.Hour, 1))
	for i := 0; ; i++ {
		if o := decide(st, t0, token(fmt.Sprintf("fill:%d", i), time.Hour, 10, 1)); o.Err == shard.ErrOOM {
			break
		}
	}
	tok, lg := token("tok", time.Hour, 10, 1), req(algorithms.Log, "log", 100_000, time.Hour, 1)
	grow := lg
	grow.N = 50_000 // a 400 KB ring
	out := decideAll(st, t0, group(1, tok, grow, tok, lg))
	if out[0].Err != shard.ErrOOM {
		t.Fatalf("group growing a log past the cap: %+v; want OOM", out)
	}
	if r := remaining(t, st, t0, tok); r != 9 {
		t.Fatalf("tok after the refused group: remaining %d; want 9", r)
	}
	if r := remaining(t, st, t0, lg); r != 99_999 {
		t.Fatalf("log after the refused group: remaining %d; want 99,999", r)
	}
	if used := st.Stats().Used(); used > 256<<10 {
		t.Fatalf("used %d over the cap", used)
	}
	out = decideAll(st, t0, group(2, tok, lg, tok, lg))
	for i, o := range out {
		if o.Err != nil || !o.Result.Allowed {
			t.Fatalf("group within the log's room at the cap, member %d: %+v", i, o)
		}
	}
	if r := remaining(t, st, t0, lg); r != 99_997 {
		t.Fatalf("log after the admitted group: remaining %d; want 99,997", r)
	}
}
