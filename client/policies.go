package client

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The server's named policies (RL.POLICY) and its per-subject overrides (RL.OVERRIDE), managed
// from Go: what an operator does with redis-cli, typed. Check and CheckAll decide under them.

const (
	cmdPolicy   = "RL.POLICY"   // RL.POLICY SET|GET|DEL|LIST …
	cmdOverride = "RL.OVERRIDE" // RL.OVERRIDE SET|GET|DEL|LIST …
)

// PolicyOptions are RL.POLICY SET's options.
type PolicyOptions struct {
	// Shadow decides and counts as usual but always admits (a soft limit); a call it would have
	// denied has Result.WouldDeny with named replies.
	Shadow bool
	// Description is free text, at most 1024 bytes.
	Description string
}

// PolicyInfo is a policy as RL.POLICY GET reports it.
type PolicyInfo struct {
	Name string
	// Algorithm is TOKEN, LEAKY, FIXED, SLIDING, LOG or CONCURRENCY.
	Algorithm string
	// Limit is the policy's limit with an empty key, as Token, Fixed … build it (a bucket's rate
	// is one unit per its interval); the zero Limit for a CONCURRENCY policy.
	Limit Limit
	// Count is the capacity or the limit; Period the interval between units (TOKEN, LEAKY), the
	// window, or the lease (CONCURRENCY).
	Count  int64
	Period time.Duration
	Shadow bool
	// Description is the policy's text; Source is "command" or the rules file it comes from
	// (such a policy is read-only).
	Description string
	Source      string
}

// SetPolicy defines or replaces the policy name with l's algorithm and parameters (RL.POLICY
// SET); l's key is not used: build it as client.Token("", client.PerSecond(10), 20). Subjects
// that have state keep it and are decided with the new parameters from their next check.
func (c *Client) SetPolicy(ctx context.Context, name string, l Limit, o PolicyOptions) error {
	if l.algo == AlgoPolicy || !l.valid() {
		return fmt.Errorf("%w: policy %q needs a Token, Leaky, Fixed, Sliding or Log limit", ErrInvalidLimit, name)
	}
	a := getArgv(cmdPolicy, 8)
	a.str("SET")
	a.str(name)
	a.str(l.algo.String())
	l.appendParams(a)
	if o.Shadow {
		a.str("SHADOW")
	}
	if o.Description != "" {
		a.str("DESCRIPTION")
		a.str(o.Description)
	}
	return c.ok(ctx, a)
}

// GetPolicy returns the policy name (RL.POLICY GET); ok is false when the server has none.
func (c *Client) GetPolicy(ctx context.Context, name string) (p PolicyInfo, ok bool, err error) {
	a := getArgv(cmdPolicy, 2)
	a.str("GET")
	a.str(name)
	v, err := c.do(ctx, a)
	a.release()
	if isNil(err) || err == nil && v == nil {
		return p, false, nil
	}
	if err != nil {
		return p, false, err
	}
	return p, true, decodePolicy(v, &p)
}

// decodePolicy reads RL.POLICY GET's fields (a map, or pairs in RESP2) into p.
func decodePolicy(v any, p *PolicyInfo) error {
	seen := false
	if !eachField(v, func(f string, val any) {
		n, _ := asInt(val)
		switch f {
		case "name":
			p.Name, seen = fmt.Sprint(val), true
		case "algorithm":
			p.Algorithm, _ = val.(string)
		case "count":
			p.Count = n
		case "period_ns":
			p.Period = time.Duration(n)
		case "shadow":
			p.Shadow = n != 0
		case "description":
			p.Description, _ = val.(string)
		case "source":
			p.Source, _ = val.(string)
		}
	}) || !seen {
		return errReply("RL.POLICY GET", v)
	}
	p.Limit = limitOf(p.Algorithm, p.Count, p.Period)
	return nil
}

// DeletePolicy deletes a policy defined by SetPolicy (RL.POLICY DEL) and reports whether it
// existed. Its subjects' state stays and expires by itself; its overrides stay until deleted or
// expired.
func (c *Client) DeletePolicy(ctx context.Context, name string) (bool, error) {
	a := getArgv(cmdPolicy, 2)
	a.str("DEL")
	a.str(name)
	n, err := c.integer(ctx, a)
	return n > 0, err
}

