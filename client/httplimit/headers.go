package httplimit

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-rl/sluice/client"
)

// The response fields, as draft-ietf-httpapi-ratelimit-headers-11 (23 May 2026) defines them:
//
//	RateLimit-Policy: "name";q=<quota>;w=<window seconds>   (the policy: q units per w seconds)
//	RateLimit:        "name";r=<remaining>;t=<seconds>       (the current service limit)
//
// both Structured Field lists (RFC 9651), one item per policy, and its problem type for a
// request over its quota, https://iana.org/assignments/http-problem-types#quota-exceeded, with
// the extension member "violated-policies" (draft section 5.1), in an RFC 9457 problem+json body.

// Decision is one limit's decision, named for the response fields.
type Decision struct {
	// Name identifies the policy in RateLimit, RateLimit-Policy and violated-policies.
	Name string
	// Quota and Window are the policy (q and w): Quota units per Window. A Window under a
	// second is written as 1; none (0) leaves w out.
	Quota  int64
	Window time.Duration
	// ConcurrentRequests marks a concurrency limit (qu="concurrent-requests").
	ConcurrentRequests bool
	client.Result
}

// XRateLimit chooses the older X-RateLimit-Limit, -Remaining and -Reset fields that existing
// clients parse, and what -Reset holds.
type XRateLimit uint8

const (
	XRateLimitOff          XRateLimit = iota // not sent (the default)
	XRateLimitResetSeconds                   // X-RateLimit-Reset: seconds until the reset (GitHub-style delta)
	XRateLimitResetEpoch                     // X-RateLimit-Reset: the reset instant, Unix seconds
)

// HeaderOptions choose which fields SetHeaders writes.
type HeaderOptions struct {
	// NoIETF leaves out RateLimit and RateLimit-Policy.
	NoIETF bool
	// XRateLimit adds the X-RateLimit trio.
	XRateLimit XRateLimit
}

// ceilSeconds rounds d up to whole seconds; a negative d is 0.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// sfString writes s as a Structured Field string: printable ASCII, with `"` and `\` escaped;
// other bytes become '?'.
func sfString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c > 0x7e:
			b.WriteByte('?')
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
}

// SetHeaders writes the rate-limit fields of decisions into h, one list item per decision, on
// admitted and refused responses alike. now is the instant X-RateLimit-Reset counts from in its
// epoch form. The X-RateLimit trio describes the first decision that denied, or else the one
// with the least remaining.
func SetHeaders(h http.Header, o HeaderOptions, now time.Time, decisions ...Decision) {
	if len(decisions) == 0 {
		return
	}
	if !o.NoIETF {
		var pol, cur strings.Builder
		for i, d := range decisions {
			if i > 0 {
				pol.WriteString(", ")
				cur.WriteString(", ")
			}
			sfString(&pol, d.Name)
			fmt.Fprintf(&pol, ";q=%d", max(d.Quota, 0))
			if d.ConcurrentRequests {
				pol.WriteString(`;qu="concurrent-requests"`)
			}
			if d.Window > 0 {
				fmt.Fprintf(&pol, ";w=%d", max(ceilSeconds(d.Window), 1))
			}
			sfString(&cur, d.Name)
			fmt.Fprintf(&cur, ";r=%d;t=%d", max(d.Remaining, 0), ceilSeconds(d.ResetAfter))
		}
		h.Set("RateLimit-Policy", pol.String())
		h.Set("RateLimit", cur.String())
	}
	if o.XRateLimit != XRateLimitOff {
		d := binding(decisions)
		h.Set("X-RateLimit-Limit", strconv.FormatInt(d.Limit, 10))
		h.Set("X-RateLimit-Remaining", strconv.FormatInt(max(d.Remaining, 0), 10))
		reset := ceilSeconds(d.ResetAfter)
		if o.XRateLimit == XRateLimitResetEpoch {
			reset = ceilSeconds(time.Duration(now.UnixNano()) + d.ResetAfter)
		}
		h.Set("X-RateLimit-Reset", strconv.FormatInt(reset, 10))
	}
}

// binding returns the decision that matters most to a client: the first that denied, or the
// one with the least remaining.
func binding(ds []Decision) Decision {
	best := ds[0]
	for _, d := range ds {
		if !d.Allowed {
			return d
		}
		if d.Remaining < best.Remaining {
			best = d
		}
	}
	return best
}

// Problem is an RFC 9457 problem details object.
type Problem struct {
	Type             string   `json:"type"`
	Title            string   `json:"title"`
	Status           int      `json:"status"`
	Detail           string   `json:"detail,omitempty"`
	ViolatedPolicies []string `json:"violated-policies,omitempty"`
}

// QuotaExceeded is the draft's problem type for a request over its quota.
const QuotaExceeded = "https://iana.org/assignments/http-problem-types#quota-exceeded"

// WriteProblem writes p as application/problem+json with p.Status.
func WriteProblem(w http.ResponseWriter, p Problem) {
	body, _ := json.Marshal(p)
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(p.Status)
	w.Write(body)
}

// WriteTooManyRequests answers a request that the decisions denied: status (429 unless
// given), Retry-After in whole seconds rounded up (at least 1) from the longest RetryAfter of
// the decisions that denied, and a quota-exceeded problem naming them. Write the rate-limit
// fields first (SetHeaders).
func WriteTooManyRequests(w http.ResponseWriter, status int, decisions ...Decision) {
	if status == 0 {
		status = http.StatusTooManyRequests
	}
	var retry time.Duration
	var names []string
	for _, d := range decisions {
		if !d.Allowed {
			retry = max(retry, d.RetryAfter)
			names = append(names, d.Name)
		}
	}
	secs := max(ceilSeconds(retry), 1)
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	WriteProblem(w, Problem{Type: QuotaExceeded, Status: status,
		Title:            "Request cannot be satisfied as assigned quota has been exceeded",
		Detail:           fmt.Sprintf("over the limit of %s; retry in %d s", strings.Join(names, ", "), secs),
		ViolatedPolicies: names})
}

// WriteForbidden answers a request that can never be admitted (a DENY override, a prohibited
// key, a cost above the limit) with status (403 unless given) and a problem naming the policy.
func WriteForbidden(w http.ResponseWriter, status int, d Decision) {
	if status == 0 {
		status = http.StatusForbidden
	}
	WriteProblem(w, Problem{Type: "about:blank", Status: status, Title: http.StatusText(status),
		Detail:           fmt.Sprintf("this client may not make this request under %s", d.Name),
		ViolatedPolicies: []string{d.Name}})
}
