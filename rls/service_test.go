package rls

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sync"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
)

const (
	second = rlsv3.RateLimitResponse_RateLimit_SECOND
	minute = rlsv3.RateLimitResponse_RateLimit_MINUTE
	hour   = rlsv3.RateLimitResponse_RateLimit_HOUR
	day    = rlsv3.RateLimitResponse_RateLimit_DAY
)

func TestOneDescriptorCountsToItsLimitInAFixedWindow(t *testing.T) {
	f := newFixture(t, Config{}, "rules/api.yaml")
	for i := 0; i < 5; i++ {
		resp := f.call(request("api", 0, desc("remote_address", "192.0.2.1")))
		check(t, fmt.Sprintf("call %d", i+1), resp, ok, limited(ok, 5, minute, uint32(4-i)))
		if d := resp.Statuses[0].DurationUntilReset.AsDuration(); d != 50*time.Second {
			t.Fatalf("duration_until_reset = %v; want 50s (the minute's end)", d)
		}
	}
	check(t, "call 6", f.call(request("api", 0, desc("remote_address", "192.0.2.1"))), over, limited(over, 5, minute, 0))
	check(t, "another address", f.call(request("api", 0, desc("remote_address", "192.0.2.2"))), ok, limited(ok, 5, minute, 4))
	f.clock.advance(50 * time.Second) // the next minute
	check(t, "next window", f.call(request("api", 0, desc("remote_address", "192.0.2.1"))), ok, limited(ok, 5, minute, 4))
}

func TestRequestsPerUnitZeroRefusesAndStoresNothing(t *testing.T) {
	f := newFixture(t, Config{}, "rules/api.yaml")
	check(t, "blocked", f.call(request("api", 0, desc("remote_address", "10.0.0.66"))), over, limited(over, 0, second, 0))
	check(t, "check only", f.call(request("api", 0, withHits(desc("remote_address", "10.0.0.66"), 0))), ok, limited(ok, 0, second, 0))
	if n, _ := f.st.DBSize(f.clock.Now()); n != 0 {
		t.Fatalf("DBSize = %d; want 0: requests_per_unit 0 keeps no state", n)
	}
}

func TestNestedDescriptorsTakeTheMostSpecificRule(t *testing.T) {
	f := newFixture(t, Config{}, "rules/api.yaml")
	resp := f.call(request("api", 0, desc("user", "u1"), desc("user", "u1", "plan", "free"), desc("user", "u1", "plan", "gold")))
	// (user) 10/min; (user, plan=free) 3/min; (user, plan=gold): no rule at that depth.
	check(t, "nested", resp, ok, limited(ok, 10, minute, 9), limited(ok, 3, minute, 2), unlimitedWant(ok, 0))
}

func TestSeveralDescriptorsAreDecidedEachOnItsOwnByDefault(t *testing.T) {
	f := newFixture(t, Config{}, "rules/api.yaml")
	req := func() *rlsv3.RateLimitRequest {
		return request("api", 0, desc("user", "u2"), desc("user", "u2", "plan", "free"))
	}
	for i := 0; i < 3; i++ {
		f.call(req())
	}
	// The free plan's 3/min is spent; the user's own limit still counts,
	// as envoyproxy/ratelimit counts it.
	check(t, "4th", f.call(req()), over, limited(ok, 10, minute, 6), limited(over, 3, minute, 0))
	check(t, "5th", f.call(req()), over, limited(ok, 10, minute, 5), limited(over, 3, minute, 0))
}

