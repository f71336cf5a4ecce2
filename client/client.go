package client

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/redis/go-redis/v9"
)

// Client makes typed calls to a sluice server through a go-redis client. It is safe for
// concurrent use; its zero value is not usable: build it with New.
//
// The go-redis client is the caller's: its pool, timeouts, TLS, Sentinel or Ring options apply,
// and RESP2 and RESP3 both work. Two of its options matter for a limiter:
//   - go-redis retries a command on its own after a network error (MaxRetries, 3 by default):
//     a decision whose connection broke after it was sent may have been applied, and the retry
//     counts it twice. Set MaxRetries: -1 and use WithRetry, which retries only what is safe
//     unless told otherwise. (go-redis also retries CLUSTERDOWN, which is safe: nothing was
//     applied. The server answers an unknown outcome UNKNOWN, which go-redis does not retry.)
//   - go-redis ignores a context's deadline while it waits for a reply unless
//     ContextTimeoutEnabled is set; without it a stalled server holds a call for ReadTimeout.
type Client struct {
	rdb       redis.UniversalClient
	retry     Retry
	sleep     func(context.Context, time.Duration) error
	jitter    float64
	jitterMin time.Duration
}

// Retry says how long a call retries the errors that are worth retrying. The zero value
// retries nothing.
type Retry struct {
	// For is the most time spent retrying one call, backoffs included; 0 disables retries.
	For time.Duration
	// Base is the first backoff (default 10ms); each next one doubles, up to Max (default
	// 500ms), and each is drawn at random from its upper half, so that clients spread out.
	Base, Max time.Duration
	// UnknownOutcome also retries ErrOutcomeUnknown. The decision that failed may have been
	// applied, so a retry may charge twice; only CLUSTERDOWN (nothing applied) is retried
	// without it.
	UnknownOutcome bool
}

// Option configures a Client.
type Option func(*Client)

// WithRetry retries ErrClusterDown (and ErrOutcomeUnknown if r.UnknownOutcome) with backoff, for at
// most r.For per call.
func WithRetry(r Retry) Option {
	return func(c *Client) {
		if r.Base <= 0 {
			r.Base = 10 * time.Millisecond
		}
		if r.Max < r.Base {
			r.Max = max(r.Base, 500*time.Millisecond)
		}
		c.retry = r
	}
}

// WithJitter sets how much Wait adds to a denied decision's RetryAfter before it asks again: a
// random extra of up to fraction × RetryAfter, and at least up to floor (defaults 0.1 and 5ms).
// Jitter spreads out waiters that were told the same instant, so that one does not win every
// time. A leaky bucket's granted delay is slept exactly, without jitter.
func WithJitter(fraction float64, floor time.Duration) Option {
	return func(c *Client) { c.jitter, c.jitterMin = max(fraction, 0), max(floor, 0) }
}

// WithSleep replaces how Wait and retries sleep: f returns after d, or with ctx's error when
// ctx ends first. Tests that drive a server's clock (DEBUG CLOCK) use it.
func WithSleep(f func(ctx context.Context, d time.Duration) error) Option {
	return func(c *Client) { c.sleep = f }
}