// ListPolicies returns the names of the policies in force that match the glob pattern ("" for
// all), sorted (RL.POLICY LIST).
func (c *Client) ListPolicies(ctx context.Context, pattern string) ([]string, error) {
	a := getArgv(cmdPolicy, 2)
	a.str("LIST")
	if pattern != "" {
		a.str(pattern)
	}
	v, err := c.do(ctx, a)
	a.release()
	if err != nil {
		return nil, err
	}
	list, ok := v.([]any)
	if !ok {
		return nil, errReply("RL.POLICY LIST", v)
	}
	names := make([]string, 0, len(list))
	for _, x := range list {
		s, ok := x.(string)
		if !ok {
			return nil, errReply("RL.POLICY LIST", v)
		}
		names = append(names, s)
	}
	return names, nil
}

// OverrideMode is what an override does to its subject, in the server's words.
type OverrideMode string

const (
	OverrideLimit     OverrideMode = "limit"     // the subject has a limit of its own
	OverrideUnlimited OverrideMode = "unlimited" // always admitted, never counted
	OverrideDeny      OverrideMode = "deny"      // always refused: RetryAfter is Never
)

// Override is one subject's exception to a policy: build it with OwnLimit, Unlimited or Deny,
// and Expire.
type Override struct {
	Mode OverrideMode
	// Limit is the subject's own limit (OverrideLimit), with an empty key.
	Limit Limit
	// TTL is how long the override lasts: when set, EXPIRE; as read, what is left. 0 is for ever.
	TTL time.Duration
}

// OwnLimit is an override that gives a subject its own limit in place of the policy's; l's key
// is not used. The subject's state under the policy is decided with this limit.
func OwnLimit(l Limit) Override { return Override{Mode: OverrideLimit, Limit: l} }

// Unlimited is an override that admits the subject always, without counting it.
func Unlimited() Override { return Override{Mode: OverrideUnlimited} }

// Deny is an override that refuses the subject always (RetryAfter Never; the HTTP middleware
// answers 403).
func Deny() Override { return Override{Mode: OverrideDeny} }

// Expire returns o lasting d (a whole number of milliseconds) from when it is set.
func (o Override) Expire(d time.Duration) Override { o.TTL = d; return o }

// SetOverride gives subject the override o under policy (RL.OVERRIDE SET policy subject …),
// replacing any it had. The policy must exist; RL.CHECK decides with the override from the
// next call on.
func (c *Client) SetOverride(ctx context.Context, policy, subject string, o Override) error {
	if o.TTL != 0 && !validWindow(o.TTL) {
		return fmt.Errorf("%w: an override's expiry is a positive whole number of milliseconds (got %v)", ErrInvalidLimit, o.TTL)
	}
	a := getArgv(cmdOverride, 8)
	a.str("SET")
	a.str(policy)
	a.key(subject)
	switch o.Mode {
	case OverrideUnlimited:
		a.str("UNLIMITED")
	case OverrideDeny:
		a.str("DENY")
	case OverrideLimit:
		if o.Limit.algo == AlgoPolicy || !o.Limit.valid() {
			a.release()
			return fmt.Errorf("%w: an override's own limit must be a valid Token, Leaky, Fixed, Sliding or Log limit", ErrInvalidLimit)
		}
		a.str(o.Limit.algo.String())
		o.Limit.appendParams(a)
	default:
		a.release()
		return fmt.Errorf("%w: override mode %q (use OwnLimit, Unlimited or Deny)", ErrInvalidLimit, o.Mode)
	}
	if o.TTL != 0 {
		a.str("EXPIRE")
		a.duration(o.TTL)
	}
	return c.ok(ctx, a)
}

// GetOverride returns subject's override under policy (RL.OVERRIDE GET); ok is false when it
// has none.
func (c *Client) GetOverride(ctx context.Context, policy, subject string) (o Override, ok bool, err error) {
	a := getArgv(cmdOverride, 3)
	a.str("GET")
	a.str(policy)
	a.key(subject)
	v, err := c.do(ctx, a)
	a.release()
	if isNil(err) || err == nil && v == nil {
		return o, false, nil
	}
	if err != nil {
		return o, false, err
	}
	return o, true, decodeOverride(v, &o)
}

// decodeOverride reads RL.OVERRIDE GET's fields (a map, or pairs in RESP2) into o.
func decodeOverride(v any, o *Override) error {
	var algo string
	var count, period, ttl int64
	if !eachField(v, func(f string, val any) {
		n, _ := asInt(val)
		switch f {
		case "mode":
			s, _ := val.(string)
			o.Mode = OverrideMode(s)
		case "algorithm":
			algo, _ = val.(string)
		case "count":
			count = n
		case "period_ns":
			period = n
		case "ttl_ms":
			ttl = n
		}
	}) || o.Mode == "" {
		return errReply("RL.OVERRIDE GET", v)
	}
	o.fill(algo, count, period, ttl)
	return nil
}

