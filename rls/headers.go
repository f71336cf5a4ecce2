package rls

import (
	"math"
	"strconv"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/policy"
)

// Headers selects the response headers a call's answer asks Envoy to add
// (response_headers_to_add): to the upstream's response when the call is
// OK, to the 429 when it is OVER_LIMIT.
type Headers uint8

const (
	// HeadersOff adds none.
	HeadersOff Headers = iota
	// HeadersIETF adds the RateLimit and RateLimit-Policy fields of
	// draft-ietf-httpapi-ratelimit-headers-11 (May 2026), one list item per
	// descriptor with a limit:
	//
	//	RateLimit-Policy: "name";q=100;w=60
	//	RateLimit: "name";r=42;t=17
	HeadersIETF
	// HeadersXRateLimit adds X-RateLimit-Limit, X-RateLimit-Remaining and
	// X-RateLimit-Reset for the descriptor nearest its limit, as
	// envoyproxy/ratelimit computes them, under the names Envoy's own
	// filter gives them.
	HeadersXRateLimit
	// HeadersRateLimitTrio is HeadersXRateLimit under the names
	// envoyproxy/ratelimit uses by default: RateLimit-Limit,
	// RateLimit-Remaining and RateLimit-Reset (draft-03 of the IETF draft).
	HeadersRateLimitTrio
)

// Every mode but HeadersOff adds Retry-After to an OVER_LIMIT answer: the
// seconds (rounded up) until every descriptor over its limit would admit
// the same hits, unless one of them never can (hits above its limit, or
// requests_per_unit 0).

// maxNameLen bounds a policy name in the IETF fields; longer names (a
// detailed_metric rule's name holds the request's values) are cut.
const maxNameLen = 128

// headers returns the headers of c's answer in mode h; rs and domain name
// the IETF fields' policies.
func (c *call) headers(h Headers, rs *policy.RuleSet, domain []byte) []*corev3.HeaderValue {
	if h == HeadersOff {
		return nil
	}
	var out []*corev3.HeaderValue
	switch h {
	case HeadersIETF:
		out = c.ietf(rs, domain)
	case HeadersXRateLimit:
		out = trio(c.resp.Statuses, "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset")
	case HeadersRateLimitTrio:
		out = trio(c.resp.Statuses, "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset")
	}
	if c.resp.Code == policy.CodeOverLimit {
		if wait, ok := retryAfter(c.resp.Statuses); ok {
			out = append(out, &corev3.HeaderValue{Key: "Retry-After", Value: strconv.FormatInt(wait, 10)})
		}
	}
	return out
}

// ietf builds RateLimit-Policy and RateLimit, one item per status with a
// limit (unlimited, replaced and unmatched descriptors have none). A
// policy is named by its rule's rate_limit name, else by the rule's
// metrics name in envoyproxy/ratelimit's form (domain.key_value…).
func (c *call) ietf(rs *policy.RuleSet, domain []byte) []*corev3.HeaderValue {
	var pol, lim []byte
	for i := range c.resp.Statuses {
		st := &c.resp.Statuses[i]
		if !st.HasLimit {
			continue
		}
		c.name = c.name[:0]
		if st.Name != "" {
			c.name = append(c.name, st.Name...)
		} else {
			c.name, _ = rs.AppendStatsKey(c.name, domain, c.descs[i])
		}
		q, w := quotaOf(st, c.extra[i].mult)
		if len(pol) > 0 {
			pol, lim = append(pol, ", "...), append(lim, ", "...)
		}
		pol = appendSFString(pol, c.name)
		pol = append(pol, ";q="...)
		pol = strconv.AppendInt(pol, q, 10)
		pol = append(pol, ";w="...)
		pol = strconv.AppendInt(pol, w, 10)
		lim = appendSFString(lim, c.name)
		lim = append(lim, ";r="...)
		lim = strconv.AppendInt(lim, max(st.Remaining, 0), 10)
		lim = append(lim, ";t="...)
		lim = strconv.AppendInt(lim, ceilSeconds(st.ResetAfter), 10)
	}
	if len(pol) == 0 {
		return nil
	}
	return []*corev3.HeaderValue{
		{Key: "RateLimit-Policy", Value: string(pol)},
		{Key: "RateLimit", Value: string(lim)},
	}
}

