package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// The commands of the policies: kept here, in one place, with their syntax.
const (
	cmdCheck = "RL.CHECK" // RL.CHECK policy subject [policy subject …] n
	cmdMatch = "RL.MATCH" // RL.MATCH domain HITS n DESCRIPTOR k v [k v …] [DESCRIPTOR …]
)

// All decides n units on every limit at once (RL.ALL): admitted only if each admits, and then n
// is taken from each; if any denies, nothing is taken anywhere. Limits may use any keys and the
// algorithms Token, Leaky, Fixed, Sliding and Log; policies go to CheckAll.
func (c *Client) All(ctx context.Context, n int64, limits ...Limit) (AllResult, error) {
	var out AllResult
	err := c.AllTo(ctx, &out, n, limits...)
	return out, err
}

// AllTo is All writing into out, whose Results slice it reuses: in a loop it does not allocate
// beyond go-redis's own allocations.
func (c *Client) AllTo(ctx context.Context, out *AllResult, n int64, limits ...Limit) error {
	if len(limits) == 0 {
		return fmt.Errorf("%w: RL.ALL needs at least one limit", ErrInvalidLimit)
	}
	for _, l := range limits {
		if l.algo == AlgoPolicy {
			return fmt.Errorf("%w: policy %q in RL.ALL: use CheckAll for policies", ErrInvalidLimit, l.policy)
		}
		if !l.valid() {
			return invalidLimit(l)
		}
	}
	a := getArgv("RL.ALL", 1+4*len(limits))
	a.int(n)
	for i := range limits {
		a.str(limits[i].algo.String())
		a.key(limits[i].key)
		limits[i].appendParams(a)
	}
	v, err := c.do(ctx, a)
	a.release()
	if err != nil {
		return err
	}
	return decodeAll(v, out, nil)
}

// CheckAll decides n units for every (policy, subject) pair at once, all or nothing, as All
// does for explicit limits: "per user + per route + global" in one round trip. Every limit must
// be a Policy. Each result's Policy is its policy's name.
func (c *Client) CheckAll(ctx context.Context, n int64, checks ...Limit) (AllResult, error) {
	var out AllResult
	if len(checks) == 0 {
		return out, fmt.Errorf("%w: RL.CHECK needs at least one policy", ErrInvalidLimit)
	}
	policies := make([]string, len(checks))
	for i, l := range checks {
		if l.algo != AlgoPolicy || !l.valid() {
			return out, fmt.Errorf("%w: CheckAll takes policies (client.Policy), got %v on %q", ErrInvalidLimit, l.algo, l.key)
		}
		policies[i] = l.policy
	}
	a := getArgv(cmdCheck, 2*len(checks)+1)
	for i := range checks {
		a.str(checks[i].policy)
		a.key(checks[i].key)
	}
	a.int(n)
	v, err := c.do(ctx, a)
	a.release()
	if err != nil {
		return out, err
	}
	return out, decodeAll(v, &out, policies)
}

// Match applies a rules file's domain to a request's descriptors, the way Envoy's rate limit
// service does (RL.MATCH), taking hits units (0 checks without counting). It returns the
// overall code and one status per descriptor.
func (c *Client) Match(ctx context.Context, domain string, hits int64, descriptors ...Descriptor) (MatchResult, error) {
	var out MatchResult
	if domain == "" || len(descriptors) == 0 {
		return out, fmt.Errorf("%w: RL.MATCH needs a domain and at least one descriptor", ErrInvalidLimit)
	}
	n := 3
	for _, d := range descriptors {
		if len(d) == 0 {
			return out, fmt.Errorf("%w: an empty descriptor", ErrInvalidLimit)
		}
		n += 1 + 2*len(d)
	}
	a := getArgv(cmdMatch, n)
	a.str(domain)
	a.str("HITS")
	a.int(hits)
	for _, d := range descriptors {
		a.str("DESCRIPTOR")
		for _, e := range d {
			a.str(e.Key)
			a.str(e.Value)
		}
	}
	v, err := c.do(ctx, a)
	a.release()
	if err != nil {
		return out, err
	}
	return out, decodeMatch(v, &out)
}

// Reset forgets the state of keys (RL.RESET), putting their limiters back to their initial
// state, and returns how many held state.
func (c *Client) Reset(ctx context.Context, keys ...string) (int64, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	a := getArgv("RL.RESET", len(keys))
	for _, k := range keys {
		a.key(k)
	}
	return c.integer(ctx, a)
}

// ResetPolicy forgets subject's state under policy (RL.RESET POLICY policy subject). It needs a
// server with policies: an older one would read POLICY and the two names as keys to reset.
func (c *Client) ResetPolicy(ctx context.Context, policy, subject string) (int64, error) {
	a := getArgv("RL.RESET", 3)
	a.str("POLICY")
	a.str(policy)
	a.key(subject)
	return c.integer(ctx, a)
}

// integer sends a's command, whose reply is an integer, and releases a.
func (c *Client) integer(ctx context.Context, a *argv) (int64, error) {
	v, err := c.do(ctx, a)
	a.release()
	if err != nil {
		return 0, err
	}
	n, ok := asInt(v)
	if !ok {
		return 0, errReply("integer", v)
	}
	return n, nil
}

// Info returns a key's limiter state (RL.INFO); Info.Exists is false when it holds none.
func (c *Client) Info(ctx context.Context, key string) (Info, error) {
	var info Info
	a := getArgv("RL.INFO", 1)
	a.key(key)
	v, err := c.do(ctx, a)
	a.release()
	if err != nil || v == nil {
		if isNil(err) {
			err = nil
		}
		return info, err
	}
	return info, decodeInfo(v, &info)
}

func decodeInfo(v any, info *Info) error {
	ns := func(val any) int64 { n, _ := asInt(val); return n }
	var bad bool
	if !eachField(v, func(name string, val any) {
		switch name {
		case "algorithm":
			info.Algorithm, _ = val.(string)
		case "expire_at_ns":
			info.ExpireAt = unixNano(ns(val))
		case "ttl_ms":
			info.TTL = millis(ns(val))
		case "tat_ns":
			info.TAT = unixNano(ns(val))
		case "window_start_ns":
			info.WindowStart = unixNano(ns(val))
		case "count":
			info.Count = ns(val)
		case "current":
			info.Current = ns(val)
		case "previous":
			info.Previous = ns(val)
		case "capacity":
			info.Capacity = ns(val)
		case "entries_ns":
			list, _ := val.([]any)
			for _, e := range list {
				info.Entries = append(info.Entries, unixNano(ns(e)))
			}
		case "leases":
			list, _ := val.([]any)
			for _, e := range list {
				pair, _ := e.([]any)
				if len(pair) != 2 {
					bad = true
					continue
				}
				info.Leases = append(info.Leases, LeaseState{IDHash: ns(pair[0]), End: unixNano(ns(pair[1]))})
			}
		}
	}) || bad || info.Algorithm == "" {
		return errReply("RL.INFO", v)
	}
	return nil
}

func unixNano(ns int64) time.Time { return time.Unix(0, ns) }

func isNil(err error) bool { return errors.Is(err, redis.Nil) }
