package policy

import (
	"math"

	"github.com/sluice-rl/sluice/algorithms"
)

// Code is an RLS v3 response code, numbered as the protocol numbers it
// (envoy.service.ratelimit.v3.RateLimitResponse.Code).
type Code uint8

const (
	CodeUnknown   Code = 0
	CodeOK        Code = 1
	CodeOverLimit Code = 2
)

func (c Code) String() string {
	switch c {
	case CodeOK:
		return "OK"
	case CodeOverLimit:
		return "OVER_LIMIT"
	}
	return "UNKNOWN"
}

// UnlimitedRemaining is limit_remaining of an unlimited descriptor, as
// envoyproxy/ratelimit reports it (math.MaxUint32).
const UnlimitedRemaining = math.MaxUint32

// Status is one descriptor's answer: the RLS DescriptorStatus, plus
// sluice's exact parameters.
type Status struct {
	// Code is what the caller acts on; WouldBe is the code without
	// shadow_mode (they differ only for a shadow descriptor over its limit).
	Code, WouldBe Code
	// HasLimit says whether a current limit is reported: false without a
	// rule limit and for unlimited rules, as envoyproxy/ratelimit does.
	HasLimit bool
	Current  EnvoyLimit // current_limit
	Name     string     // current_limit.name
	Exact    algorithms.Limit
	// Remaining is limit_remaining: what is left after this call (floor);
	// UnlimitedRemaining for an unlimited rule, 0 without a limit.
	Remaining int64
	// ResetAfter is duration_until_reset in ns: for a fixed window (and
	// requests_per_unit 0) the time to the window's end, as
	// envoyproxy/ratelimit computes it; else the time until the state is
	// back to its initial one. 0 without a limit.
	ResetAfter int64
	// RetryAfter is the decision's wait in ns (algorithms.Result's), also
	// for a shadow descriptor, where it is the wait it would have had;
	// algorithms.NeverNS when the request can never be admitted.
	RetryAfter int64
	Flags      Flags
}

// Response is a whole answer.
type Response struct {
	Code     Code
	Statuses []Status
	// ShadowDenied counts the shadow descriptors that were over their limit
	// (the metrics' would-be denials).
	ShadowDenied int
}

// Compose fills resp from the items of a Plan and the outcome of each
// decision: outcomes[i] answers items[i].Request() and is read only when
// items[i].Decides() (len(outcomes) must equal len(items)). now is the
// instant the decisions were made at, unix ns. The overall code is
// OVER_LIMIT when a descriptor that is not quota_mode is over its limit, or
// when every quota_mode descriptor is, and OK otherwise; shadow descriptors
// count as OK. An outcome's error (WRONGTYPE, OOM, UNKNOWN …) is returned
// as it is: the request has no answer. resp.Statuses is reused; Compose
// does not allocate once it has grown.
func Compose(resp *Response, items []Item, outcomes []algorithms.Outcome, now int64) error {
	resp.Statuses = resp.Statuses[:0]
	resp.Code, resp.ShadowDenied = CodeOK, 0
	if len(outcomes) != len(items) {
		return errLimit("%d outcomes for %d items", len(outcomes), len(items))
	}
	failed, quota, quotaFailed := 0, 0, 0
	for i := range items {
		it := &items[i]
		st := Status{Code: CodeOK, WouldBe: CodeOK, Flags: it.Flags}
		switch {
		case it.Flags&FlagNoRule != 0:
		case it.Flags&FlagUnlimited != 0:
			st.Remaining = UnlimitedRemaining
		case it.Flags&FlagDeny != 0:
			st.HasLimit, st.Current, st.Name = true, it.Envoy, it.Name
			st.ResetAfter = untilWindowEnd(now, it.Envoy.Unit.Nanos())
			if it.Hits > 0 {
				st.WouldBe, st.RetryAfter = CodeOverLimit, algorithms.NeverNS
			}
		default:
			o := &outcomes[i]
			if o.Err != nil {
				resp.Statuses = resp.Statuses[:0]
				return o.Err
			}
			r := &o.Result
			st.HasLimit, st.Current, st.Name, st.Exact = true, it.Envoy, it.Name, it.Limit
			st.Remaining, st.RetryAfter, st.ResetAfter = r.Remaining, r.RetryAfter, r.ResetAfter
			if it.Limit.Algo == algorithms.Fixed {
				st.ResetAfter = untilWindowEnd(now, it.Limit.Period)
			}
			if !r.Allowed {
				st.WouldBe = CodeOverLimit
			}
		}
		st.Code = st.WouldBe
		if st.WouldBe == CodeOverLimit && it.Flags&FlagShadow != 0 {
			st.Code = CodeOK
			resp.ShadowDenied++
		}
		if it.Flags&FlagQuota != 0 && it.Flags&(FlagNoRule|FlagUnlimited) == 0 {
			quota++
			if st.Code == CodeOverLimit {
				quotaFailed++
			}
		} else if st.Code == CodeOverLimit {
			failed++
		}
		resp.Statuses = append(resp.Statuses, st)
	}
	if failed > 0 || quota > 0 && quota == quotaFailed {
		resp.Code = CodeOverLimit
	}
	return nil
}

// untilWindowEnd returns the time from now to the end of the window of
// length w (aligned to multiples of w since the Unix epoch) holding now.
func untilWindowEnd(now, w int64) int64 {
	if w <= 0 {
		return 0
	}
	r := now % w
	if r < 0 {
		r += w
	}
	return w - r
}
