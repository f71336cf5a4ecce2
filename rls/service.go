package rls

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/policy"
)

// Decider carries out decisions: the store on a single node, the Raft node
// in a replicated group. Decide carries out reqs in order at now and writes
// each outcome to the same index of out; consecutive requests with the same
// nonzero Group are one all-or-nothing decision. A replicated node submits
// all of one call's requests as one submission: one log entry, whether it
// leads or forwards them to the leader.
type Decider interface {
	Decide(now int64, reqs []algorithms.Request, out []algorithms.Outcome)
}

// Rules gives the rules in force: policy.Registry. Each call reads it once
// and decides with that one immutable set, so that a reload never mixes old
// and new rules within a call.
type Rules interface {
	Rules() *policy.RuleSet
}

// Clock is the edge's clock, in unix nanoseconds (commands.Clock). The
// service reads it once per call; nothing below it reads a clock.
type Clock interface {
	Now() int64
}

// Batch says how the descriptors of one call are decided.
type Batch uint8

const (
	// BatchDescriptor decides each descriptor on its own, as
	// envoyproxy/ratelimit does: a descriptor within its limit counts its
	// hits even when another one of the same call is over its limit.
	BatchDescriptor Batch = iota
	// BatchCall makes the call one all-or-nothing decision (RL.ALL): either
	// every descriptor that counts is within its limit and all of them
	// count their hits, or none counts anything. Shadow and quota_mode
	// descriptors and checks (hits 0) stay outside the group: they never
	// refuse the call.
	BatchCall
)

// UnknownDomain says how a call to a domain without rules is answered.
type UnknownDomain uint8

const (
	// UnknownDomainOK answers OK, each descriptor OK without a limit, as
	// envoyproxy/ratelimit does.
	UnknownDomainOK UnknownDomain = iota
	// UnknownDomainOverLimit answers OVER_LIMIT, each descriptor
	// OVER_LIMIT without a limit: fail closed.
	UnknownDomainOverLimit
	// UnknownDomainError fails the call with NOT_FOUND; Envoy then applies
	// its filter's failure_mode_deny.
	UnknownDomainError
)

// Config tunes a Service. The zero value is envoyproxy/ratelimit's
// behaviour without response headers.
type Config struct {
	Batch         Batch
	UnknownDomain UnknownDomain
	Headers       Headers
	// CountOverLimit makes a descriptor that is over its limit take what
	// its limit has left, so that it stays over its limit until the window
	// or bucket resets, as envoyproxy/ratelimit's counters do when they keep
	// counting denied hits (its default). Without it a denied descriptor
	// changes nothing.
	CountOverLimit bool
	// MaxKey is the longest key a call may make, in bytes (the RESP port's
	// proto-max-bulk-len, the longest key a RESP client can name): a
	// descriptor whose domain, entry keys and values add up to more is
	// refused with INVALID_ARGUMENT. 0: no limit.
	MaxKey int
}

// DefaultConfig is envoyproxy/ratelimit's behaviour: each descriptor
// decided on its own, unknown domains OK, denied hits not counted, no
// response headers.
func DefaultConfig() Config {
	return Config{Batch: BatchDescriptor, UnknownDomain: UnknownDomainOK, Headers: HeadersOff}
}

// Validate reports a field outside its constants.
func (c *Config) Validate() error {
	switch {
	case c.Batch > BatchCall:
		return fmt.Errorf("rls: unknown Batch %d", c.Batch)
	case c.UnknownDomain > UnknownDomainError:
		return fmt.Errorf("rls: unknown UnknownDomain %d", c.UnknownDomain)
	case c.Headers > HeadersRateLimitTrio:
		return fmt.Errorf("rls: unknown Headers %d", c.Headers)
	case c.MaxKey < 0:
		return fmt.Errorf("rls: MaxKey %d: want 0 (no limit) or more", c.MaxKey)
	}
	return nil
}

// Service answers ShouldRateLimit. It is safe for concurrent use.
type Service struct {
	rlsv3.UnimplementedRateLimitServiceServer

	cfg   Config
	dec   Decider
	rules Rules
	clock Clock
	pool  sync.Pool // of *call

	maxKey atomic.Int64 // Config.MaxKey, changed by SetMaxKey

	calls, overLimit, shadowDenied, failed atomic.Int64
}

// New returns a service that decides with dec under the rules of rules,
// at the instants of clock.
func New(cfg Config, dec Decider, rules Rules, clock Clock) *Service {
	s := &Service{cfg: cfg, dec: dec, rules: rules, clock: clock}
	s.pool.New = func() any { return new(call) }
	s.maxKey.Store(int64(cfg.MaxKey))
	return s
}

// SetMaxKey changes Config.MaxKey for the calls that start from now on.
// Any goroutine.
func (s *Service) SetMaxKey(n int) {
	s.maxKey.Store(int64(n))
}

// Stats counts the calls answered, those answered OVER_LIMIT, the shadow
// descriptors that were over their limit (answered OK), and the calls that
// failed.
type Stats struct {
	Calls, OverLimit, ShadowDenied, Failed int64
}

// Stats returns the counters since New.
func (s *Service) Stats() Stats {
	return Stats{Calls: s.calls.Load(), OverLimit: s.overLimit.Load(),
		ShadowDenied: s.shadowDenied.Load(), Failed: s.failed.Load()}
}

// ShouldRateLimit answers one call: read the request, plan it with the
// rules in force, decide, and compose the answer. It reads the clock once.
func (s *Service) ShouldRateLimit(_ context.Context, req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	c := s.pool.Get().(*call)
	defer s.put(c)
	resp, err := s.answer(c, req)
	if err != nil {
		s.failed.Add(1)
		return nil, err
	}
	s.calls.Add(1)
	if resp.OverallCode == rlsv3.RateLimitResponse_OVER_LIMIT {
		s.overLimit.Add(1)
	}
	s.shadowDenied.Add(int64(c.resp.ShadowDenied))
	return resp, nil
}

func (s *Service) answer(c *call, req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	if err := readRequest(c, req, s.maxKey.Load()); err != nil {
		return nil, err
	}
	rs := s.rules.Rules()
	domain := bytesOf(req.GetDomain())
	if err := rs.Plan(&c.plan, domain, policy.RequestHits(req.GetHitsAddend()), c.descs); err != nil {
		return nil, planError(err)
	}
	unknown := !rs.HasDomain(domain)
	if unknown && s.cfg.UnknownDomain == UnknownDomainError {
		return nil, unknownDomain(req.GetDomain())
	}
	c.adjust()
	now := s.clock.Now()
	s.decide(c, now)
	if err := policy.Compose(&c.resp, c.plan.Items, c.outcomes, now); err != nil {
		return nil, decisionError(err)
	}
	if unknown && s.cfg.UnknownDomain == UnknownDomainOverLimit {
		c.resp.Code = policy.CodeOverLimit
		for i := range c.resp.Statuses {
			c.resp.Statuses[i].Code, c.resp.Statuses[i].WouldBe = policy.CodeOverLimit, policy.CodeOverLimit
		}
	}
	return s.respond(c, rs, domain, now), nil
}

// put returns c to the pool without the request's strings and the
// outcomes' errors, so that a call in the pool keeps no request alive. Only
// the slices' lengths need clearing: each call fills its slices from
// length 0, and put cleared whatever an earlier call left beyond that.
func (s *Service) put(c *call) {
	clear(c.entries)
	clear(c.descs)
	clear(c.outs)
	clear(c.outcomes)
	s.pool.Put(c)
}
