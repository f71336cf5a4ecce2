package client

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// virtualClock runs consumers against a server whose clock is frozen (DEBUG CLOCK): their sleeps
// (WithSleep) wait on virtual time, and when every consumer is asleep, the driver moves the
// server's clock and the virtual one to the earliest wake-up and wakes whoever is due. Minutes
// of a limiter's life then take seconds, every instant is exact, and what each consumer did is
// known at the instant the server saw it.
type virtualClock struct {
	t   *testing.T
	rdb *redis.Client // drives DEBUG CLOCK

	mu       sync.Mutex
	changed  *sync.Cond
	now      time.Duration // since t0ms; whole milliseconds
	active   int           // consumers not asleep
	sleepers []*sleeper
}

type sleeper struct {
	at   time.Duration
	wake chan struct{}
}

func newVirtualClock(t *testing.T, rdb *redis.Client, consumers int) *virtualClock {
	v := &virtualClock{t: t, rdb: rdb, active: consumers}
	v.changed = sync.NewCond(&v.mu)
	clockSet(t, rdb, t0ms)
	return v
}

// Now returns the virtual time since t0ms.
func (v *virtualClock) Now() time.Duration {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.now
}

// Sleep is the consumers' sleep: it returns once the driver has moved time past d.
func (v *virtualClock) Sleep(ctx context.Context, d time.Duration) error {
	v.mu.Lock()
	s := &sleeper{at: v.now + d, wake: make(chan struct{})}
	v.sleepers = append(v.sleepers, s)
	v.active--
	v.changed.Broadcast()
	v.mu.Unlock()
	select {
	case <-s.wake:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run drives time until end, then cancels the consumers' context.
func (v *virtualClock) run(end time.Duration, cancel context.CancelFunc) {
	defer cancel()
	v.mu.Lock()
	defer v.mu.Unlock()
	for {
		for v.active > 0 {
			v.changed.Wait()
		}
		if len(v.sleepers) == 0 {
			v.t.Error("every consumer stopped")
			return
		}
		sort.Slice(v.sleepers, func(i, j int) bool { return v.sleepers[i].at < v.sleepers[j].at })
		next := (v.sleepers[0].at + time.Millisecond - 1).Truncate(time.Millisecond)
		if next >= end {
			return
		}
		if next > v.now {
			if err := v.rdb.Do(context.Background(), "DEBUG", "CLOCK", "SET", t0ms+next.Milliseconds()).Err(); err != nil {
				v.t.Error(err)
				return
			}
			v.now = next
		}
		i := 0
		for i < len(v.sleepers) && v.sleepers[i].at <= v.now {
			close(v.sleepers[i].wake)
			i++
		}
		v.active += i
		v.sleepers = append(v.sleepers[:0], v.sleepers[i:]...)
	}
}

// actions records when each consumer acted, in virtual time.
type actions struct {
	mu  sync.Mutex
	at  [][]time.Duration // per consumer
	all []time.Duration
}

func (a *actions) add(consumer int, at time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.at[consumer] = append(a.at[consumer], at)
	a.all = append(a.all, at)
}

// maxInWindow returns the most actions in any window [t, t+w).
func (a *actions) maxInWindow(w time.Duration) int {
	all := append([]time.Duration(nil), a.all...)
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	most := 0
	for i, j := 0, 0; j < len(all); j++ {
		for all[j]-all[i] >= w {
			i++
		}
		most = max(most, j-i+1)
	}
	return most
}

// longestWait returns a consumer's longest time without acting, from the start to the end.
func longestWait(at []time.Duration, end time.Duration) time.Duration {
	prev, longest := time.Duration(0), time.Duration(0)
	for _, t := range append(at, end) {
		longest = max(longest, t-prev)
		prev = t
	}
	return longest
}
