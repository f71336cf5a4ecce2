package client

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-rl/sluice/client/sluicetest"
)

// End-to-end tests of the typed calls against a real sluice process, in RESP2 and RESP3, with
// the server's clock frozen (DEBUG CLOCK) so that every duration is exact.

const t0ms = 1800000000000 // 2027-01-15 08:00:00 UTC

func debugServer(t *testing.T) *sluicetest.Server {
	return sluicetest.Start(t, "--enable-debug-command", "yes")
}

// protocols runs f once per RESP version, each against a client of its own.
func protocols(t *testing.T, srv *sluicetest.Server, f func(t *testing.T, c *Client, rdb *redis.Client)) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			rdb := srv.Client(proto)
			f(t, New(rdb), rdb)
		})
	}
}

// namedProtocols is protocols with a client that asks for named replies
// (OnConnect: NamedReplies) on each connection.
func namedProtocols(t *testing.T, srv *sluicetest.Server, f func(t *testing.T, c *Client, rdb *redis.Client)) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, Protocol: proto, MaxRetries: -1,
				DisableIndentity: true, OnConnect: NamedReplies})
			t.Cleanup(func() { rdb.Close() })
			f(t, New(rdb), rdb)
		})
	}
}

func clockSet(t *testing.T, rdb *redis.Client, ms int64) {
	t.Helper()
	if err := rdb.Do(context.Background(), "DEBUG", "CLOCK", "SET", ms).Err(); err != nil {
		t.Fatal(err)
	}
}

func clockAdvance(t *testing.T, rdb *redis.Client, ms int64) {
	t.Helper()
	if err := rdb.Do(context.Background(), "DEBUG", "CLOCK", "ADVANCE", ms).Err(); err != nil {
		t.Fatal(err)
	}
}

// want checks a decision against the five fields of the reply.
func want(t *testing.T, what string, r Result, err error, allowed bool, limit, remaining int64, retry, reset time.Duration) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	got := fmt.Sprintf("allowed=%v limit=%d remaining=%d retry=%v reset=%v", r.Allowed, r.Limit, r.Remaining, r.RetryAfter, r.ResetAfter)
	exp := fmt.Sprintf("allowed=%v limit=%d remaining=%d retry=%v reset=%v", allowed, limit, remaining, retry, reset)
	if got != exp {
		t.Fatalf("%s = %s; want %s", what, got, exp)
	}
}

const ms = time.Millisecond

func TestTypedDecisionsReadEveryAlgorithmInBothProtocols(t *testing.T) {
	srv := debugServer(t)
	protocols(t, srv, func(t *testing.T, c *Client, rdb *redis.Client) {
		ctx := context.Background()
		clockSet(t, rdb, t0ms)
		p := fmt.Sprintf("p%d:", rdb.Options().Protocol)

		r, err := c.Token(ctx, p+"tok", PerSecond(5), 3, 3)
		want(t, "Token(n=3)", r, err, true, 3, 0, 0, 600*ms)
		r, err = c.Token(ctx, p+"tok", PerSecond(5), 3, 1)
		want(t, "Token(n=1) on an empty bucket", r, err, false, 3, 0, 200*ms, 600*ms)
		r, err = c.Token(ctx, p+"tok", PerSecond(5), 3, 4)
		want(t, "Token(n=4 > burst)", r, err, false, 3, 0, Never, 600*ms)
		if !r.Never() {
			t.Fatalf("Never() = false for retry_after -1")
		}

		for i, wantRetry := range []time.Duration{0, 1000 * ms, 2000 * ms} {
			r, err = c.Leaky(ctx, p+"leaky", PerSecond(1), 3, 1)
			want(t, fmt.Sprintf("Leaky #%d", i+1), r, err, true, 3, int64(2-i), wantRetry, time.Duration(i+1)*time.Second)
		}
		r, err = c.Leaky(ctx, p+"leaky", PerSecond(1), 3, 1)
		want(t, "Leaky on a full queue", r, err, false, 3, 0, 1000*ms, 3000*ms)

		r, err = c.Fixed(ctx, p+"fixed", 2, time.Minute, 2)
		want(t, "Fixed(n=2)", r, err, true, 2, 0, 0, 60000*ms)
		r, err = c.Fixed(ctx, p+"fixed", 2, time.Minute, 1)
		want(t, "Fixed over the limit", r, err, false, 2, 0, 60000*ms, 60000*ms)

		r, err = c.Sliding(ctx, p+"sliding", 10, time.Minute, 10)
		want(t, "Sliding(n=10)", r, err, true, 10, 0, 0, 120000*ms)

		r, err = c.Log(ctx, p+"log", 3, 10*time.Second, 3)
		want(t, "Log(n=3)", r, err, true, 3, 0, 0, 10000*ms)
		clockAdvance(t, rdb, 4000)
		r, err = c.Log(ctx, p+"log", 3, 10*time.Second, 1)
		want(t, "Log over the limit", r, err, false, 3, 0, 6000*ms, 6000*ms)

		// redis-cell's README example, in the client's terms.
		r, err = c.Throttle(ctx, p+"cell", 15, 30, time.Minute, 1)
		want(t, "Throttle", r, err, true, 16, 15, 0, 2*time.Second)
		r, err = c.Throttle(ctx, p+"cell", 15, 30, time.Minute, 15)
		want(t, "Throttle(15)", r, err, true, 16, 0, 0, 32*time.Second)
		r, err = c.Throttle(ctx, p+"cell", 15, 30, time.Minute, 1)
		want(t, "Throttle limited", r, err, false, 16, 0, 2*time.Second, 32*time.Second)
		r, err = c.Throttle(ctx, p+"cell", 15, 30, time.Minute, 17)
		want(t, "Throttle(17 > burst)", r, err, false, 16, 0, Never, 32*time.Second)
	})
}

