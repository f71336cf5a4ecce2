package client

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// The decoders read a reply as go-redis returns it from Cmd.Val(): RESP integers are int64,
// RESP3 booleans bool, bulk strings string, arrays []any and RESP3 maps map[any]any. Every
// decision comes in one of three forms, in RESP2 and RESP3 alike:
//
//   - positional: [allowed, limit, remaining, retry_after_ms, reset_after_ms] (allowed an
//     integer or, from older servers, a boolean);
//   - named, RESP3: a map of those names (and policy, mode, quota, window_s, would_deny);
//   - named, RESP2: the same as a flat [name, value, …] array.
//
// Unknown names are ignored, so that a server may add fields. The decoders do not allocate
// beyond the slices they return (AllResult.Results, MatchResult.Statuses, Info's lists).

// Field names of the named replies.
const (
	fAllowed    = "allowed"
	fLimit      = "limit"
	fRemaining  = "remaining"
	fRetryAfter = "retry_after_ms"
	fResetAfter = "reset_after_ms"
	fPolicy     = "policy"
	fMode       = "mode"
	fQuota      = "quota"
	fWindow     = "window_s"
	fWouldDeny  = "would_deny"
	fDenied     = "denied_index"
	fResults    = "results"
	fCode       = "code"
	fStatuses   = "statuses"
	fDurReset   = "duration_until_reset_ms"
)

// errReply describes a reply that is none of the forms a command answers.
func errReply(what string, v any) error {
	s := fmt.Sprintf("%v", v)
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return fmt.Errorf("%w: %s reply %T %s", ErrUnexpectedReply, what, v, s)
}

// eachField calls f with every name and value of a named reply (a map, or a flat array whose
// even elements are strings) and reports whether v is one.
func eachField(v any, f func(name string, val any)) bool {
	switch x := v.(type) {
	case map[any]any:
		for k, val := range x {
			if name, ok := k.(string); ok {
				f(name, val)
			}
		}
		return true
	case map[string]any:
		for k, val := range x {
			f(k, val)
		}
		return true
	case []any:
		if len(x) == 0 || len(x)%2 != 0 {
			return false
		}
		for i := 0; i < len(x); i += 2 {
			if _, ok := x[i].(string); !ok {
				return false
			}
		}
		for i := 0; i < len(x); i += 2 {
			f(x[i].(string), x[i+1])
		}
		return true
	}
	return false
}

// asInt reads an integer, or a boolean as 1 or 0.
func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case int:
		return int64(x), true
	case float64: // a RESP3 double
		if x >= math.MinInt64 && x <= math.MaxInt64 && x == math.Trunc(x) {
			return int64(x), true
		}
	case string: // a number a server sent as a bulk string
		n, err := strconv.ParseInt(x, 10, 64)
		return n, err == nil
	}
	return 0, false
}

// asBool reads a boolean, or an integer as != 0.
func asBool(v any) (bool, bool) {
	n, ok := asInt(v)
	return n != 0, ok
}

// millis converts a count of ms to a Duration: a negative count is Never, one beyond what a
// Duration holds saturates.
func millis(ms int64) time.Duration { return scaled(ms, time.Millisecond) }

func scaled(n int64, unit time.Duration) time.Duration {
	switch {
	case n < 0:
		return Never
	case n > math.MaxInt64/int64(unit):
		return math.MaxInt64
	}
	return time.Duration(n) * unit
}

// decodeDecision reads one decision reply, positional or named, into r. A policy's name in the
// reply replaces r.Policy; the other fields are overwritten.
func decodeDecision(v any, r *Result) error {
	policy := r.Policy
	*r = Result{Policy: policy}
	if x, ok := v.([]any); ok && len(x) >= 5 {
		if _, named := x[0].(string); !named {
			return decodePositional(x, r)
		}
	}
	seen := 0
	ok := eachField(v, func(name string, val any) {
		switch name {
		case fAllowed:
			if b, ok := asBool(val); ok {
				r.Allowed, seen = b, seen|1
			}
		case fLimit:
			r.Limit, _ = asInt(val)
		case fRemaining:
			r.Remaining, _ = asInt(val)
		case fRetryAfter:
			n, _ := asInt(val)
			r.RetryAfter = millis(n)
		case fResetAfter:
			n, _ := asInt(val)
			r.ResetAfter = millis(n)
		case fPolicy:
			if s, ok := val.(string); ok {
				r.Policy = s
			}
		case fMode:
			if s, ok := val.(string); ok {
				r.Mode = Mode(s)
			}
		case fQuota:
			r.Quota, _ = asInt(val)
		case fWindow:
			n, _ := asInt(val)
			r.Window = scaled(max(n, 0), time.Second)
		case fWouldDeny:
			r.WouldDeny, _ = asBool(val)
		}
	})
	if !ok || seen == 0 {
		return errReply("decision", v)
	}
	if r.Allowed && r.RetryAfter < 0 {
		r.RetryAfter = 0
	}
	return nil
}

func decodePositional(x []any, r *Result) error {
	var n [5]int64
	for i := range n {
		v, ok := asInt(x[i])
		if !ok {
			return errReply("decision", x)
		}
		n[i] = v
	}
	r.Allowed, r.Limit, r.Remaining = n[0] != 0, n[1], n[2]
	r.RetryAfter, r.ResetAfter = millis(n[3]), millis(n[4])
	if r.Allowed && r.RetryAfter < 0 {
		r.RetryAfter = 0
	}
	return nil
}

