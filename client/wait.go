package client

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// Wait takes n units from l, waiting as long as it takes: the way a queue consumer slows down
// instead of dropping work. It returns the admitting decision, or an error when ctx ends first,
// the server fails, or the request can never be admitted (ErrNeverAdmitted: n above the limit,
// or a DENY override).
//
// A denied decision is asked again after its RetryAfter plus jitter (WithJitter), so that
// waiters told the same instant spread out instead of colliding. If ctx has a deadline that a
// denied decision's RetryAfter would pass, Wait returns at once with an error that matches
// context.DeadlineExceeded rather than sleeping in vain.
//
// With a leaky bucket (Leaky, or a Policy whose policy or subject override is LEAKY) the
// decision is normally admitted with a delay, the caller's place in the queue: Wait sleeps
// exactly that delay before it returns, so that admitted work leaves at the bucket's rate,
// first come first served. If ctx ends during that sleep, Wait gives the units
// back (a best-effort refund) and returns ctx's error. For consumers that share a bucket, give
// it one place more than there are consumers (Leaky(key, rate, consumers+1)): a consumer that
// acts and asks again at once holds two places for an instant, and with fewer places the
// queue is full when it asks, the others compete for the freed place on retry, and a consumer
// can lose many times in a row. A refused leaky decision is asked again without jitter, at
// the instant a place frees, where jitter would only hand the place to whoever asks first.
func (c *Client) Wait(ctx context.Context, l Limit, n int64) (Result, error) {
	for {
		r, err := c.Decide(ctx, l, n)
		if err != nil {
			return r, err
		}
		if r.Allowed {
			// Only a leaky bucket admits with a delay: an explicit one, or a policy's or an
			// override's (the client does not know a policy's algorithm; the others say 0).
			if (l.algo == AlgoLeaky || l.algo == AlgoPolicy) && r.RetryAfter > 0 {
				if err := c.sleep(ctx, r.RetryAfter); err != nil {
					c.refund(ctx, l, n)
					return r, err
				}
			}
			return r, nil
		}
		if r.Never() {
			return r, fmt.Errorf("%w: %d units on %q (limit %d)", ErrNeverAdmitted, n, l.key, r.Limit)
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < r.RetryAfter {
			return r, fmt.Errorf("sluice: admitted in %v, after the context's deadline: %w", r.RetryAfter, context.DeadlineExceeded)
		}
		d := r.RetryAfter
		if l.algo != AlgoLeaky {
			d += c.jitterFor(d)
		}
		if err := c.sleep(ctx, d); err != nil {
			return r, err
		}
	}
}

// jitterFor returns a random extra wait for a retry after d: up to the larger of d × fraction
// and the floor.
func (c *Client) jitterFor(d time.Duration) time.Duration {
	span := max(time.Duration(float64(d)*c.jitter), c.jitterMin)
	if span <= 0 {
		return 0
	}
	return rand.N(span)
}

// refund gives back n units that a leaky bucket queued for a waiter that left, so that the
// queue does not keep a place nobody will use. It is best effort: it outlives ctx's
// cancellation for at most a second, and its error is dropped (the place drains by itself).
func (c *Client) refund(ctx context.Context, l Limit, n int64) {
	if n <= 0 {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	_, _ = c.Decide(rctx, l, -n)
}