func TestRatesFormatToWhatTheServerMeans(t *testing.T) {
	srv := debugServer(t)
	rdb := srv.Client(2)
	c := New(rdb)
	ctx := context.Background()
	clockSet(t, rdb, t0ms)
	// Taking a whole bucket of burst tokens leaves it empty for burst × interval: the server's
	// reset_after_ms shows the interval it read, rounded up to a millisecond.
	cases := []struct {
		rate  Rate
		text  string
		burst int64
		reset time.Duration
	}{
		{PerSecond(10), "10/s", 10, 1000 * ms},
		{PerMinute(100), "100/m", 100, 60000 * ms},
		{PerHour(5000), "5000/h", 1, 720 * ms},
		{PerDay(1), "1/d", 1, 24 * time.Hour},
		{Per(100, 90*time.Second), "100/90s", 100, 90000 * ms},
		{Per(3, 1500*ms), "3/1500ms", 3, 1500 * ms},
		{Per(5, 2*time.Hour), "5/2h", 1, 1440000 * ms},
		{Per(1, 1500*time.Microsecond), "2/3ms", 4, 6 * ms},
		{Per(3, time.Second), "3/s", 3, 1001 * ms}, // 333,333,334 ns each: never faster than asked
		{Per(1, 36*time.Hour), "1/36h", 1, 36 * time.Hour},
	}
	for i, tc := range cases {
		if got := tc.rate.String(); got != tc.text {
			t.Errorf("%d/%v formats as %q; want %q", tc.rate.Count(), tc.rate.Period(), got, tc.text)
		}
		r, err := c.Token(ctx, fmt.Sprintf("rate:%d", i), tc.rate, tc.burst, tc.burst)
		want(t, tc.text, r, err, true, tc.burst, 0, 0, tc.reset)
	}
	for _, bad := range []Rate{{}, PerSecond(0), Per(1, 0), Per(-1, time.Second), Per(1<<62, time.Nanosecond)} {
		if _, err := c.Token(ctx, "rate:bad", bad, 1, 1); !errorsIs(err, ErrInvalidRate) {
			t.Errorf("Token with %d per %v: err = %v; want ErrInvalidRate", bad.Count(), bad.Period(), err)
		}
	}
}

func TestAllDecidesSeveralLimitsAtomicallyInBothProtocols(t *testing.T) {
	srv := debugServer(t)
	protocols(t, srv, func(t *testing.T, c *Client, rdb *redis.Client) {
		ctx := context.Background()
		clockSet(t, rdb, t0ms)
		p := fmt.Sprintf("p%d:", rdb.Options().Protocol)
		hour, minute := Fixed(p+"u9:hour", 2, time.Hour), Sliding(p+"u9:min", 1, time.Minute)
		res, err := c.All(ctx, 1, hour, minute)
		if err != nil || !res.Allowed || res.Denied != -1 || len(res.Results) != 2 {
			t.Fatalf("All = %+v, %v; want admitted with two results", res, err)
		}
		want(t, "All #1 hour", res.Results[0], nil, true, 2, 1, 0, 3600000*ms)
		want(t, "All #1 minute", res.Results[1], nil, true, 1, 0, 0, 120000*ms)
		res, err = c.All(ctx, 1, hour, minute)
		if err != nil || res.Allowed || res.Denied != 1 {
			t.Fatalf("All = %+v, %v; want denied by limit 1", res, err)
		}
		want(t, "All #2 hour (untouched)", res.Results[0], nil, true, 2, 1, 0, 3600000*ms)
		d, ok := res.DeniedResult()
		if !ok || d.Allowed || d.RetryAfter <= 0 {
			t.Fatalf("DeniedResult = %+v, %v; want the minute's denial", d, ok)
		}
		// The denial took nothing from the hour.
		r, err := c.Fixed(ctx, p+"u9:hour", 2, time.Hour, 0)
		want(t, "peek at the hour", r, err, true, 2, 1, 0, 3600000*ms)

		if _, err := c.All(ctx, 1, hour, Policy("free", "u9")); !errorsIs(err, ErrInvalidLimit) {
			t.Fatalf("All with a policy: err = %v; want ErrInvalidLimit", err)
		}
		var out AllResult
		if err := c.AllTo(ctx, &out, 1, Token(p+"api", PerSecond(5000), 5000), Leaky(p+"q", PerSecond(10), 5), Log(p+"l", 5, 10*time.Second)); err != nil || !out.Allowed || len(out.Results) != 3 {
			t.Fatalf("AllTo = %+v, %v", out, err)
		}
	})
}

