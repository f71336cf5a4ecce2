package client

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// offlineLeaser returns a Leaser whose client sends nothing: every command fails as a broken
// connection would, and h records it.
func offlineLeaser(t *testing.T) (*Leaser, *routeRecorder) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	h := &routeRecorder{}
	rdb.AddHook(h)
	l := NewLeaser(New(rdb), LeaserOptions{DownFor: time.Hour})
	t.Cleanup(func() { l.Close(); rdb.Close() })
	return l, h
}

// spendAt runs spend under s.mu, as AllowN does.
func spendAt(l *Leaser, s *stock, now time.Time, n int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ok, _ := l.spend(context.Background(), now, s, n)
	return ok
}

// TestLeaserFixedWindowUnitsLapse: units taken from a fixed window are spent until 1 ms before
// the window end the take's reply implies, and lapse then rather than count in the next window.
func TestLeaserFixedWindowUnitsLapse(t *testing.T) {
	l, h := offlineLeaser(t)
	s := &stock{lim: Fixed("fw", 10, time.Second)}
	t0 := time.Unix(1700000000, 0)
	s.add(t0, 5, Result{Allowed: true, ResetAfter: 300 * time.Millisecond})
	if want := t0.Add(299 * time.Millisecond); !s.until.Equal(want) || s.have != 5 {
		t.Fatalf("after a take of 5 at t0 with reset 300ms: have %d until %v; want 5 until %v", s.have, s.until, want)
	}
	t1 := t0.Add(100 * time.Millisecond)
	if !spendAt(l, s, t1, 1) || s.have != 4 || len(h.routed) != 0 {
		t.Fatalf("spend(t1, n=1) = denied or asked the server (have %d, sent %q); want admitted from stock", s.have, h.routed)
	}
	t2 := t0.Add(299 * time.Millisecond)
	if spendAt(l, s, t2, 1) {
		t.Fatalf("spend(t2 = window end − 1ms, n=1) = admitted; want the 4 units lapsed (server unreachable: denied)")
	}
	if s.have != 0 || len(h.routed) != 1 {
		t.Fatalf("at t2: have %d, sent %q; want 0 and one RL.TAKE", s.have, h.routed)
	}
}

// TestLeaserHoldsOffAfterADenial: a take the server denied with a retry after of 50 ms makes
// the key deny in-process until then, instead of a round trip per call.
func TestLeaserHoldsOffAfterADenial(t *testing.T) {
	l, h := offlineLeaser(t)
	s := &stock{lim: Token("tb", PerSecond(10), 10)}
	t0 := time.Unix(1700000000, 0)
	s.add(t0, 0, Result{Limit: 10, RetryAfter: 50 * time.Millisecond})
	t1 := t0.Add(10 * time.Millisecond)
	if spendAt(l, s, t1, 1) || len(h.routed) != 0 {
		t.Fatalf("spend(t1 = t0+10ms, n=1): sent %q; want denied without asking the server", h.routed)
	}
	t2 := t0.Add(50 * time.Millisecond)
	spendAt(l, s, t2, 1)
	if len(h.routed) != 1 {
		t.Fatalf("spend(t2 = t0+50ms, n=1): sent %q; want one RL.TAKE", h.routed)
	}
}
