package store

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/shard"
)

// model is the store's specification as a plain map: a key's TAT, present
// while now < TAT.
type model map[string]int64

func (m model) decide(now int64, req algorithms.Request) algorithms.Result {
	k := string(req.Key)
	tat, ok := m[k]
	if ok && now >= tat {
		delete(m, k)
		tat = 0
	}
	r, s := req.Limit.TokenBucket().Take(algorithms.TokenState{TAT: tat}, now, req.N)
	if req.N != 0 && r.Allowed {
		if s.TAT > now {
			m[k] = s.TAT
		} else {
			delete(m, k)
		}
	}
	return r
}

func (m model) live(now int64) int {
	n := 0
	for _, tat := range m {
		if now < tat {
			n++
		}
	}
	return n
}

// TestStoreMatchesMapModel runs random decisions, deletes, sweeps, flushes
// and time steps against the store and the model, comparing every answer.
func TestStoreMatchesMapModel(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		st, m := New(4), model{}
		now := t0
		for step := 0; step < 20_000; step++ {
			k := fmt.Sprintf("key:%d%s", rng.IntN(300), string(make([]byte, rng.IntN(3)*7)))
			switch op := rng.IntN(20); {
			case op < 12:
				req := token(k, time.Duration(1+rng.IntN(5))*time.Millisecond, int64(1+rng.IntN(5)), int64(rng.IntN(5)-1))
				got := decide(st, now, req)
				want := m.decide(now, req)
				if got.Err != nil || got.Result != want {
					t.Fatalf("seed %d step %d: %s n=%d = %+v (%v); model %+v", seed, step, k, req.N, got.Result, got.Err, want)
				}
			case op < 14:
				_, want := m[k]
				want = want && now < m[k]
				delete(m, k)
				if n, _ := st.Delete(now, [][]byte{[]byte(k)}); (n == 1) != want {
					t.Fatalf("seed %d step %d: DEL %s = %d; model present %v", seed, step, k, n, want)
				}
			case op < 16:
				ttl, _ := st.TTL(now, []byte(k))
				want := int64(-1)
				if tat, ok := m[k]; ok && now < tat {
					want = tat - now
				}
				if ttl != want {
					t.Fatalf("seed %d step %d: TTL %s = %d; model %d", seed, step, k, ttl, want)
				}
			case op < 18:
				now += rng.Int64N(int64(2 * time.Millisecond))
			case op < 19:
				st.sweepRounds(now, 1+rng.IntN(4), nil)
			default:
				if rng.IntN(50) == 0 {
					st.Flush(now)
					clear(m)
				}
			}
			if step%500 == 0 {
				if n, _ := st.DBSize(now); int(n) != m.live(now) {
					t.Fatalf("seed %d step %d: DBSIZE %d; model %d", seed, step, n, m.live(now))
				}
			}
		}
	}
}

// TestSweepEmptiesShortBucketsWithoutAccess: 200,000 buckets that refill
// in 1 ms are all gone within 30 sweeps (3 s at the edge's 10 per second),
// and new keys reuse their memory.
func TestSweepEmptiesShortBucketsWithoutAccess(t *testing.T) {
	n := 200_000
	if raceEnabled {
		n = 50_000
	}
	st := New(16)
	reqs := make([]algorithms.Request, 1)
	out := make([]algorithms.Outcome, 1)
	for i := 0; i < n; i++ {
		reqs[0] = token(fmt.Sprintf("short:%08d", i), time.Millisecond, 1, 1)
		st.Decide(t0, reqs, out)
	}
	before := st.Stats()
	now := t0 + int64(2*time.Millisecond)
	calls := 0
	for ; st.Stats().Keys > 0 && calls < 30; calls++ {
		st.Sweep(now)
		now += int64(100 * time.Millisecond)
	}
	if k := st.Stats().Keys; k != 0 {
		t.Fatalf("%d of %d entries left after %d sweeps", k, n, calls)
	}
	t.Logf("%d expired buckets removed in %d sweeps", n, calls)
	for i := 0; i < n; i++ {
		reqs[0] = token(fmt.Sprintf("later:%08d", i), time.Hour, 1, 1)
		st.Decide(now, reqs, out)
	}
	// The new keys spread over the shards a little differently from the old
	// ones: a shard that gets more than before cuts a few new records while
	// another keeps a few free, and the index tables may differ by a
	// doubling of one shard's table.
	after := st.Stats()
	if after.ArenaBytes-after.FreeBytes != before.ArenaBytes || after.ArenaBytes > before.ArenaBytes*102/100 ||
		after.Used() > before.Used()*11/10 {
		t.Fatalf("memory after refilling with new keys: %+v; before: %+v", after, before)
	}
}