func TestBatchCallIsAllOrNothing(t *testing.T) {
	f := newFixture(t, Config{Batch: BatchCall}, "rules/api.yaml")
	req := func() *rlsv3.RateLimitRequest {
		return request("api", 0, desc("user", "u3"), desc("user", "u3", "plan", "free"))
	}
	for i := 0; i < 3; i++ {
		check(t, fmt.Sprintf("call %d", i+1), f.call(req()), ok, limited(ok, 10, minute, uint32(9-i)), limited(ok, 3, minute, uint32(2-i)))
	}
	// The free plan refuses the call: the user's limit counts nothing.
	check(t, "4th", f.call(req()), over, limited(ok, 10, minute, 7), limited(over, 3, minute, 0))
	check(t, "5th", f.call(req()), over, limited(ok, 10, minute, 7), limited(over, 3, minute, 0))
	// A shadow descriptor over its limit never refuses the call.
	shadow := func() *rlsv3.RateLimitRequest {
		return request("api", 0, desc("user", "u4"), desc("user", "u4", "plan", "trial"))
	}
	for i := 0; i < 4; i++ {
		resp := f.call(shadow())
		if resp.OverallCode != ok || resp.Statuses[0].LimitRemaining != uint32(9-i) {
			t.Fatalf("shadow call %d: %v; want OK and the user's limit counted", i+1, resp)
		}
	}
}

func TestLimitOverrideReplacesTheRuleAndSharesItsCounter(t *testing.T) {
	f := newFixture(t, Config{}, "rules/api.yaml")
	check(t, "rule", f.call(request("api", 0, desc("remote_address", "192.0.2.9"))), ok, limited(ok, 5, minute, 4))
	// Envoy sends its own limit: 3/min. The count of the rule's key carries over.
	over3 := withLimit(desc("remote_address", "192.0.2.9"), 3, typev3.RateLimitUnit_MINUTE)
	check(t, "override 1", f.call(request("api", 0, over3)), ok, limited(ok, 3, minute, 1))
	check(t, "override 2", f.call(request("api", 0, over3)), ok, limited(ok, 3, minute, 0))
	check(t, "override 3", f.call(request("api", 0, over3)), over, limited(over, 3, minute, 0))
	// An override applies to descriptors no rule matches, but not to an unknown domain.
	check(t, "no rule", f.call(request("api", 0, withLimit(desc("nothing", "x"), 1, typev3.RateLimitUnit_HOUR))), ok, limited(ok, 1, hour, 0))
	check(t, "unknown domain", f.call(request("elsewhere", 0, withLimit(desc("nothing", "x"), 1, typev3.RateLimitUnit_HOUR))), ok, unlimitedWant(ok, 0))
}

func TestLimitOverrideUnitMultiplierLengthensTheWindow(t *testing.T) {
	f := newFixture(t, Config{}, "rules/api.yaml")
	d := withLimit(desc("nothing", "m"), 2, typev3.RateLimitUnit_MINUTE)
	d.Limit.UnitMultiplier = wrapperspb.UInt32(10) // 2 per 10 minutes
	resp := f.call(request("api", 0, d))
	check(t, "first", resp, ok, limited(ok, 2, minute, 1))
	if m := resp.Statuses[0].CurrentLimit.GetUnitMultiplier().GetValue(); m != 10 {
		t.Fatalf("unit_multiplier = %d; want 10", m)
	}
	// 12:00:10 is in the window 12:00–12:10.
	if got := resp.Statuses[0].DurationUntilReset.AsDuration(); got != 9*time.Minute+50*time.Second {
		t.Fatalf("duration_until_reset = %v; want 9m50s", got)
	}
	f.clock.advance(2 * time.Minute)
	f.call(request("api", 0, d))
	check(t, "third, 2 minutes on", f.call(request("api", 0, d)), over, limited(over, 2, minute, 0))
}

