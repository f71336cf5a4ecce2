package rls

import (
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/sluice-rl/sluice/policy"
)

// respond turns the composed answer (c.resp) into the protocol's response:
// the overall code, one status per descriptor in request order, and the
// headers of s.cfg.Headers. A status has a current limit (with its rule's
// rate_limit name, and the override's unit_multiplier) and a
// duration_until_reset when a limit applied; limit_remaining is what is
// left after the call, 4294967295 for an unlimited rule, and 0 without a
// limit, as envoyproxy/ratelimit reports them.
//
// The response's messages are allocated in slabs: one slice of statuses,
// one of limits and one of durations per call.
func (s *Service) respond(c *call, rs *policy.RuleSet, domain []byte, now int64) *rlsv3.RateLimitResponse {
	sts := c.resp.Statuses
	n, limited := len(sts), 0
	for i := range sts {
		if sts[i].HasLimit {
			limited++
		}
	}
	out := &rlsv3.RateLimitResponse{
		OverallCode: code(c.resp.Code),
		Statuses:    make([]*rlsv3.RateLimitResponse_DescriptorStatus, n),
	}
	slab := make([]rlsv3.RateLimitResponse_DescriptorStatus, n)
	limits := make([]rlsv3.RateLimitResponse_RateLimit, limited)
	durs := make([]durationpb.Duration, limited)
	l := 0
	for i := range sts {
		st, ps := &sts[i], &slab[i]
		ps.Code = code(st.Code)
		ps.LimitRemaining = uint32(remainingOf(st))
		if st.HasLimit {
			lim, d := &limits[l], &durs[l]
			l++
			lim.RequestsPerUnit = st.Current.RequestsPerUnit
			lim.Unit = rlsv3.RateLimitResponse_RateLimit_Unit(st.Current.Unit)
			lim.Name = st.Name
			reset := st.ResetAfter
			if m := c.extra[i].mult; m > 1 && st.Flags&policy.FlagOverride != 0 {
				lim.UnitMultiplier = wrapperspb.UInt32(m)
				if st.Flags&policy.FlagDeny != 0 {
					reset = untilWindowEnd(now, st.Current.Unit.Nanos()*int64(m))
					st.ResetAfter = reset
				}
			}
			d.Seconds, d.Nanos = reset/1e9, int32(reset%1e9)
			ps.CurrentLimit, ps.DurationUntilReset = lim, d
		}
		out.Statuses[i] = ps
	}
	out.ResponseHeadersToAdd = c.headers(s.cfg.Headers, rs, domain)
	return out
}

// code converts a policy code: the values are the protocol's.
func code(c policy.Code) rlsv3.RateLimitResponse_Code {
	return rlsv3.RateLimitResponse_Code(c)
}

// untilWindowEnd is the time from now to the end of the window of length w
// (aligned to multiples of w since the Unix epoch) that holds now.
func untilWindowEnd(now, w int64) int64 {
	r := now % w
	if r < 0 {
		r += w
	}
	return w - r
}
