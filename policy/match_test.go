package policy

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/algorithms"
)

// Matching scripts: a rules file, requests at instants, and a small
// keyspace that carries out each decision the way the store does (the new
// state is kept only when admitted with n ≠ 0; another algorithm's state is
// WRONGTYPE).

const matchRules = `domain: api
descriptors:
  - key: remote_address
    rate_limit: {unit: second, requests_per_unit: 2}
  - key: remote_address
    value: 10.0.0.9
    rate_limit: {unit: second, requests_per_unit: 0}
  - key: path
    value: /health
  - key: path
    value: /api/*
    rate_limit: {unit: minute, requests_per_unit: 3}
    sluice: {algorithm: token, burst: 2}
  - key: path
    value: /api/admin*
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: path
    rate_limit: {unit: hour, requests_per_unit: 100}
  - key: path
    value: /api/exact
    rate_limit: {unit: day, requests_per_unit: 7}
  - key: user
    descriptors:
      - key: tier
        value: free
        rate_limit: {name: user_free, unit: second, requests_per_unit: 1}
      - key: tier
        value: pro
        rate_limit: {unlimited: true}
  - key: plan
    value: upgrade
    rate_limit:
      unit: second
      requests_per_unit: 5
      replaces: [{name: user_free}]
  - key: canary
    shadow_mode: true
    rate_limit: {unit: second, requests_per_unit: 1}
  - key: files
    value: files/*
    share_threshold: true
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: q
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
`

// t0 is on a minute boundary, so fixed windows start there.
const t0 = int64(1_700_000_040) * int64(time.Second)

func at(d time.Duration) int64 { return t0 + int64(d) }

type ksEntry struct {
	algo    algorithms.Algo
	token   algorithms.TokenState
	leaky   algorithms.LeakyState
	fixed   algorithms.FixedState
	sliding algorithms.SlidingState
	log     algorithms.LogState
}

// keyspace carries out decisions on states kept by key.
type keyspace map[string]*ksEntry

var errWrongType = errors.New("WRONGTYPE Operation against a key holding the wrong kind of value")

func (ks keyspace) decide(req algorithms.Request, now int64) algorithms.Outcome {
	e := ks[string(req.Key)]
	if e == nil {
		e = &ksEntry{algo: req.Limit.Algo}
	} else if e.algo != req.Limit.Algo {
		return algorithms.Outcome{Err: errWrongType}
	}
	var r algorithms.Result
	keep := *e
	switch l := req.Limit; l.Algo {
	case algorithms.Token:
		r, keep.token = l.TokenBucket().Take(e.token, now, req.N)
	case algorithms.Leaky:
		r, keep.leaky = l.LeakyBucket().Take(e.leaky, now, req.N)
	case algorithms.Fixed:
		r, keep.fixed = l.FixedWindow().Take(e.fixed, now, req.N)
	case algorithms.Sliding:
		r, keep.sliding = l.SlidingWindow().Take(e.sliding, now, req.N)
	case algorithms.Log:
		r, keep.log = l.SlidingLog().Take(e.log.Clone(), now, req.N)
	}
	if r.Allowed && req.N != 0 {
		ks[string(req.Key)] = &keep
	}
	return algorithms.Outcome{Result: r}
}

// desc builds a descriptor from key, value pairs.
func desc(kv ...string) Descriptor {
	var d Descriptor
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, Entry{Key: []byte(kv[i]), Value: []byte(kv[i+1])})
	}
	return d
}

// engine is RL.MATCH: plan, decide, compose.
type engine struct {
	t    *testing.T
	rs   *RuleSet
	ks   keyspace
	plan Plan
	resp Response
}