func TestHitsAddendOfTheRequestAndOfADescriptor(t *testing.T) {
	f := newFixture(t, Config{}, "rules/api.yaml")
	check(t, "request hits 3", f.call(request("api", 3, desc("remote_address", "a"))), ok, limited(ok, 5, minute, 2))
	check(t, "descriptor hits 0 checks", f.call(request("api", 3, withHits(desc("remote_address", "a"), 0))), ok, limited(ok, 5, minute, 2))
	check(t, "descriptor hits 2 wins", f.call(request("api", 3, withHits(desc("remote_address", "a"), 2))), ok, limited(ok, 5, minute, 0))
	check(t, "check at the limit", f.call(request("api", 0, withHits(desc("remote_address", "a"), 0))), ok, limited(ok, 5, minute, 0))
	check(t, "one more", f.call(request("api", 0, desc("remote_address", "a"))), over, limited(over, 5, minute, 0))
	// Request hits_addend 0 means 1.
	check(t, "request hits 0 is 1", f.call(request("api", 0, desc("remote_address", "b"))), ok, limited(ok, 5, minute, 4))
	// Hits above the limit can never be admitted: no Retry-After.
	g := newFixture(t, Config{Headers: HeadersXRateLimit}, "rules/api.yaml")
	resp := g.call(request("api", 6, desc("remote_address", "c")))
	check(t, "hits above the limit", resp, over, limited(over, 5, minute, 5))
	if v, has := header(resp, "Retry-After"); has {
		t.Fatalf("Retry-After %q for hits that never fit", v)
	}
}

func TestNegativeHitsRefund(t *testing.T) {
	f := newFixture(t, Config{}, "rules/api.yaml")
	f.call(request("api", 4, desc("remote_address", "r")))
	d := withHits(desc("remote_address", "r"), 3)
	d.IsNegativeHits = true
	check(t, "refund 3", f.call(request("api", 0, d)), ok, limited(ok, 5, minute, 4))
	d.HitsAddend = nil // the request's hits, refunded
	check(t, "refund the request's 2", f.call(request("api", 2, d)), ok, limited(ok, 5, minute, 5))
}

func TestUnlimitedReplacedShadowAndWhitelisted(t *testing.T) {
	f := newFixture(t, Config{}, "rules/api.yaml")
	resp := f.call(request("api", 0, desc("user", "u5", "plan", "internal"), desc("health", "x"), desc("nomatch", "y")))
	check(t, "unlimited, whitelisted, no rule", resp, ok,
		unlimitedWant(ok, math.MaxUint32), unlimitedWant(ok, 0), unlimitedWant(ok, 0))

	// (path /api/x) alone counts against api_paths; with (tier enterprise) it is replaced.
	for i := 0; i < 4; i++ {
		f.call(request("api", 0, desc("path", "/api/x")))
	}
	check(t, "api_paths spent", f.call(request("api", 0, desc("path", "/api/x"))), over, limited(over, 4, minute, 0))
	check(t, "replaced", f.call(request("api", 0, desc("path", "/api/x"), desc("tier", "enterprise"))), ok,
		unlimitedWant(ok, 0), limited(ok, 100, minute, 99))

	// A shadow rule over its limit answers OK, and counts it.
	for i := 0; i < 2; i++ {
		f.call(request("api", 0, desc("user", "u5", "plan", "trial")))
	}
	resp = f.call(request("api", 0, desc("user", "u5", "plan", "trial")))
	check(t, "shadow", resp, ok, limited(ok, 2, minute, 0))
	if s := f.svc.Stats(); s.ShadowDenied != 1 || s.OverLimit != 1 {
		t.Fatalf("stats %+v; want 1 shadow denial and 1 call over its limit", s)
	}
}

func TestTokenBucketRuleFromTheSluiceExtension(t *testing.T) {
	f := newFixture(t, Config{}, "rules/api.yaml")
	for i := 0; i < 4; i++ {
		check(t, fmt.Sprintf("take %d", i+1), f.call(request("api", 0, desc("token", "t"))), ok, limited(ok, 10, second, uint32(3-i)))
	}
	resp := f.call(request("api", 0, desc("token", "t")))
	check(t, "empty", resp, over, limited(over, 10, second, 0))
	f.clock.advance(100 * time.Millisecond) // one token at 10/s
	check(t, "refilled one", f.call(request("api", 0, desc("token", "t"))), ok, limited(ok, 10, second, 0))
	// duration_until_reset is the time until the bucket is full again: 4 tokens, 400 ms.
	if d := f.call(request("api", 0, withHits(desc("token", "t"), 0))).Statuses[0].DurationUntilReset.AsDuration(); d != 400*time.Millisecond {
		t.Fatalf("duration_until_reset = %v; want 400ms", d)
	}
}

