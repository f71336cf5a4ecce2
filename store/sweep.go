package store

import (
	"sync/atomic"
	"time"
)

// Active expiry: a bounded incremental sweep over every shard.

// sweepResult sums what the sweep did in one call.
type sweepResult struct {
	Examined, Removed, Rounds int
}

const (
	sweepRound     = 20                    // entries examined per round, holding one shard lock
	maxSweepRounds = 64                    // most rounds per shard in one Sweep call
	sweepBudget    = 25 * time.Millisecond // most time one Sweep call spends: a quarter of the edge's 100 ms tick
)

type sweepStats struct {
	next                            atomic.Uint64 // the shard the next call starts with
	runs, rounds, nanos, last, most atomic.Int64
}

// Sweep runs one bounded step of active expiry at now; the edge calls it
// ten times a second. Per shard it runs rounds of 20 entries while more
// than a tenth of a round had expired (Redis's rule), at most 64 rounds,
// and the whole call stops after 25 ms, the next one starting with the
// shard where this one stopped. Each round holds one shard lock while it
// examines 20 entries. Sweep reads the monotonic clock to bound and report
// its own cost, never to decide what has expired: that is the now given.
func (st *Store) Sweep(now int64) {
	start := time.Now()
	deadline := start.Add(sweepBudget)
	s := st.sweepRounds(now, maxSweepRounds, func() bool { return time.Now().After(deadline) })
	d := time.Since(start).Nanoseconds()
	st.sweep.runs.Add(1)
	st.sweep.rounds.Add(int64(s.Rounds))
	st.sweep.nanos.Add(d)
	st.sweep.last.Store(d)
	for m := st.sweep.most.Load(); d > m && !st.sweep.most.CompareAndSwap(m, d); m = st.sweep.most.Load() {
	}
}

// sweepRounds runs one step of active expiry over every shard at now: per
// shard, rounds of 20 entries while more than a tenth of a round had
// expired, at most maxRounds rounds, stopping early when over (if not nil)
// says so. Each round holds one shard lock, briefly. It reads no clock;
// over may.
func (st *Store) sweepRounds(now int64, maxRounds int, over func() bool) sweepResult {
	var out sweepResult
	n := uint64(len(st.shards))
	first := st.sweep.next.Load() % n
	for k := uint64(0); k < n; k++ {
		i := (first + k) % n
		sh := &st.shards[i]
		for r := 0; r < maxRounds; r++ {
			sh.Lock()
			ex, rm := sh.Sweep(now, sweepRound)
			sh.Unlock()
			out.Examined += ex
			out.Removed += rm
			out.Rounds++
			if ex == 0 || rm*10 <= ex {
				break
			}
			if over != nil && over() {
				st.sweep.next.Store(i) // resume with this shard: it had more to remove
				return out
			}
		}
	}
	st.sweep.next.Store(first)
	return out
}

// SweepTotals are what the active expiry has done and cost since the
// store was made.
type SweepTotals struct {
	Runs, Rounds int64         // Sweep calls, and rounds of 20 entries in them
	Time         time.Duration // spent in Sweep in all
	Last, Most   time.Duration // the last call, and the longest
}

// SweepTotals returns the sweep's totals; the entries it examined and
// removed are in Stats.
func (st *Store) SweepTotals() SweepTotals {
	return SweepTotals{
		Runs:   st.sweep.runs.Load(),
		Rounds: st.sweep.rounds.Load(),
		Time:   time.Duration(st.sweep.nanos.Load()),
		Last:   time.Duration(st.sweep.last.Load()),
		Most:   time.Duration(st.sweep.most.Load()),
	}
}
