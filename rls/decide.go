package rls

import (
	"math"
	"slices"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/policy"
)

// decide asks the keyspace for every planned item that decides, in one
// Decide call (one log entry in a replicated group), and writes each
// item's outcome to c.outcomes. With BatchCall the items that can refuse
// the call form one group, placed first; the others follow, each on its
// own. With CountOverLimit, the denied ones then take what they have left,
// in a second Decide call.
func (s *Service) decide(c *call, now int64) {
	items := c.plan.Items
	c.reqs, c.idx = c.reqs[:0], c.idx[:0]
	if s.cfg.Batch == BatchCall {
		for i := range items {
			if it := &items[i]; it.Decides() && grouped(it) {
				r := it.Request()
				r.Group = 1
				c.reqs = append(c.reqs, r)
				c.idx = append(c.idx, i)
			}
		}
		if len(c.reqs) == 1 {
			c.reqs[0].Group = 0 // a group of one is an ordinary decision
		}
	}
	for i := range items {
		if it := &items[i]; it.Decides() && (s.cfg.Batch != BatchCall || !grouped(it)) {
			c.reqs = append(c.reqs, it.Request())
			c.idx = append(c.idx, i)
		}
	}
	c.outs = grow(c.outs, len(c.reqs))
	c.outcomes = grow(c.outcomes, len(items))
	clear(c.outcomes)
	if len(c.reqs) > 0 {
		s.dec.Decide(now, c.reqs, c.outs)
	}
	if s.cfg.CountOverLimit {
		s.countOverLimit(c, now)
	}
	for k, i := range c.idx {
		c.outcomes[i] = c.outs[k]
	}
}

// grouped reports whether a deciding item joins a BatchCall group: one
// that takes hits and can refuse the call. A shadow descriptor never
// refuses it, a quota_mode one refuses it only together with the other
// quota_mode ones, and a check (hits 0) or a refund takes nothing.
func grouped(it *policy.Item) bool {
	return it.Hits > 0 && it.Flags&(policy.FlagShadow|policy.FlagQuota) == 0
}

// countOverLimit makes each denied decision take what its limit has left
// (CountOverLimit), so that the descriptor stays over its limit until its
// window or bucket resets, as a counter that keeps counting denied hits
// does. The outcome then reports the state after the take: what is left
// (usually 0) and the time until the state resets; its wait is computed
// again so that it is never early (waitAfterTake).
func (s *Service) countOverLimit(c *call, now int64) {
	n := len(c.reqs)
	for k := 0; k < n; k++ {
		o, r := &c.outs[k], &c.reqs[k]
		if o.Err != nil || o.Result.Allowed || r.N <= 0 || o.Result.Remaining <= 0 {
			continue
		}
		c.reqs = append(c.reqs, algorithms.Request{Key: r.Key, Limit: r.Limit, N: o.Result.Remaining})
		c.idx = append(c.idx, k) // the index of the denied request, for now
	}
	if len(c.reqs) == n {
		return
	}
	takes := c.reqs[n:]
	c.outs = slices.Grow(c.outs[:n], len(takes))[:len(c.reqs)] // keeps the first n outcomes
	s.dec.Decide(now, takes, c.outs[n:])
	for j := range takes {
		k, t := c.idx[n+j], &c.outs[n+j]
		if t.Err != nil || !t.Result.Allowed {
			continue // someone else took it first: the denial stands as it was
		}
		o := &c.outs[k]
		o.Result.Remaining, o.Result.ResetAfter = t.Result.Remaining, t.Result.ResetAfter
		o.Result.RetryAfter = waitAfterTake(c.reqs[k], o.Result.RetryAfter, t.Result.ResetAfter)
	}
	c.reqs, c.idx = c.reqs[:n], c.idx[:n]
}

// waitAfterTake is how long a request denied with wait retry must wait
// once what was left has been taken, the state then being back to its
// initial one after reset. A fixed window's wait is its window's end,
// which the take does not move. A token or leaky bucket of Count units,
// one per Period, has room for N units again N units before it is full.
// A sliding window or log waits, at most, until its state resets; that is
// never early.
func waitAfterTake(r algorithms.Request, retry, reset int64) int64 {
	if retry == algorithms.NeverNS {
		return retry
	}
	switch r.Limit.Algo {
	case algorithms.Fixed:
		return retry
	case algorithms.Token, algorithms.Leaky:
		units := r.Limit.Count - r.N // ≥ 0: retry is not NeverNS, so N ≤ Count
		if units > 0 && r.Limit.Period > math.MaxInt64/units {
			return max(reset, retry)
		}
		return max(reset-units*r.Limit.Period, retry)
	}
	return max(reset, retry)
}

// grow returns s with length n, reusing its array when it is large enough.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/2)
	}
	return s[:n]
}