func TestMemoryLimitRefusesNewKeysOnly(t *testing.T) {
	st := New(4)
	st.SetMaxMemory(1<<20, NoEviction)
	var refused, admitted int
	for i := 0; refused == 0; i++ {
		o := decide(st, t0, token(fmt.Sprintf("k:%08d", i), time.Second, 10, 1))
		switch {
		case o.Err == shard.ErrOOM:
			refused++
		case o.Err != nil:
			t.Fatal(o.Err)
		default:
			admitted++
		}
	}
	if used := st.Stats().Used(); used > 1<<20 {
		t.Fatalf("used %d bytes over a 1 MiB limit", used)
	}
	// Keys created before the cap still count down, and their state is kept.
	for n := 9; n > 0; n-- {
		o := decide(st, t0, token("k:00000000", time.Second, 10, 1))
		if o.Err != nil || o.Result.Remaining != int64(n-1) {
			t.Fatalf("existing key at the cap: %+v %v; want remaining %d", o.Result, o.Err, n-1)
		}
	}
	if o := decide(st, t0, token("k:00000000", time.Second, 10, 1)); o.Result.Allowed {
		t.Fatal("an exhausted key admitted at the cap")
	}
	// A peek at a new key creates nothing and needs no room.
	if o := decide(st, t0, token("fresh", time.Second, 10, 0)); o.Err != nil || !o.Result.Allowed {
		t.Fatalf("peek at the cap: %+v %v", o.Result, o.Err)
	}
	if s := st.Stats(); s.Refused == 0 {
		t.Fatalf("the store's figures do not count the refusal: %+v", s)
	}
}

// TestSweepAndEvictionRaceWithWriters runs the sweep, eviction at a memory
// limit, scans, snapshots and deletes against racing writers (run it with
// -race).
func TestSweepAndEvictionRaceWithWriters(t *testing.T) {
	st := New(4)
	st.SetMaxMemory(256<<10, VolatileTTL)
	stop := otherLockers(t, st)
	writers(8, func(w int, rng *rand.Rand) {
		for i := 0; i < 3000; i++ {
			now := t0 + int64(i)*int64(time.Microsecond)
			k := fmt.Sprintf("w%d:%d", w, rng.IntN(20_000))
			if i%10 == 0 {
				st.Delete(now, [][]byte{[]byte(k)})
				continue
			}
			o := decide(st, now, token(k, time.Duration(1+rng.IntN(1000))*time.Microsecond, 3, 1))
			if o.Err != nil && o.Err != shard.ErrOOM {
				t.Error(o.Err)
				return
			}
		}
	})
	stop()
	if s := st.Stats(); s.Used() > 256<<10 {
		t.Fatalf("used %d over the 256 KiB limit", s.Used())
	}
}

// otherLockers runs the store's lock holders other than deciders until the
// returned stop is called, which waits for them: the sweep, SCAN, and
// snapshots, each checked by loading it.
func otherLockers(t *testing.T, st *Store) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	loop := func(step func(i int) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				if err := step(i); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	loop(func(i int) error { st.Sweep(t0 + int64(i)*int64(time.Millisecond)); return nil })
	var cursor uint64
	loop(func(int) error {
		cursor, _ = st.Scan(t0, cursor, 50, func([]byte, algorithms.Algo) bool { return true })
		return nil
	})
	loop(func(int) error {
		var b bytes.Buffer
		if err := st.snapshotAt(&b, t0); err != nil {
			return err
		}
		loaded := New(2)
		defer loaded.Flush(0)
		return loaded.Restore(&b)
	})
	return func() { close(done); wg.Wait() }
}

// writers runs n goroutines of fn, each with its own seeded generator, and
// waits for them.
func writers(n int, fn func(w int, rng *rand.Rand)) {
	var wg sync.WaitGroup
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(w, rand.New(rand.NewPCG(uint64(w), 1)))
		}()
	}
	wg.Wait()
}