// fill sets o's limit and TTL from the fields of a reply.
func (o *Override) fill(algo string, count, period, ttlMS int64) {
	if o.Mode == OverrideLimit {
		o.Limit = limitOf(algo, count, time.Duration(period))
	}
	if ttlMS > 0 {
		o.TTL = millis(ttlMS)
	}
}

// DeleteOverride deletes subject's override under policy (RL.OVERRIDE DEL) and reports whether
// it had one. The policy need not exist any more.
func (c *Client) DeleteOverride(ctx context.Context, policy, subject string) (bool, error) {
	a := getArgv(cmdOverride, 3)
	a.str("DEL")
	a.str(policy)
	a.key(subject)
	n, err := c.integer(ctx, a)
	return n > 0, err
}

// SubjectOverride is one entry of ListOverrides.
type SubjectOverride struct {
	Subject string
	Override
}

// ListOverrides returns some of policy's overrides and the cursor to pass next, walking the
// key space as SCAN does (RL.OVERRIDE LIST policy cursor COUNT count): start at 0, stop when
// the returned cursor is 0 again; a call may return none while the walk goes on. count (the
// keys visited per call, about) is the server's default, 10, when 0.
func (c *Client) ListOverrides(ctx context.Context, policy string, cursor uint64, count int64) ([]SubjectOverride, uint64, error) {
	a := getArgv(cmdOverride, 5)
	a.str("LIST")
	a.str(policy)
	off := len(a.buf)
	a.buf = strconv.AppendUint(a.buf, cursor, 10)
	a.add(off)
	if count > 0 {
		a.str("COUNT")
		a.int(count)
	}
	v, err := c.do(ctx, a)
	a.release()
	if err != nil {
		return nil, 0, err
	}
	return decodeOverrideList(v)
}

// decodeOverrideList reads RL.OVERRIDE LIST's reply: [cursor, [[subject, mode, algorithm,
// count, period_ns, ttl_ms] …]].
func decodeOverrideList(v any) ([]SubjectOverride, uint64, error) {
	x, ok := v.([]any)
	if !ok || len(x) != 2 {
		return nil, 0, errReply("RL.OVERRIDE LIST", v)
	}
	cs, _ := x[0].(string)
	next, err1 := strconv.ParseUint(cs, 10, 64)
	items, ok := x[1].([]any)
	if err1 != nil || !ok {
		return nil, 0, errReply("RL.OVERRIDE LIST", v)
	}
	out := make([]SubjectOverride, 0, len(items))
	for _, it := range items {
		f, ok := it.([]any) // subject, mode, algorithm, count, period_ns, ttl_ms
		if !ok || len(f) != 6 {
			return nil, 0, errReply("RL.OVERRIDE LIST", v)
		}
		var s SubjectOverride
		s.Subject, _ = f[0].(string)
		mode, _ := f[1].(string)
		algo, _ := f[2].(string)
		count, ok1 := asInt(f[3])
		period, ok2 := asInt(f[4])
		ttl, ok3 := asInt(f[5])
		if mode == "" || !ok1 || !ok2 || !ok3 {
			return nil, 0, errReply("RL.OVERRIDE LIST", v)
		}
		s.Mode = OverrideMode(mode)
		s.fill(algo, count, period, ttl)
		out = append(out, s)
	}
	return out, next, nil
}

// limitOf builds the Limit of an algorithm's name, count and period as RL.POLICY GET and
// RL.OVERRIDE GET report them: a bucket's period is its interval between units, a window's its
// length. Another algorithm (CONCURRENCY) gives the zero Limit.
func limitOf(algo string, count int64, period time.Duration) Limit {
	switch strings.ToUpper(algo) {
	case "TOKEN":
		return Token("", Per(1, period), count)
	case "LEAKY":
		return Leaky("", Per(1, period), count)
	case "FIXED":
		return Fixed("", count, period)
	case "SLIDING":
		return Sliding("", count, period)
	case "LOG":
		return Log("", count, period)
	}
	return Limit{}
}

// ok sends a's command, whose reply is OK, and releases a.
func (c *Client) ok(ctx context.Context, a *argv) error {
	name := fmt.Sprint(a.args[0], " ", a.args[1])
	v, err := c.do(ctx, a)
	a.release()
	if err != nil {
		return err
	}
	if s, _ := v.(string); s != "OK" {
		return errReply(name, v)
	}
	return nil
}