// New returns a Client that sends its commands through rdb.
func New(rdb redis.UniversalClient, opts ...Option) *Client {
	c := &Client{rdb: rdb, sleep: sleepContext, jitter: 0.1, jitterMin: 5 * time.Millisecond}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Redis returns the go-redis client underneath.
func (c *Client) Redis() redis.UniversalClient { return c.rdb }

// sleepContext waits for d or for ctx to end, whichever comes first.
func sleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// do sends a's command, retrying as c.retry says, and returns the reply. The caller releases a.
func (c *Client) do(ctx context.Context, a *argv) (any, error) {
	var deadline time.Time
	for attempt := 0; ; attempt++ {
		cmd := redis.NewCmd(ctx, a.args...)
		if a.keyPos > 1 {
			cmd.SetFirstKeyPos(a.keyPos)
		}
		_ = c.rdb.Process(ctx, cmd)
		err := classify(cmd.Err())
		if err == nil || !c.retryable(err) {
			return cmd.Val(), err
		}
		if attempt == 0 {
			deadline = time.Now().Add(c.retry.For)
		}
		d := c.backoff(attempt)
		if time.Until(deadline) < d || c.sleep(ctx, d) != nil {
			return nil, err
		}
	}
}

// retryable reports whether err is an error c retries.
func (c *Client) retryable(err error) bool {
	se, ok := err.(*ServerError)
	if !ok || c.retry.For <= 0 {
		return false
	}
	return se.Kind == ErrClusterDown || se.Kind == ErrOutcomeUnknown && c.retry.UnknownOutcome
}

// backoff returns the wait before retry attempt+1: Base × 2^attempt capped at Max, drawn from
// the upper half of that.
func (c *Client) backoff(attempt int) time.Duration {
	d := c.retry.Max
	if attempt < 30 && c.retry.Base<<attempt < c.retry.Max {
		d = c.retry.Base << attempt
	}
	return d/2 + rand.N(d/2+1)
}

// decide sends a decision command and decodes its reply into r; it releases a.
func (c *Client) decide(ctx context.Context, a *argv, r *Result) error {
	v, err := c.do(ctx, a)
	a.release()
	if err != nil {
		return err
	}
	return decodeDecision(v, r)
}

// Decide takes n units from l (n = 0 peeks, n < 0 refunds) and returns the decision.
func (c *Client) Decide(ctx context.Context, l Limit, n int64) (Result, error) {
	var r Result
	if !l.valid() {
		return r, invalidLimit(l)
	}
	a := getArgv(algoCommands[l.algo], 4)
	if l.algo == AlgoPolicy {
		a.str(l.policy)
		r.Policy = l.policy
	}
	a.key(l.key)
	if l.algo != AlgoPolicy {
		l.appendParams(a)
	}
	a.int(n)
	err := c.decide(ctx, a, &r)
	return r, err
}

func invalidLimit(l Limit) error {
	if (l.algo == AlgoToken || l.algo == AlgoLeaky) && !l.rate.Valid() {
		return fmt.Errorf("%w: %d per %v", ErrInvalidRate, l.rate.n, l.rate.per)
	}
	return fmt.Errorf("%w: %v on %q (count %d, window %v, policy %q)", ErrInvalidLimit, l.algo, l.key, l.count, l.window, l.policy)
}

// Token takes n tokens from a token bucket of burst tokens that refills at rate (RL.TOKEN).
func (c *Client) Token(ctx context.Context, key string, rate Rate, burst, n int64) (Result, error) {
	return c.Decide(ctx, Token(key, rate, burst), n)
}

// Leaky queues n units in a leaky bucket that drains at rate and holds capacity units
// (RL.LEAKY). When admitted, Result.RetryAfter is how long to wait before acting; Wait sleeps
// it (and says how to size a queue that several consumers share).
func (c *Client) Leaky(ctx context.Context, key string, rate Rate, capacity, n int64) (Result, error) {
	return c.Decide(ctx, Leaky(key, rate, capacity), n)
}

// Fixed counts n units in a fixed window of limit units (RL.FIXED).
func (c *Client) Fixed(ctx context.Context, key string, limit int64, window time.Duration, n int64) (Result, error) {
	return c.Decide(ctx, Fixed(key, limit, window), n)
}

// Sliding counts n units in a sliding window counter of limit units (RL.SLIDING).
func (c *Client) Sliding(ctx context.Context, key string, limit int64, window time.Duration, n int64) (Result, error) {
	return c.Decide(ctx, Sliding(key, limit, window), n)
}

// Log counts n units in an exact sliding window log of limit units (RL.LOG).
func (c *Client) Log(ctx context.Context, key string, limit int64, window time.Duration, n int64) (Result, error) {
	return c.Decide(ctx, Log(key, limit, window), n)
}

// Check decides n units for subject under the server's named policy (RL.CHECK policy subject
// n): the policy's limit, or the subject's override (SetOverride). An UNLIMITED override admits
// and counts nothing; a DENY override refuses with RetryAfter Never. Result.Policy is the
// policy; with named replies Mode (ModeUnlimited, ModeDeny …), Quota, Window and WouldDeny are
// set too. An unknown policy is ErrNoSuchPolicy.
func (c *Client) Check(ctx context.Context, policy, subject string, n int64) (Result, error) {
	return c.Decide(ctx, Policy(policy, subject), n)
}

// Throttle is redis-cell's CL.THROTTLE: count per period (whole seconds) with bursts of
// maxBurst+1, taking quantity. The result is in the client's terms: Allowed is the opposite of
// redis-cell's "limited", and durations are whole seconds as redis-cell rounds them.
func (c *Client) Throttle(ctx context.Context, key string, maxBurst, count int64, period time.Duration, quantity int64) (Result, error) {
	var r Result
	if period <= 0 || period%time.Second != 0 || count <= 0 || maxBurst < 0 {
		return r, fmt.Errorf("%w: CL.THROTTLE needs max_burst ≥ 0, count > 0 and a period of whole seconds (got %d, %d, %v)",
			ErrInvalidLimit, maxBurst, count, period)
	}
	a := getArgv("CL.THROTTLE", 5)
	a.key(key)
	a.int(maxBurst)
	a.int(count)
	a.int(int64(period / time.Second))
	a.int(quantity)
	v, err := c.do(ctx, a)
	a.release()
	if err == nil {
		err = decodeThrottle(v, &r)
	}
	return r, err
}