// TestGroupAtTheCapIsRefusedWhole: an RL.ALL group that would create a key
// in a full shard is refused with OOM before anything is written, and its
// existing keys keep their state; a group of existing keys still works.
func TestGroupAtTheCapIsRefusedWhole(t *testing.T) {
	st := New(1)
	st.SetMaxMemory(256<<10, NoEviction)
	decide(st, t0, token("old", time.Hour, 10, 1))
	for i := 0; ; i++ {
		if o := decide(st, t0, token(fmt.Sprintf("fill:%d", i), time.Hour, 10, 1)); o.Err == shard.ErrOOM {
			break
		}
	}
	group := []algorithms.Request{token("old", time.Hour, 10, 1), token("fresh", time.Hour, 10, 1)}
	group[0].Group, group[1].Group = 1, 1
	out := make([]algorithms.Outcome, 2)
	st.Decide(t0, group, out)
	if out[0].Err != shard.ErrOOM {
		t.Fatalf("group with a new key at the cap: %+v; want OOM", out)
	}
	if o := decide(st, t0, token("old", time.Hour, 10, 0)); o.Result.Remaining != 9 {
		t.Fatalf("old key after the refused group: remaining %d; want 9 (untouched)", o.Result.Remaining)
	}
	if n, _ := st.Exists(t0, [][]byte{[]byte("fresh")}); n != 0 {
		t.Fatal("the refused group created its new key")
	}
	group = []algorithms.Request{token("old", time.Hour, 10, 1), token("fill:1", time.Hour, 10, 1)}
	group[0].Group, group[1].Group = 2, 2
	st.Decide(t0, group, out)
	if out[0].Err != nil || out[1].Err != nil || !out[0].Result.Allowed || out[0].Result.Remaining != 8 {
		t.Fatalf("group of existing keys at the cap: %+v", out)
	}
}

// TestLogsAtTheCapMatchMapModel runs random RL.LOG decisions, deletes and
// time steps on a store at a small memory cap (noeviction) against a model
// of pure logs in a map. Every answer is the model's, or OOM: only for a
// decision that would write (admitted, n ≠ 0), and then the model's state
// stays as it was, as the store's did. Memory stays within the cap.
func TestLogsAtTheCapMatchMapModel(t *testing.T) {
	const limit = 256 << 10
	for seed := uint64(1); seed <= 3; seed++ {
		rng := rand.New(rand.NewPCG(seed, 17))
		type modelLog struct {
			s      algorithms.LogState
			expire int64 // the store forgets a log at its last write's reset
		}
		st, m := New(2), map[string]modelLog{}
		st.SetMaxMemory(limit, NoEviction)
		now, refused := t0, 0
		for step := 0; step < 20_000; step++ {
			k := fmt.Sprintf("log:%d", rng.IntN(200))
			switch op := rng.IntN(20); {
			case op < 16:
				n := []int64{1, 1, 2, 50, 400, 0, -1, -30}[rng.IntN(8)]
				r := req(algorithms.Log, k, 1000, time.Duration(1+rng.IntN(500))*time.Millisecond, n)
				if now >= m[k].expire {
					delete(m, k)
				}
				want, next := r.Limit.SlidingLog().Take(m[k].s.Clone(), now, n)
				got := decide(st, now, r)
				if got.Err == shard.ErrOOM {
					if !want.Allowed || n <= 0 {
						t.Fatalf("seed %d step %d: %s n=%d refused with OOM; the model %+v writes no more", seed, step, k, n, want)
					}
					refused++
					continue
				}
				if got.Err != nil || got.Result != want {
					t.Fatalf("seed %d step %d: %s n=%d = %+v (%v); model %+v", seed, step, k, n, got.Result, got.Err, want)
				}
				switch {
				case !want.Allowed || n == 0:
				case next.Count == 0:
					delete(m, k)
				default:
					m[k] = modelLog{next, now + want.ResetAfter}
				}
			case op < 17:
				delete(m, k)
				st.Delete(now, [][]byte{[]byte(k)})
			default:
				now += rng.Int64N(int64(3 * time.Millisecond))
			}
			if used := st.Stats().Used(); used > limit {
				t.Fatalf("seed %d step %d: used %d over the %d cap", seed, step, used, limit)
			}
		}
		if refused == 0 {
			t.Fatalf("seed %d: the cap never refused a growth", seed)
		}
		t.Logf("seed %d: %d growths refused", seed, refused)
	}
}