func TestLeaseReleaseIsIdempotent(t *testing.T) {
	srv := debugServer(t)
	protocols(t, srv, func(t *testing.T, c *Client, rdb *redis.Client) {
		ctx := context.Background()
		clockSet(t, rdb, t0ms)
		key := fmt.Sprintf("render:%d", rdb.Options().Protocol)
		a, err := c.Acquire(ctx, key, 2, 30*time.Second, "req-1")
		want(t, "Acquire req-1", a.Result, err, true, 2, 1, 0, 30000*ms)
		b, err := c.Acquire(ctx, key, 2, 30*time.Second, "")
		want(t, "Acquire (random id)", b.Result, err, true, 2, 0, 0, 30000*ms)
		if len(b.ID()) != 32 {
			t.Fatalf("random id %q; want 32 hex digits", b.ID())
		}
		full, err := c.Acquire(ctx, key, 2, 30*time.Second, "req-3")
		want(t, "Acquire when full", full.Result, err, false, 2, 0, 30000*ms, 30000*ms)
		if err := full.Release(ctx); err != nil {
			t.Fatalf("Release of a denied lease: %v", err)
		}
		for i := 0; i < 3; i++ {
			if err := a.Release(ctx); err != nil {
				t.Fatalf("Release #%d: %v", i+1, err)
			}
		}
		// Exactly one slot came back: a second Release did not free b's.
		c3, err := c.Acquire(ctx, key, 2, 30*time.Second, "req-4")
		want(t, "Acquire after release", c3.Result, err, true, 2, 0, 0, 30000*ms)
		c4, err := c.Acquire(ctx, key, 2, 30*time.Second, "req-5")
		want(t, "Acquire when full again", c4.Result, err, false, 2, 0, 30000*ms, 30000*ms)
		clockAdvance(t, rdb, 10000)
		r, err := b.Renew(ctx)
		want(t, "Renew", r, err, true, 2, 0, 0, 30000*ms)
		if _, err := a.Renew(ctx); !errorsIs(err, ErrInvalidLimit) {
			t.Fatalf("Renew after Release: err = %v; want ErrInvalidLimit", err)
		}
	})
}

func TestInfoAndReset(t *testing.T) {
	srv := debugServer(t)
	protocols(t, srv, func(t *testing.T, c *Client, rdb *redis.Client) {
		ctx := context.Background()
		clockSet(t, rdb, t0ms)
		p := fmt.Sprintf("p%d:", rdb.Options().Protocol)
		info, err := c.Info(ctx, p+"nobody")
		if err != nil || info.Exists() {
			t.Fatalf("Info of an absent key = %+v, %v", info, err)
		}
		c.Log(ctx, p+"carol", 3, 10*time.Second, 2)
		c.Fixed(ctx, p+"alice", 2, time.Minute, 1)
		c.Acquire(ctx, p+"jobs", 2, 30*time.Second, "a")
		info, err = c.Info(ctx, p+"carol")
		now := time.UnixMilli(t0ms)
		if err != nil || info.Algorithm != "rl-log" || info.Count != 2 || len(info.Entries) != 2 ||
			!info.Entries[0].Equal(now) || info.TTL != 10*time.Second || !info.ExpireAt.Equal(now.Add(10*time.Second)) {
			t.Fatalf("Info(log) = %+v, %v", info, err)
		}
		info, err = c.Info(ctx, p+"alice")
		if err != nil || info.Algorithm != "rl-fixed" || info.Count != 1 || !info.WindowStart.Equal(now) {
			t.Fatalf("Info(fixed) = %+v, %v", info, err)
		}
		info, err = c.Info(ctx, p+"jobs")
		if err != nil || info.Algorithm != "rl-concurrency" || len(info.Leases) != 1 || !info.Leases[0].End.Equal(now.Add(30*time.Second)) {
			t.Fatalf("Info(concurrency) = %+v, %v", info, err)
		}
		n, err := c.Reset(ctx, p+"carol", p+"alice", p+"nobody")
		if err != nil || n != 2 {
			t.Fatalf("Reset = %d, %v; want 2", n, err)
		}
		r, err := c.Fixed(ctx, p+"alice", 2, time.Minute, 0)
		want(t, "peek after Reset", r, err, true, 2, 2, 0, 0)
	})
}