// quotaOf is a status's quota and window (whole seconds, at least 1) in
// the terms of RateLimit-Policy: policy.Quota of the exact limit (the
// rule's requests_per_unit and unit for a fixed window), or 0 per unit
// (× unit_multiplier) for requests_per_unit 0.
func quotaOf(st *policy.Status, mult uint32) (q, w int64) {
	if st.Exact.Algo == algorithms.None {
		return 0, max(st.Current.Unit.Seconds()*int64(mult), 1)
	}
	q, wns := policy.Quota(st.Exact)
	return q, max(ceilSeconds(wns), 1)
}

// trio builds envoyproxy/ratelimit's three headers for the descriptor
// nearest its limit: the one with the least limit_remaining among those
// with a current limit, except that a descriptor over its limit (and not
// quota_mode) takes precedence, the last one if several are. Limit is the
// rule's requests_per_unit, Remaining its limit_remaining, Reset the
// seconds to duration_until_reset, rounded up (for a fixed window, the
// window's end, as envoyproxy/ratelimit computes it).
func trio(sts []policy.Status, limit, remaining, reset string) []*corev3.HeaderValue {
	best, least := -1, int64(math.MaxUint32)
	for i := range sts {
		st := &sts[i]
		if !st.HasLimit {
			continue
		}
		rem := remainingOf(st)
		if rem < least {
			best, least = i, rem
		}
		if st.Code == policy.CodeOverLimit && st.Flags&policy.FlagQuota == 0 {
			best, least = i, 0
		}
	}
	if best < 0 {
		return nil
	}
	st := &sts[best]
	return []*corev3.HeaderValue{
		{Key: limit, Value: strconv.FormatUint(uint64(st.Current.RequestsPerUnit), 10)},
		{Key: remaining, Value: strconv.FormatInt(remainingOf(st), 10)},
		{Key: reset, Value: strconv.FormatInt(ceilSeconds(st.ResetAfter), 10)},
	}
}

// retryAfter is the seconds, rounded up, until every descriptor over its
// limit would admit the same hits again; false if one of them never can.
func retryAfter(sts []policy.Status) (int64, bool) {
	var wait int64
	found := false
	for i := range sts {
		st := &sts[i]
		if st.Code != policy.CodeOverLimit {
			continue
		}
		if st.RetryAfter == algorithms.NeverNS {
			return 0, false
		}
		wait, found = max(wait, st.RetryAfter), true
	}
	return ceilSeconds(wait), found
}

// remainingOf is a status's limit_remaining: Remaining within the uint32
// the protocol carries.
func remainingOf(st *policy.Status) int64 {
	return min(max(st.Remaining, 0), math.MaxUint32)
}

// ceilSeconds converts nanoseconds to whole seconds, rounded up.
func ceilSeconds(ns int64) int64 {
	if ns <= 0 {
		return 0
	}
	return (ns-1)/1e9 + 1
}

// appendSFString appends s as a Structured Field String (RFC 9651 §3.3.3):
// in double quotes, '"' and '\' escaped with '\'. Bytes a String cannot
// hold (outside 0x20–0x7E) are written %XX, and s is cut at maxNameLen
// bytes, so that the item stays one valid, short token of the field.
func appendSFString(dst, s []byte) []byte {
	const hex = "0123456789ABCDEF"
	if len(s) > maxNameLen {
		s = s[:maxNameLen]
	}
	dst = append(dst, '"')
	for _, b := range s {
		switch {
		case b == '"' || b == '\\':
			dst = append(dst, '\\', b)
		case b < 0x20 || b > 0x7E:
			dst = append(dst, '%', hex[b>>4], hex[b&15])
		default:
			dst = append(dst, b)
		}
	}
	return append(dst, '"')
}
