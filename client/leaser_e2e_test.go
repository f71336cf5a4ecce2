package client

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-rl/sluice/client/sluicetest"
)

// peek returns a token bucket's remaining tokens without taking any.
func peek(t *testing.T, c *Client, lim Limit) int64 {
	t.Helper()
	r, err := c.Decide(context.Background(), lim, 0)
	if err != nil {
		t.Fatal(err)
	}
	return r.Remaining
}

// settle waits until no background take of l is in flight.
func settle(t *testing.T, l *Leaser) {
	t.Helper()
	for i := 0; i < 500; i++ {
		busy := false
		l.mu.RLock()
		for _, s := range l.stocks {
			s.mu.Lock()
			busy = busy || s.refilling
			s.mu.Unlock()
		}
		l.mu.RUnlock()
		if !busy {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("a background take is still in flight after 5s")
}

// held returns the units l holds for lim.
func held(l *Leaser, lim Limit) int64 {
	l.mu.RLock()
	s := l.stocks[lim]
	l.mu.RUnlock()
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.have
}

// TestLeasersNeverAdmitAboveTheBucket: two Leasers with four goroutines each hammer one key
// of 1000/s, capacity 100, for 1.5 s. Together they admit at most 100 + 1000·t, t measured
// from before the first take to after the last admission (a superset of the server's
// interval between them); each admitted exactly what it took less what it gave back; and
// the server's bucket after Close holds no more than the bound leaves.
func TestLeasersNeverAdmitAboveTheBucket(t *testing.T) {
	srv := sluicetest.Start(t)
	lim := Token("hot", PerSecond(1000), 100)
	var leasers [2]*Leaser
	for i := range leasers {
		leasers[i] = NewLeaser(New(srv.Client(2)), LeaserOptions{})
	}
	var admitted atomic.Int64
	var wg sync.WaitGroup
	ctx := context.Background()
	start := time.Now()
	stopAt := start.Add(1500 * time.Millisecond)
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		l := leasers[g%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stopAt) {
				ok, err := l.Allow(ctx, lim)
				if err != nil {
					errs <- err
					return
				}
				if ok {
					admitted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		t.Fatalf("Allow: %v\nserver log:\n%s", err, srv.Log())
	}
	bound := 100 + int64(1000*elapsed.Seconds())
	if a := admitted.Load(); a > bound || a == 0 {
		t.Fatalf("admitted %d in %v; want 1 … %d (100 + 1000·t)", a, elapsed, bound)
	}
	var sum int64
	for i, l := range leasers {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if got, want := l.taken.Load()-l.returned.Load(), l.admitted.Load(); got != want {
			t.Errorf("leaser %d: taken %d − returned %d = %d; want admitted %d (stock leaked)",
				i, l.taken.Load(), l.returned.Load(), got, want)
		}
		sum += l.admitted.Load()
	}
	if sum != admitted.Load() {
		t.Fatalf("leasers counted %d admitted; callers saw %d", sum, admitted.Load())
	}
	c := New(srv.Client(2))
	rem := peek(t, c, lim)
	full := 100 + int64(1000*time.Since(start).Seconds())
	if rem+sum > full {
		t.Fatalf("after Close: remaining %d + admitted %d > %d (100 + 1000·t): more given back than held", rem, sum, full)
	}
	t.Logf("admitted %d in %v (bound %d); remaining after Close %d", sum, elapsed, bound, rem)
}

// TestLeaserCloseGivesStockBack: on a bucket that does not refill within the test (1/h),
// the stock a Leaser holds is debited on the server, and Close refunds it exactly: admitted +
// remaining = capacity afterwards.
func TestLeaserCloseGivesStockBack(t *testing.T) {
	srv := sluicetest.Start(t)
	c := New(srv.Client(3))
	lim := Token("ret", PerHour(1), 1000000)
	l := NewLeaser(c, LeaserOptions{})
	defer l.Close()
	ctx := context.Background()
	var admitted int64
	for stop := time.Now().Add(300 * time.Millisecond); time.Now().Before(stop); {
		ok, err := l.Allow(ctx, lim)
		if err != nil || !ok {
			t.Fatalf("Allow = %v, %v after %d; want admitted", ok, err, admitted)
		}
		admitted++
	}
	settle(t, l)
	h := held(l, lim)
	if h <= 0 {
		t.Fatalf("held %d after %d admitted; want stock (a refill lands below the low-water mark)", h, admitted)
	}
	if before := peek(t, c, lim); before+admitted+h != 1000000 {
		t.Fatalf("before Close: remaining %d + admitted %d + held %d != 1000000", before, admitted, h)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if after := peek(t, c, lim); after+admitted != 1000000 {
		t.Fatalf("after Close: remaining %d + admitted %d != 1000000; want the %d held given back", after, admitted, h)
	}
	if ok, err := l.Allow(ctx, lim); ok || err != ErrLeaserClosed {
		t.Fatalf("Allow after Close = %v, %v; want ErrLeaserClosed", ok, err)
	}
}

// TestLeaserIdleKeyGivesStockBack: a key unused for TTL gives its stock back without Close.
func TestLeaserIdleKeyGivesStockBack(t *testing.T) {
	srv := sluicetest.Start(t)
	c := New(srv.Client(2))
	lim := Token("idle", PerDay(1), 1000)
	l := NewLeaser(c, LeaserOptions{TTL: 100 * time.Millisecond})
	defer l.Close()
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if ok, err := l.Allow(ctx, lim); !ok || err != nil {
			t.Fatalf("Allow %d = %v, %v", i, ok, err)
		}
	}
	// The third Allow may start a refill that lands after it: 997 seen
	// before then is not the end state. After three idle TTLs no refill
	// is in flight, and what the leaser holds goes back.
	time.Sleep(300 * time.Millisecond)
	for i := 0; i < 300 && peek(t, c, lim) != 997; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if rem := peek(t, c, lim); rem != 997 {
		t.Fatalf("remaining %d 3 s after 3 admitted and an idle TTL of 100ms; want 997", rem)
	}
}

// TestLeaserUnreachableServer: once the server is gone and the stock is spent, FallbackClosed
// denies and FallbackLocalShare admits Share of the capacity, without errors.
func TestLeaserUnreachableServer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fb    Fallback
		extra int64
	}{{"closed", FallbackClosed, 0}, {"local-share", FallbackLocalShare, 50}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := sluicetest.Start(t)
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1,
				DialTimeout: 200 * time.Millisecond, ContextTimeoutEnabled: true})
			defer rdb.Close()
			lim := Token("down", PerDay(1), 100)
			l := NewLeaser(New(rdb), LeaserOptions{Fallback: tc.fb, Share: 0.5, DownFor: time.Minute})
			defer l.Close()
			ctx := context.Background()
			if ok, err := l.Allow(ctx, lim); !ok || err != nil {
				t.Fatalf("Allow = %v, %v; want admitted", ok, err)
			}
			settle(t, l)
			h := held(l, lim)
			srv.Kill()
			var admitted int64
			for i := 0; i < 300; i++ {
				ok, err := l.Allow(ctx, lim)
				if err != nil {
					t.Fatalf("Allow with the server gone: %v; want a decision", err)
				}
				if ok {
					admitted++
				}
			}
			if admitted != h+tc.extra {
				t.Fatalf("admitted %d with the server gone, holding %d; want %d", admitted, h, h+tc.extra)
			}
		})
	}
}