// decodeThrottle reads CL.THROTTLE's redis-cell reply: [limited, max_burst+1, remaining,
// retry_after_s or -1, reset_after_s].
func decodeThrottle(v any, r *Result) error {
	x, ok := v.([]any)
	if !ok || len(x) < 5 {
		return errReply("CL.THROTTLE", v)
	}
	var n [5]int64
	for i := range n {
		if n[i], ok = asInt(x[i]); !ok {
			return errReply("CL.THROTTLE", v)
		}
	}
	*r = Result{Allowed: n[0] == 0, Limit: n[1], Remaining: n[2], ResetAfter: scaled(max(n[4], 0), time.Second)}
	if !r.Allowed {
		r.RetryAfter = scaled(n[3], time.Second)
	}
	return nil
}

// decodeAll reads RL.ALL's (and a several-pair RL.CHECK's) reply: [allowed, denied_index,
// [decision …]], or the named {allowed, denied_index, results}. policies, when not nil, names
// each result's policy (a positional reply does not). A single decision (RL.CHECK with one
// pair) is read as a list of one.
func decodeAll(v any, out *AllResult, policies []string) error {
	var results []any
	switch x, _ := v.([]any); {
	case len(x) == 3 && isList(x[2]) && !isString(x[0]):
		allowed, ok1 := asBool(x[0])
		denied, ok2 := asInt(x[1])
		if !ok1 || !ok2 {
			return errReply("RL.ALL", v)
		}
		out.Allowed, out.Denied, results = allowed, int(denied), x[2].([]any)
	default:
		seen := 0
		named := eachField(v, func(name string, val any) {
			switch name {
			case fAllowed:
				out.Allowed, _ = asBool(val)
				seen |= 1
			case fDenied:
				n, _ := asInt(val)
				out.Denied = int(n)
				seen |= 2
			case fResults:
				results, _ = val.([]any)
				seen |= 4
			}
		})
		if named && seen == 7 {
			break
		}
		// One decision: RL.CHECK answered a single pair.
		var r Result
		if len(policies) > 0 {
			r.Policy = policies[0]
		}
		if err := decodeDecision(v, &r); err != nil {
			return errReply("RL.ALL", v)
		}
		out.Allowed, out.Denied = r.Allowed, -1
		if !r.Allowed {
			out.Denied = 0
		}
		out.Results = append(out.Results[:0], r)
		return nil
	}
	if policies != nil && len(results) != len(policies) {
		return errReply("RL.ALL", v)
	}
	out.Results = out.Results[:0]
	if cap(out.Results) < len(results) {
		out.Results = make([]Result, 0, len(results))
	}
	for i, rv := range results {
		var r Result
		if policies != nil {
			r.Policy = policies[i]
		}
		if err := decodeDecision(rv, &r); err != nil {
			return err
		}
		out.Results = append(out.Results, r)
	}
	if out.Allowed {
		out.Denied = -1
	}
	return nil
}

func isList(v any) bool   { _, ok := v.([]any); return ok }
func isString(v any) bool { _, ok := v.(string); return ok }

// asCode reads a match code: its number, or its name.
func asCode(v any) (Code, bool) {
	if s, ok := v.(string); ok {
		switch s {
		case "OK":
			return CodeOK, true
		case "OVER_LIMIT":
			return CodeOverLimit, true
		case "UNKNOWN":
			return CodeUnknown, true
		}
	}
	n, ok := asInt(v)
	if !ok || n < 0 || n > 2 {
		return 0, false
	}
	return Code(n), true
}

// decodeMatch reads RL.MATCH's reply: [code, [status …]] with each status [code, limit,
// remaining, reset_after_ms, …], or the named {code, statuses: [{code, limit, remaining,
// reset_after_ms} …]}.
func decodeMatch(v any, out *MatchResult) error {
	var statuses []any
	if x, ok := v.([]any); ok && len(x) == 2 && isList(x[1]) && !isString(x[0]) {
		c, ok := asCode(x[0])
		if !ok {
			return errReply("RL.MATCH", v)
		}
		out.Code, statuses = c, x[1].([]any)
	} else {
		seen := 0
		if !eachField(v, func(name string, val any) {
			switch name {
			case fCode:
				if c, ok := asCode(val); ok {
					out.Code, seen = c, seen|1
				}
			case fStatuses:
				if s, ok := val.([]any); ok {
					statuses, seen = s, seen|2
				}
			}
		}) || seen != 3 {
			return errReply("RL.MATCH", v)
		}
	}
	out.Statuses = make([]DescriptorStatus, len(statuses))
	for i, sv := range statuses {
		if err := decodeStatus(sv, &out.Statuses[i]); err != nil {
			return err
		}
	}
	return nil
}

func decodeStatus(v any, st *DescriptorStatus) error {
	if x, ok := v.([]any); ok && len(x) >= 4 && !isString(x[0]) {
		c, ok := asCode(x[0])
		var n [3]int64
		for i := range n {
			var ok2 bool
			if n[i], ok2 = asInt(x[i+1]); !ok2 {
				ok = false
			}
		}
		if !ok {
			return errReply("RL.MATCH status", v)
		}
		*st = DescriptorStatus{Code: c, Limit: n[0], Remaining: n[1], ResetAfter: scaled(max(n[2], 0), time.Millisecond)}
		return nil
	}
	seen := false
	if !eachField(v, func(name string, val any) {
		switch name {
		case fCode:
			if c, ok := asCode(val); ok {
				st.Code, seen = c, true
			}
		case fLimit:
			st.Limit, _ = asInt(val)
		case fRemaining:
			st.Remaining, _ = asInt(val)
		case fResetAfter, fDurReset:
			n, _ := asInt(val)
			st.ResetAfter = scaled(max(n, 0), time.Millisecond)
		}
	}) || !seen {
		return errReply("RL.MATCH status", v)
	}
	return nil
}