func TestUnknownDomain(t *testing.T) {
	req := request("nope", 0, desc("remote_address", "a"), desc("user", "b"))
	f := newFixture(t, Config{}, "rules/api.yaml")
	check(t, "ok", f.call(req), ok, unlimitedWant(ok, 0), unlimitedWant(ok, 0))
	g := newFixture(t, Config{UnknownDomain: UnknownDomainOverLimit}, "rules/api.yaml")
	check(t, "over-limit", g.call(req), over, unlimitedWant(over, 0), unlimitedWant(over, 0))
	h := newFixture(t, Config{UnknownDomain: UnknownDomainError}, "rules/api.yaml")
	_, err := h.try(req)
	if status.Code(err) != codes.NotFound || status.Convert(err).Message() != "unknown rate limit domain 'nope'" {
		t.Fatalf("error = %v; want NOT_FOUND unknown rate limit domain 'nope'", err)
	}
	if _, err := h.try(request("api", 0, desc("remote_address", "a"))); err != nil {
		t.Fatalf("a known domain: %v", err)
	}
	// No rules loaded at all: every domain is unknown.
	e := newFixture(t, Config{})
	check(t, "no rules", e.call(req), ok, unlimitedWant(ok, 0), unlimitedWant(ok, 0))
}

func TestBadRequestsAreRefusedAndTheServerKeepsServing(t *testing.T) {
	f := newFixture(t, Config{}, "rules/api.yaml")
	zeroMult := withLimit(desc("a", "b"), 1, typev3.RateLimitUnit_SECOND)
	zeroMult.Limit.UnitMultiplier = wrapperspb.UInt32(0)
	longMult := withLimit(desc("a", "b"), 1, typev3.RateLimitUnit_YEAR)
	longMult.Limit.UnitMultiplier = wrapperspb.UInt32(300)
	many := request("api", 0)
	for i := 0; i <= maxDescriptors; i++ {
		many.Descriptors = append(many.Descriptors, desc("a", "b"))
	}
	deep := &ratelimitv3.RateLimitDescriptor{}
	for i := 0; i <= maxEntries; i++ {
		deep.Entries = append(deep.Entries, &ratelimitv3.RateLimitDescriptor_Entry{Key: "k", Value: "v"})
	}
	cases := []struct {
		name string
		req  *rlsv3.RateLimitRequest
		msg  string
	}{
		{"empty domain", request("", 0, desc("a", "b")), "rate limit domain must not be empty"},
		{"no descriptors", request("api", 0), "rate limit descriptor list must not be empty"},
		{"override without a unit", request("api", 0, withLimit(desc("a", "b"), 1, typev3.RateLimitUnit_UNKNOWN)), status.Convert(errOverrideUnit).Message()},
		{"override with an unknown unit", request("api", 0, withLimit(desc("a", "b"), 1, 99)), status.Convert(errOverrideUnit).Message()},
		{"unit_multiplier 0", request("api", 0, zeroMult), status.Convert(errMultiplierZero).Message()},
		{"a window of 300 years", request("api", 0, longMult), status.Convert(errPeriodTooLong).Message()},
		{"hits above int64", request("api", 0, withHits(desc("a", "b"), math.MaxUint64)), status.Convert(errHitsTooLarge).Message()},
		{"too many descriptors", many, status.Convert(errTooManyDescs).Message()},
		{"too many entries", request("api", 0, deep), status.Convert(errTooManyEntries).Message()},
		{"a rate above one per ns", request("api", 0, withLimit(desc("token", "t"), math.MaxUint32, typev3.RateLimitUnit_SECOND)), ""},
	}
	for _, c := range cases {
		_, err := f.try(c.req)
		if c.msg == "" { // a valid request after all: the override is a fixed window
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if status.Code(err) != codes.InvalidArgument || status.Convert(err).Message() != c.msg {
			t.Errorf("%s: %v; want INVALID_ARGUMENT %q", c.name, err, c.msg)
		}
	}
	check(t, "after", f.call(request("api", 0, desc("remote_address", "z"))), ok, limited(ok, 5, minute, 4))
	if s := f.svc.Stats(); s.Failed != int64(len(cases)-1) {
		t.Fatalf("stats %+v; want %d failed calls", s, len(cases)-1)
	}
}

// failingDecider answers every decision with a keyspace error.
type failingDecider struct{ err error }

func (d failingDecider) Decide(_ int64, reqs []algorithms.Request, out []algorithms.Outcome) {
	for i := range reqs {
		out[i].Err = d.err
	}
}

func TestKeyspaceErrorsBecomeStatusCodes(t *testing.T) {
	cases := []struct {
		text string
		code codes.Code
	}{
		{"CLUSTERDOWN no leader", codes.Unavailable},
		{"UNKNOWN outcome unknown: leadership lost; the decision may or may not have been applied", codes.Unknown},
		{"MISCONF Errors writing to the AOF file: No space left on device", codes.Unavailable},
		{"OOM command not allowed when used memory > 'maxmemory'", codes.ResourceExhausted},
		{"WRONGTYPE Operation against a key holding the wrong kind of value", codes.FailedPrecondition},
		{"ERR something else", codes.Internal},
	}
	for _, c := range cases {
		f := newFixtureDeciding(t, Config{}, failingDecider{errors.New(c.text)}, "rules/api.yaml")
		_, err := f.try(request("api", 0, desc("remote_address", "a")))
		if status.Code(err) != c.code || status.Convert(err).Message() != c.text {
			t.Errorf("%q: %v; want %v with the keyspace's text", c.text, err, c.code)
		}
	}
}

// TestCallsBeyondTheStreamWorkersAreServed: with fewer waiting workers than
// calls in flight, and with none (a goroutine per call), every call is
// answered and counted exactly once.
func TestCallsBeyondTheStreamWorkersAreServed(t *testing.T) {
	for _, workers := range []int{0, 2, DefaultStreamWorkers} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			f := &fixture{t: t, st: store.New(4), reg: policy.NewRegistry(), clock: newTestClock(t0)}
			rs, err := policy.Load([]string{filepath.Join("testdata", "rules/api.yaml")}, policy.Options{})
			if err != nil {
				t.Fatal(err)
			}
			f.reg.SetRules(rs)
			f.svc = New(Config{}, f.st, f.reg, f.clock)
			f.start(ServerOptions{StreamWorkers: workers})
			const callers, calls = 40, 6 // the rule allows 5 a minute per address
			var wg sync.WaitGroup
			oks := make([]int, callers)
			errs := make(chan error, callers)
			for c := 0; c < callers; c++ {
				wg.Add(1)
				go func(c int) {
					defer wg.Done()
					addr := fmt.Sprintf("192.0.2.%d", c)
					for i := 0; i < calls; i++ {
						resp, err := f.try(request("api", 0, desc("remote_address", addr)))
						if err != nil {
							errs <- err
							return
						}
						if resp.GetOverallCode() == ok {
							oks[c]++
						}
					}
				}(c)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			for c, n := range oks {
				if n != 5 {
					t.Errorf("caller %d: %d calls OK; want 5 of %d", c, n, calls)
				}
			}
			if got := f.svc.Stats().Calls; got != callers*calls {
				t.Errorf("Stats().Calls = %d; want %d", got, callers*calls)
			}
		})
	}
}