// BenchmarkLeaserAllow measures decisions served from local stock, from one goroutine and from
// GOMAXPROCS sharing one key: one in about 10 000 asks the server (a batch of up to 10 000 on a
// bucket that never runs dry).
func BenchmarkLeaserAllow(b *testing.B) {
	srv := sluicetest.Start(b)
	rdb := srv.Client(2)
	l := NewLeaser(New(rdb), LeaserOptions{})
	defer l.Close()
	lim := Token("bench:leased", PerSecond(100000000), 100000000)
	ctx := context.Background()
	if _, err := l.Allow(ctx, lim); err != nil {
		b.Fatal(err)
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := l.Allow(ctx, lim); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := l.Allow(ctx, lim); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// TestLeaserFixedWindow: a Leaser admits exactly a fixed window's limit through RL.TAKE … FIXED,
// and Close refunds nothing into the window (its units lapse).
func TestLeaserFixedWindow(t *testing.T) {
	srv := sluicetest.Start(t)
	c := New(srv.Client(2))
	lim := Fixed("fw", 50, time.Hour)
	l := NewLeaser(c, LeaserOptions{})
	ctx := context.Background()
	var admitted int64
	for i := 0; i < 80; i++ {
		ok, err := l.Allow(ctx, lim)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			admitted++
		}
	}
	settle(t, l)
	h := held(l, lim)
	if admitted+h != 50 {
		t.Fatalf("admitted %d + held %d after 80 calls on 50 per hour; want 50", admitted, h)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if rem := peek(t, c, lim); rem != 0 {
		t.Fatalf("window remaining after Close = %d; want 0 (fixed window units are not refunded)", rem)
	}
}