func newEngine(t *testing.T, rules string) *engine {
	t.Helper()
	rs, err := Parse([]File{{Name: "rules.yaml", Data: []byte(rules)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &engine{t: t, rs: rs, ks: keyspace{}}
}

func (e *engine) match(now int64, hits int64, ds ...Descriptor) *Response {
	e.t.Helper()
	if err := e.rs.Plan(&e.plan, []byte("api"), hits, ds); err != nil {
		e.t.Fatalf("Plan: %v", err)
	}
	outcomes := make([]algorithms.Outcome, len(e.plan.Items))
	for i := range e.plan.Items {
		if it := &e.plan.Items[i]; it.Decides() {
			outcomes[i] = e.ks.decide(it.Request(), now)
		}
	}
	if err := Compose(&e.resp, e.plan.Items, outcomes, now); err != nil {
		e.t.Fatalf("Compose: %v", err)
	}
	return &e.resp
}

// want checks one status: code, would-be code, remaining.
func want(t *testing.T, step string, r *Response, i int, code, wouldBe Code, remaining int64) {
	t.Helper()
	st := r.Statuses[i]
	if st.Code != code || st.WouldBe != wouldBe || st.Remaining != remaining {
		t.Fatalf("%s: status %d = %v (would be %v), remaining %d; want %v (would be %v), remaining %d",
			step, i, st.Code, st.WouldBe, st.Remaining, code, wouldBe, remaining)
	}
}

func TestMatchFixedWindowPerValueOfAKeyOnlyRule(t *testing.T) {
	e := newEngine(t, matchRules)
	a, b := desc("remote_address", "1.2.3.4"), desc("remote_address", "5.6.7.8")
	want(t, "t0 a", e.match(at(0), 1, a), 0, CodeOK, CodeOK, 1)
	want(t, "t0+100ms a", e.match(at(100*time.Millisecond), 1, a), 0, CodeOK, CodeOK, 0)
	r := e.match(at(200*time.Millisecond), 1, a)
	want(t, "t0+200ms a", r, 0, CodeOverLimit, CodeOverLimit, 0)
	if r.Code != CodeOverLimit || r.Statuses[0].ResetAfter != int64(800*time.Millisecond) {
		t.Fatalf("t0+200ms a: overall %v, reset %v; want OVER_LIMIT, 800ms", r.Code, time.Duration(r.Statuses[0].ResetAfter))
	}
	want(t, "t0+200ms b (own counter)", e.match(at(200*time.Millisecond), 1, b), 0, CodeOK, CodeOK, 1)
	want(t, "t0+1s a (next window)", e.match(at(time.Second), 1, a), 0, CodeOK, CodeOK, 1)
	if key := string(e.plan.Items[0].Key); key != "rls:api:fixed:remote_address=1.2.3.4" {
		t.Fatalf("key = %q", key)
	}
	st := e.resp.Statuses[0]
	if !st.HasLimit || st.Current != (EnvoyLimit{2, UnitSecond}) || st.Exact != (algorithms.Limit{Algo: algorithms.Fixed, Count: 2, Period: 1e9}) {
		t.Fatalf("status limit = %+v", st)
	}
}

func TestMatchRequestsPerUnitZeroDeniesWithoutState(t *testing.T) {
	e := newEngine(t, matchRules)
	d := desc("remote_address", "10.0.0.9")
	for i := 0; i < 3; i++ {
		r := e.match(at(0), 1, d)
		want(t, "10.0.0.9", r, 0, CodeOverLimit, CodeOverLimit, 0)
		if r.Statuses[0].RetryAfter != algorithms.NeverNS || e.plan.Items[0].Decides() {
			t.Fatalf("deny: retry %d, decides %v; want never, false", r.Statuses[0].RetryAfter, e.plan.Items[0].Decides())
		}
	}
	want(t, "10.0.0.9 hits 0", e.match(at(0), 0, d), 0, CodeOK, CodeOK, 0)
	if len(e.ks) != 0 {
		t.Fatalf("keyspace = %d keys; want none", len(e.ks))
	}
}

func TestMatchWhitelistedLeafHasNoLimit(t *testing.T) {
	e := newEngine(t, matchRules)
	r := e.match(at(0), 1, desc("path", "/health"))
	st := r.Statuses[0]
	if r.Code != CodeOK || st.HasLimit || st.Flags != FlagNoRule|FlagWhitelisted {
		t.Fatalf("/health = %v %+v; want OK, no limit, whitelisted", r.Code, st)
	}
	// A rule with children and no limit is whitelisted at its depth too.
	if e.match(at(0), 1, desc("user", "u1")); e.plan.Items[0].Flags != FlagNoRule|FlagWhitelisted {
		t.Fatalf("user alone: flags %b", e.plan.Items[0].Flags)
	}
}

func TestMatchExactBeatsWildcardBeatsKeyOnly(t *testing.T) {
	e := newEngine(t, matchRules)
	cases := []struct {
		value string
		want  EnvoyLimit
		algo  algorithms.Algo
	}{
		{"/api/exact", EnvoyLimit{7, UnitDay}, algorithms.Fixed},      // exact value over the wildcard /api/*
		{"/api/users", EnvoyLimit{3, UnitMinute}, algorithms.Token},   // the first wildcard in file order
		{"/api/admin/x", EnvoyLimit{3, UnitMinute}, algorithms.Token}, // /api/* is listed before /api/admin*
		{"/other", EnvoyLimit{100, UnitHour}, algorithms.Fixed},       // the key-only rule
	}
	for _, c := range cases {
		e.match(at(0), 1, desc("path", c.value))
		it := e.plan.Items[0]
		if it.Envoy != c.want || it.Limit.Algo != c.algo {
			t.Errorf("path=%s: %+v %s; want %+v %s", c.value, it.Envoy, AlgoName(it.Limit.Algo), c.want, AlgoName(c.algo))
		}
	}
}

func TestMatchTokenBucketRuleFromTheSluiceExtension(t *testing.T) {
	e := newEngine(t, matchRules)
	d := desc("path", "/api/users")
	want(t, "t0", e.match(at(0), 1, d), 0, CodeOK, CodeOK, 1)
	want(t, "t0", e.match(at(0), 1, d), 0, CodeOK, CodeOK, 0)
	r := e.match(at(0), 1, d)
	want(t, "t0 third", r, 0, CodeOverLimit, CodeOverLimit, 0)
	if st := r.Statuses[0]; st.RetryAfter != int64(20*time.Second) || st.ResetAfter != int64(40*time.Second) ||
		st.Exact != (algorithms.Limit{Algo: algorithms.Token, Count: 2, Period: int64(20 * time.Second)}) {
		t.Fatalf("token status = %+v; want retry 20s, reset 40s, 3/min burst 2", st)
	}
	want(t, "t0+20s", e.match(at(20*time.Second), 1, d), 0, CodeOK, CodeOK, 0)
	if key := string(e.plan.Items[0].Key); key != "rls:api:token:path=/api/users" {
		t.Fatalf("key = %q", key)
	}
}

func TestMatchReplacesDropsTheNamedRule(t *testing.T) {
	e := newEngine(t, matchRules)
	free := desc("user", "u1", "tier", "free")
	want(t, "free alone", e.match(at(0), 1, free), 0, CodeOK, CodeOK, 0)
	want(t, "free alone again", e.match(at(0), 1, free), 0, CodeOverLimit, CodeOverLimit, 0)
	// With plan=upgrade in the same request, user_free is replaced: not
	// decided, not counted, reported OK without a limit.
	r := e.match(at(0), 1, free, desc("plan", "upgrade"))
	if r.Code != CodeOK || r.Statuses[0].HasLimit || e.plan.Items[0].Flags != FlagNoRule|FlagReplaced {
		t.Fatalf("replaced: %v %+v", r.Code, r.Statuses[0])
	}
	want(t, "upgrade", r, 1, CodeOK, CodeOK, 4)
}

func TestMatchUnlimitedIsNeverCounted(t *testing.T) {
	e := newEngine(t, matchRules)
	for i := 0; i < 5; i++ {
		r := e.match(at(0), 1, desc("user", "u1", "tier", "pro"))
		want(t, "pro", r, 0, CodeOK, CodeOK, UnlimitedRemaining)
		if r.Statuses[0].HasLimit || e.plan.Items[0].Decides() {
			t.Fatalf("unlimited: %+v", r.Statuses[0])
		}
	}
	if len(e.ks) != 0 {
		t.Fatalf("keyspace has %d keys", len(e.ks))
	}
}

func TestMatchShadowReportsTheWouldBeDenial(t *testing.T) {
	e := newEngine(t, matchRules)
	d := desc("canary", "c")
	want(t, "first", e.match(at(0), 1, d), 0, CodeOK, CodeOK, 0)
	r := e.match(at(0), 1, d)
	want(t, "second", r, 0, CodeOK, CodeOverLimit, 0)
	if r.Code != CodeOK || r.ShadowDenied != 1 || r.Statuses[0].RetryAfter != int64(time.Second) {
		t.Fatalf("shadow: overall %v, shadow denied %d, retry %d", r.Code, r.ShadowDenied, r.Statuses[0].RetryAfter)
	}
}

func TestMatchShareThresholdSharesOneCounter(t *testing.T) {
	e := newEngine(t, matchRules)
	want(t, "a", e.match(at(0), 1, desc("files", "files/a.pdf")), 0, CodeOK, CodeOK, 1)
	want(t, "b", e.match(at(0), 1, desc("files", "files/b.csv")), 0, CodeOK, CodeOK, 0)
	want(t, "c", e.match(at(0), 1, desc("files", "files/c.txt")), 0, CodeOverLimit, CodeOverLimit, 0)
	if key := string(e.plan.Items[0].Key); key != "rls:api:fixed:files=files/%2A" {
		t.Fatalf("shared key = %q", key)
	}
}

func TestMatchHitsZeroChecksWithoutCounting(t *testing.T) {
	e := newEngine(t, matchRules)
	d := desc("remote_address", "1.2.3.4")
	for i := 0; i < 3; i++ {
		want(t, "peek", e.match(at(0), 0, d), 0, CodeOK, CodeOK, 2)
	}
	if len(e.ks) != 0 {
		t.Fatalf("a peek created state")
	}
	// A descriptor's own hits beat the request's: 0 here peeks while the
	// request's 2 spends the whole window on the other descriptor.
	peek := d
	peek.Hits, peek.HitsSet = 0, true
	r := e.match(at(0), 2, peek, desc("remote_address", "5.6.7.8"))
	want(t, "own hits 0", r, 0, CodeOK, CodeOK, 2)
	want(t, "request hits 2", r, 1, CodeOK, CodeOK, 0)
	if got := RequestHits(0); got != 1 {
		t.Fatalf("RequestHits(0) = %d; want 1 (unset)", got)
	}
}

func TestMatchDescriptorLimitOverrideSharesTheRuleKey(t *testing.T) {
	e := newEngine(t, matchRules)
	d := desc("remote_address", "1.2.3.4")
	e.match(at(0), 1, d)
	ruleKey := string(e.plan.Items[0].Key)
	o := d
	o.Limit = EnvoyLimit{RequestsPerUnit: 1, Unit: UnitMinute}
	r := e.match(at(0), 1, o)
	it := e.plan.Items[0]
	if it.Flags != FlagOverride || string(it.Key) != ruleKey || it.Envoy != o.Limit {
		t.Fatalf("override item = %+v key %q; want the rule's key %q", it, it.Key, ruleKey)
	}
	// The rule's call counted 1 in the same fixed state: 1/min is spent.
	want(t, "override", r, 0, CodeOverLimit, CodeOverLimit, 0)
	if r.Statuses[0].ResetAfter != int64(time.Minute) {
		t.Fatalf("reset = %v; want 1m (the minute window's end)", time.Duration(r.Statuses[0].ResetAfter))
	}
}

func TestMatchDepthMustEqualTheRulesDepth(t *testing.T) {
	e := newEngine(t, matchRules)
	for _, d := range []Descriptor{
		desc("remote_address", "1.2.3.4", "extra", "x"), // longer than the rules
		desc("user", "u1", "tier", "free", "more", "y"),
		desc("nokey", "x"),
		desc(), // no entries
	} {
		e.match(at(0), 1, d)
		if e.plan.Items[0].Flags&FlagNoRule == 0 {
			t.Errorf("%v matched %+v", d.Entries, e.plan.Items[0])
		}
	}
}

func TestMatchQuotaModeFailsOnlyWhenEveryQuotaDescriptorIsOver(t *testing.T) {
	e := newEngine(t, matchRules)
	q1, q2 := desc("q", "1"), desc("q", "2")
	e.match(at(0), 1, q1)
	r := e.match(at(0), 1, q1, q2)
	if r.Code != CodeOK || r.Statuses[0].Code != CodeOverLimit {
		t.Fatalf("one quota over: overall %v, status %v; want OK, OVER_LIMIT", r.Code, r.Statuses[0].Code)
	}
	if r = e.match(at(0), 1, q1, q2); r.Code != CodeOverLimit {
		t.Fatalf("both quota over: overall %v; want OVER_LIMIT", r.Code)
	}
}

func TestMatchUnknownDomainAndBadRequests(t *testing.T) {
	e := newEngine(t, matchRules)
	var p Plan
	if err := e.rs.Plan(&p, []byte("nope"), 1, []Descriptor{desc("remote_address", "x")}); err != nil ||
		p.Items[0].Flags != FlagNoRule|FlagUnknownDomain {
		t.Fatalf("unknown domain: %v %+v", err, p.Items)
	}
	var none *RuleSet
	if err := none.Plan(&p, []byte("api"), 1, []Descriptor{desc("a", "b")}); err != nil || p.Items[0].Flags&FlagUnknownDomain == 0 {
		t.Fatalf("nil rule set: %v %+v", err, p.Items)
	}
	for _, c := range []struct {
		domain string
		hits   int64
		ds     []Descriptor
		err    error
	}{
		{"", 1, []Descriptor{desc("a", "b")}, ErrEmptyDomain},
		{"api", 1, nil, ErrNoDescriptors},
		{"api", -1, []Descriptor{desc("a", "b")}, ErrNegativeHits},
		{"api", 1, []Descriptor{{Hits: -2, HitsSet: true}}, ErrNegativeHits},
		{"api", 1, []Descriptor{{Limit: EnvoyLimit{RequestsPerUnit: 5, Unit: Unit(9)}}}, ErrBadLimit},
	} {
		if err := e.rs.Plan(&p, []byte(c.domain), c.hits, c.ds); !errors.Is(err, c.err) {
			t.Errorf("Plan(%q, %d, %d descriptors) = %v; want %v", c.domain, c.hits, len(c.ds), err, c.err)
		}
	}
}

func TestComposePassesOnADecisionError(t *testing.T) {
	e := newEngine(t, matchRules)
	d := desc("remote_address", "1.2.3.4")
	if err := e.rs.Plan(&e.plan, []byte("api"), 1, []Descriptor{d}); err != nil {
		t.Fatal(err)
	}
	// A file edit that changes the rule's algorithm moves it to another key.
	e2 := newEngine(t, strings.Replace(matchRules, "rate_limit: {unit: second, requests_per_unit: 2}",
		"rate_limit: {unit: second, requests_per_unit: 2}\n    sluice: {algorithm: sliding}", 1))
	var p2 Plan
	if err := e2.rs.Plan(&p2, []byte("api"), 1, []Descriptor{d}); err != nil {
		t.Fatal(err)
	}
	if string(p2.Items[0].Key) == string(e.plan.Items[0].Key) {
		t.Fatalf("a fixed and a sliding rule share the key %q", p2.Items[0].Key)
	}
	var resp Response
	err := Compose(&resp, e.plan.Items, []algorithms.Outcome{{Err: errWrongType}}, at(0))
	if err != errWrongType || len(resp.Statuses) != 0 {
		t.Fatalf("Compose = %v, %d statuses; want the outcome's error and none", err, len(resp.Statuses))
	}
}

// TestARuleChangeAppliesToExistingState reloads a rule with new parameters
// between decisions on one keyspace: the next decision uses the new
// parameters on the state the old ones left (docs/policies.md).
func TestARuleChangeAppliesToExistingState(t *testing.T) {
	rules := func(ext string, rpu int) string {
		return "domain: api\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: " + strconv.Itoa(rpu) + "}\n" + ext
	}
	d := desc("k", "v")
	// Token: 10/s burst 10, take 2 at t0: the debt is 200 ms. At 20/s burst
	// 10 the same 200 ms are 4 tokens: a peek sees 6, full at t0+200ms.
	e := newEngine(t, rules("    sluice: {algorithm: token, burst: 10}\n", 10))
	e.match(at(0), 2, d)
	e.rs = newEngine(t, rules("    sluice: {algorithm: token, burst: 10}\n", 20)).rs
	r := e.match(at(0), 0, d)
	if st := r.Statuses[0]; st.Remaining != 6 || st.ResetAfter != int64(200*time.Millisecond) {
		t.Fatalf("token after a faster rate: remaining %d, reset %v; want 6, 200ms", st.Remaining, time.Duration(st.ResetAfter))
	}
	// Fixed: 5/s with 3 counted, then 2/s: over the new limit until the
	// window ends; then 10/s: the count of 3 carries, 7 remain.
	e = newEngine(t, rules("", 5))
	e.match(at(0), 3, d)
	e.rs = newEngine(t, rules("", 2)).rs
	want(t, "fixed lowered", e.match(at(100*time.Millisecond), 1, d), 0, CodeOverLimit, CodeOverLimit, 0)
	e.rs = newEngine(t, rules("", 10)).rs
	want(t, "fixed raised", e.match(at(200*time.Millisecond), 0, d), 0, CodeOK, CodeOK, 7)
}
