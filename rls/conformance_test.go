package rls

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/sluice-rl/sluice/policy"
)

// The conformance table: the scenarios of envoyproxy/ratelimit's service
// tests (test/service/ratelimit_test.go, src/service/ratelimit_test.go)
// and integration tests (test/integration/integration_test.go), commit
// f2fb157, run against sluice over gRPC with the rules files of
// testdata/envoy. The service tests mock the configuration and the cache;
// here the mocked limits are rules files and the mocked counts are reached
// by calls. A row either behaves as envoyproxy/ratelimit does, or names a
// deliberate difference, which docs/envoy.md lists under the row's test
// name, and checks what sluice does instead.

type confStep struct {
	advance  time.Duration // before the call
	req      *rlsv3.RateLimitRequest
	overall  rlsv3.RateLimitResponse_Code
	statuses []want
	headers  []string // exactly these, in order, when not nil
	errMsg   string   // the call fails with this message
}

type confRow struct {
	test   string   // the envoyproxy/ratelimit test the row ports
	files  []string // rules, under testdata/envoy
	cfg    Config
	at     time.Time // the clock's first instant (t0 if zero)
	steps  []confStep
	run    func(t *testing.T, f *fixture) // a scenario that needs more than calls
	differ string                         // a deliberate difference
}

// repeat makes n steps, step(i) for i = 0…n-1.
func repeat(n int, step func(i int) confStep) []confStep {
	out := make([]confStep, n)
	for i := range out {
		out[i] = step(i)
	}
	return out
}

func steps(groups ...[]confStep) []confStep {
	var out []confStep
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

func one(s confStep) []confStep { return []confStep{s} }

var (
	service    = []string{"service.yaml"}
	integ      = []string{"integration/basic.yaml", "integration/another.yaml", "integration/share_threshold.yaml"}
	quotaFiles = []string{"service_quota.yaml"}
	// at2222 is the instant of the service tests' mock clock: 2222 s after
	// the epoch, 58 s before a minute ends.
	at2222 = time.Unix(2222, 0)
)

// spend makes n calls of req that the test does not check.
func spend(n int, req func() *rlsv3.RateLimitRequest) []confStep {
	return repeat(n, func(int) confStep { return confStep{req: req(), overall: -1} })
}

func fooBar() *rlsv3.RateLimitRequest {
	return request("different-domain", 1, desc("foo", "bar"), desc("hello", "world"))
}

var confRows = []confRow{
	// test/service/ratelimit_test.go
	{test: "TestService", files: service, steps: one(confStep{
		req: request("test-domain", 1, desc("hello", "world")), overall: ok, statuses: []want{unlimitedWant(ok, 0)}})},
	{test: "TestService", files: service, steps: steps(spend(10, fooBar), one(confStep{
		req: fooBar(), overall: over, statuses: []want{limited(over, 10, minute, 0), unlimitedWant(ok, 0)}}))},
	{test: "TestService", files: service, run: reloadFailureKeepsTheRules},
	{test: "TestServiceGlobalShadowMode", files: service, steps: steps(spend(10, fooBar), one(confStep{
		req: fooBar(), overall: over, statuses: []want{limited(over, 10, minute, 0), unlimitedWant(ok, 0)}})),
		differ: "no global shadow mode: shadow_mode is per rule, so the call is OVER_LIMIT"},
	{test: "TestRuleShadowMode", files: service, steps: steps(
		spend(10, func() *rlsv3.RateLimitRequest {
			return request("different-domain", 1, desc("shadow_foo", "bar"), desc("shadow_hello", "world"))
		}),
		one(confStep{req: request("different-domain", 1, desc("shadow_foo", "bar"), desc("shadow_hello", "world")),
			overall: ok, statuses: []want{limited(ok, 10, minute, 0), limited(ok, 10, minute, 0)}}))},
	{test: "TestMixedRuleShadowMode", files: service, steps: steps(
		spend(10, func() *rlsv3.RateLimitRequest {
			return request("different-domain", 1, desc("shadow_foo", "bar"), desc("mixed_hello", "world"))
		}),
		one(confStep{req: request("different-domain", 1, desc("shadow_foo", "bar"), desc("mixed_hello", "world")),
			overall: over, statuses: []want{limited(ok, 10, minute, 0), limited(over, 10, minute, 0)}}))},
	{test: "TestServiceWithCustomRatelimitHeaders", files: service, at: at2222, cfg: Config{Headers: HeadersXRateLimit},
		steps: steps(spend(10, fooBar), one(confStep{req: fooBar(), overall: over,
			statuses: []want{limited(over, 10, minute, 0), unlimitedWant(ok, 0)},
			headers:  []string{"X-RateLimit-Limit: 10", "X-RateLimit-Remaining: 0", "X-RateLimit-Reset: 58", "Retry-After: 58"}})),
		differ: "header names are not configurable: the X-RateLimit trio stands in for A-Ratelimit-*; Retry-After is added"},
	{test: "TestServiceWithDefaultRatelimitHeaders", files: service, at: at2222, cfg: Config{Headers: HeadersRateLimitTrio},
		steps: steps(spend(10, fooBar), one(confStep{req: fooBar(), overall: over,
			statuses: []want{limited(over, 10, minute, 0), unlimitedWant(ok, 0)},
			headers:  []string{"RateLimit-Limit: 10", "RateLimit-Remaining: 0", "RateLimit-Reset: 58", "Retry-After: 58"}})),
		differ: "Retry-After is added to an OVER_LIMIT answer"},
	{test: "TestEmptyDomain", files: service, steps: one(confStep{
		req: request("", 1, desc("hello", "world")), errMsg: "rate limit domain must not be empty"}),
		differ: "the status code is INVALID_ARGUMENT, not UNKNOWN"},
	{test: "TestEmptyDescriptors", files: service, steps: one(confStep{
		req: request("test-domain", 1), errMsg: "rate limit descriptor list must not be empty"}),
		differ: "the status code is INVALID_ARGUMENT, not UNKNOWN"},
	{test: "TestCacheError", files: service, run: keyspaceErrorFailsTheCall,
		differ: "the status code says what failed: UNAVAILABLE, RESOURCE_EXHAUSTED …, not UNKNOWN"},
	{test: "TestInitialLoadError", steps: one(confStep{
		req: request("test-domain", 1, desc("hello", "world")), overall: ok, statuses: []want{unlimitedWant(ok, 0)}}),
		differ: "with no rules loaded every domain is unknown: OK, or --grpc-unknown-domain's answer; not an error"},
	{test: "TestInitialLoadError", cfg: Config{UnknownDomain: UnknownDomainError}, steps: one(confStep{
		req: request("test-domain", 1, desc("hello", "world")), errMsg: "unknown rate limit domain 'test-domain'"}),
		differ: "with no rules loaded every domain is unknown: OK, or --grpc-unknown-domain's answer; not an error"},
	{test: "TestUnlimited", files: []string{"service_unlimited.yaml"}, steps: one(confStep{
		req:     request("some-domain", 1, desc("foo", "bar"), desc("hello", "world"), desc("baz", "qux")),
		overall: ok, statuses: []want{limited(ok, 10, minute, 9), unlimitedWant(ok, 0), unlimitedWant(ok, math.MaxUint32)}})},
	{test: "TestServiceHealthStatus", files: service, run: healthServing},
	{test: "TestServiceHealthStatusAtLeastOneConfigLoaded", run: healthServing,
		differ: "health does not wait for rules: sluice starts serving with its rules loaded, or without --policies"},
	{test: "TestServiceGlobalQuotaMode", files: quotaFiles, steps: steps(
		spend(3, func() *rlsv3.RateLimitRequest {
			return request("quota-domain", 1, desc("quota", "limit"), desc("quota2", "limit"))
		}),
		one(confStep{req: request("quota-domain", 1, desc("quota", "limit"), desc("quota2", "limit")),
			overall: over, statuses: []want{limited(over, 3, minute, 0), limited(over, 3, minute, 0)}})),
		differ: "no global quota mode (QUOTA_MODE): quota_mode is per rule, as in this row's rules"},
	{test: "TestMetadataReturnedForPassedDescriptors", files: quotaFiles, run: noDynamicMetadata,
		differ: "no dynamic metadata in the answer (RESPONSE_DYNAMIC_METADATA)"},
	{test: "TestMetadataReturnedForAllPassedDescriptors", files: quotaFiles, run: noDynamicMetadata,
		differ: "no dynamic metadata in the answer (RESPONSE_DYNAMIC_METADATA)"},
	{test: "TestOverlappingMetadataReturnsTheFirstValue", files: quotaFiles, run: noDynamicMetadata,
		differ: "no dynamic metadata in the answer (RESPONSE_DYNAMIC_METADATA)"},
	{test: "TestRatelimitToMetadata", files: quotaFiles, run: noDynamicMetadata,
		differ: "no dynamic metadata in the answer (RESPONSE_DYNAMIC_METADATA)"},
	{test: "TestServicePerDescriptorQuotaMode", files: quotaFiles, steps: steps(
		spend(5, func() *rlsv3.RateLimitRequest { return request("quota-domain", 1, desc("regular", "limit")) }),
		one(confStep{req: request("quota-domain", 1, desc("regular", "limit"), desc("quota", "limit")),
			overall: over, statuses: []want{limited(over, 5, minute, 0), limited(ok, 3, minute, 2)}}))},
	{test: "TestServiceMixedPerDescriptorModes", files: quotaFiles, steps: steps(
		spend(3, func() *rlsv3.RateLimitRequest { return request("quota-domain", 1, desc("quota", "limit")) }),
		one(confStep{req: request("quota-domain", 1, desc("regular", "limit"), desc("quota", "limit")),
			overall: over, statuses: []want{limited(ok, 5, minute, 4), limited(over, 3, minute, 0)}}))},
	{test: "TestServiceMixedPerDescriptorModesUnderLimit", files: quotaFiles, steps: one(confStep{
		req:     request("quota-domain", 1, desc("regular", "limit"), desc("quota", "limit")),
		overall: ok, statuses: []want{limited(ok, 5, minute, 4), limited(ok, 3, minute, 2)}})},
	{test: "TestServiceQuotaModeOnlyAllOverTheLimit", files: quotaFiles, steps: steps(
		spend(3, func() *rlsv3.RateLimitRequest {
			return request("quota-domain", 1, desc("quota", "limit"), desc("quota2", "limit"))
		}),
		one(confStep{req: request("quota-domain", 1, desc("quota", "limit"), desc("quota2", "limit")),
			overall: over, statuses: []want{limited(over, 3, minute, 0), limited(over, 3, minute, 0)}}))},
	{test: "TestServiceQuotaModeOnlySomeOverTheLimit", files: quotaFiles, steps: steps(
		spend(3, func() *rlsv3.RateLimitRequest { return request("quota-domain", 1, desc("quota", "limit")) }),
		one(confStep{req: request("quota-domain", 1, desc("quota", "limit"), desc("quota2", "limit")),
			overall: ok, statuses: []want{limited(over, 3, minute, 0), limited(ok, 3, minute, 2)}}))},
	{test: "TestServiceQuotaModeWithShadowMode", files: quotaFiles, steps: steps(
		spend(5, func() *rlsv3.RateLimitRequest {
			return request("quota-domain", 1, desc("regular", "limit"), desc("quota", "limit"))
		}),
		one(confStep{req: request("quota-domain", 1, desc("regular", "limit"), desc("quota", "limit")),
			overall: over, statuses: []want{limited(over, 5, minute, 0), limited(over, 3, minute, 0)}})),
		differ: "no global shadow mode: shadow_mode is per rule, so the call is OVER_LIMIT"},
	{test: "TestServiceMixedModeWithShadowMode", files: quotaFiles, steps: steps(
		spend(5, func() *rlsv3.RateLimitRequest {
			return request("quota-domain", 1, desc("regular", "limit"), desc("quota", "limit"))
		}),
		one(confStep{req: request("quota-domain", 1, desc("regular", "limit"), desc("quota", "limit")),
			overall: over, statuses: []want{limited(over, 5, minute, 0), limited(over, 3, minute, 0)}})),
		differ: "no global shadow mode: shadow_mode is per rule, so the call is OVER_LIMIT"},

	// test/integration/integration_test.go
	{test: "testBasicConfig", files: integ, steps: one(confStep{
		req: request("foo", 1, desc("hello", "world")), overall: ok, statuses: []want{unlimitedWant(ok, 0)}})},
	{test: "testBasicConfig", files: integ, steps: one(confStep{
		req: request("basic", 1, desc("key1", "foo")), overall: ok, statuses: []want{limited(ok, 50, second, 49)}})},
	{test: "testBasicConfig", files: integ, steps: one(confStep{
		req: request("basic", 1, desc("key1_local", "foo")), overall: ok, statuses: []want{limited(ok, 50, second, 49)}})},
	{test: "testBasicConfig", files: integ, steps: overAMinuteLimit("key2")},
	{test: "testBasicConfig", files: integ, steps: overAMinuteLimit("key2_local")},
	{test: "testBasicConfig", files: integ, steps: twoKeys("key2", "key3", false)},
	{test: "testBasicConfig", files: integ, steps: twoKeys("key2_local", "key3_local", false)},
	{test: "testBasicConfig", files: integ, cfg: Config{Batch: BatchCall}, steps: twoKeys("key2", "key3", true)},
	{test: "testBasicConfig", files: integ, run: durationTicksDown},
	{test: "testBasicConfigReload", run: reloadAddsAndRemovesADomain},
	{test: "testShareThreshold", files: integ, steps: steps(
		spend(10, func() *rlsv3.RateLimitRequest {
			return request("share-threshold-test", 1, desc("files", "files/a.pdf"))
		}),
		one(confStep{req: request("share-threshold-test", 1, desc("files", "files/b.csv")),
			overall: over, statuses: []want{limited(over, 10, hour, 0)}}),
		repeat(10, func(i int) confStep {
			return confStep{req: request("share-threshold-test", 1, desc("files_no_share", fmt.Sprintf("files_no_share/%d", i))),
				overall: ok, statuses: []want{limited(ok, 10, hour, 9)}}
		}))},
}

// overAMinuteLimit: 25 calls on key (20/min): 20 OK, then OVER_LIMIT.
func overAMinuteLimit(key string) []confStep {
	return repeat(25, func(i int) confStep {
		code, rem := ok, uint32(20-(i+1))
		if i >= 20 {
			code, rem = over, 0
		}
		return confStep{req: request("another", 1, desc(key, "4711")), overall: code, statuses: []want{limited(code, 20, minute, rem)}}
	})
}

// twoKeys: 15 calls on key2 (20/min) and key3 (10/hour) together. From the
// 11th, key3 is over its limit; key2 keeps counting (envoyproxy/ratelimit's
// default, sluice's BatchDescriptor), or stays at 10 left
// (STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT, sluice's BatchCall).
func twoKeys(key2, key3 string, stop bool) []confStep {
	return repeat(15, func(i int) confStep {
		code, rem1, rem2 := ok, uint32(20-(i+1)), uint32(10-(i+1))
		if i >= 10 {
			code, rem2 = over, 0
			if stop {
				rem1 = 10
			}
		}
		return confStep{req: request("another", 1, desc(key2, "815"), desc(key3, "815")), overall: code,
			statuses: []want{limited(ok, 20, minute, rem1), limited(code, 10, hour, rem2)}}
	})
}

func TestEnvoyRateLimitConformance(t *testing.T) {
	docs, err := os.ReadFile("../docs/envoy.md")
	if err != nil {
		t.Fatal(err)
	}
	for i, row := range confRows {
		t.Run(fmt.Sprintf("%02d_%s", i, row.test), func(t *testing.T) {
			if row.differ != "" && !strings.Contains(string(docs), "`"+row.test+"`") {
				t.Errorf("deliberate difference %q: docs/envoy.md does not list %s", row.differ, row.test)
			}
			var files []string
			for _, name := range row.files {
				files = append(files, filepath.Join("envoy", name))
			}
			f := newFixture(t, row.cfg, files...)
			if !row.at.IsZero() {
				f.clock.ns.Store(row.at.UnixNano())
			}
			if row.run != nil {
				row.run(t, f)
				return
			}
			for j, s := range row.steps {
				f.clock.advance(s.advance)
				resp, err := f.try(s.req)
				what := fmt.Sprintf("step %d", j+1)
				switch {
				case s.errMsg != "":
					if err == nil || status.Convert(err).Message() != s.errMsg {
						t.Fatalf("%s: %v, %v; want the error %q", what, resp, err, s.errMsg)
					}
					continue
				case err != nil:
					t.Fatalf("%s: %v", what, err)
				case s.overall == -1: // spent, not checked
					continue
				}
				check(t, what, resp, s.overall, s.statuses...)
				if s.headers != nil {
					wantHeaders(t, what, resp, s.headers...)
				}
			}
		})
	}
}

// reloadFailureKeepsTheRules: a rules file that fails to load leaves the
// rules in force (TestService's "Config load failure").
func reloadFailureKeepsTheRules(t *testing.T, f *fixture) {
	dir := t.TempDir()
	data, err := os.ReadFile("testdata/envoy/service.yaml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "service.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	w := policy.NewWatcher(policy.WatchConfig{Paths: []string{dir}, Apply: func(rs *policy.RuleSet) error {
		f.reg.SetRules(rs)
		return nil
	}})
	if err := w.Reload(f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("domain: different-domain\ndescriptors:\n  - key: foo\n    rate_limit: {unit: fortnight}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.Reload(f.clock.Now()); err == nil {
		t.Fatal("a broken file loaded")
	}
	req := request("different-domain", 1, desc("hello", "world"), desc("foo", "bar"))
	for i := 0; i < 10; i++ {
		f.call(req)
	}
	check(t, "after the failed load", f.call(req), over, unlimitedWant(ok, 0), limited(over, 10, minute, 0))
}

// keyspaceErrorFailsTheCall: a failing cache fails the call, with its
// error (TestCacheError).
func keyspaceErrorFailsTheCall(t *testing.T, _ *fixture) {
	f := newFixtureDeciding(t, Config{}, failingDecider{errors.New("CLUSTERDOWN cache error")}, "envoy/service.yaml")
	_, err := f.try(request("different-domain", 1, desc("foo", "bar")))
	if err == nil || status.Convert(err).Message() != "CLUSTERDOWN cache error" {
		t.Fatalf("error %v; want the keyspace's", err)
	}
}

func healthServing(t *testing.T, f *fixture) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(f.conn).Check(ctx, &healthpb.HealthCheckRequest{Service: "ratelimit"})
	if err != nil || resp.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health of 'ratelimit': %v, %v; want SERVING", resp, err)
	}
}

func noDynamicMetadata(t *testing.T, f *fixture) {
	resp := f.call(request("quota-domain", 1, desc("regular", "limit"), desc("quota", "limit")))
	if resp.DynamicMetadata != nil {
		t.Fatalf("dynamic metadata %v", resp.DynamicMetadata)
	}
	check(t, "passed descriptors", resp, ok, limited(ok, 5, minute, 4), limited(ok, 3, minute, 2))
}

// durationTicksDown: duration_until_reset of a day's window shrinks as time
// passes.
func durationTicksDown(t *testing.T, f *fixture) {
	req := request("another", 1, desc("key4", "durTest"))
	d1 := f.call(req).Statuses[0].DurationUntilReset.AsDuration()
	f.clock.advance(2 * time.Second)
	d2 := f.call(req).Statuses[0].DurationUntilReset.AsDuration()
	if d2 != d1-2*time.Second {
		t.Fatalf("duration_until_reset %v, then %v 2 s later", d1, d2)
	}
}

// reloadAddsAndRemovesADomain: a file added to the rules directory takes
// effect, and removing it takes effect too (testBasicConfigReload).
func reloadAddsAndRemovesADomain(t *testing.T, f *fixture) {
	dir := t.TempDir()
	for _, name := range []string{"basic.yaml", "another.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata/envoy/integration", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w := policy.NewWatcher(policy.WatchConfig{Paths: []string{dir}, Apply: func(rs *policy.RuleSet) error {
		f.reg.SetRules(rs)
		return nil
	}})
	if _, err := w.Poll(f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	check(t, "before", f.call(request("reload", 1, desc("block", "foo"))), ok, unlimitedWant(ok, 0))
	data, err := os.ReadFile("testdata/envoy/reload.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "reload.yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if tried, err := w.Poll(f.clock.Now()); !tried || err != nil {
		t.Fatalf("Poll after adding reload.yaml: %v, %v", tried, err)
	}
	check(t, "added", f.call(request("reload", 1, desc("key1", "foo"))), ok, limited(ok, 50, second, 49))
	check(t, "added, blocked", f.call(request("reload", 1, desc("block", "foo"))), over, limited(over, 0, second, 0))
	if err := os.Remove(filepath.Join(dir, "reload.yaml")); err != nil {
		t.Fatal(err)
	}
	if tried, err := w.Poll(f.clock.Now()); !tried || err != nil {
		t.Fatalf("Poll after removing reload.yaml: %v, %v", tried, err)
	}
	if st := w.Status(); st.Loads != 3 {
		t.Fatalf("loads = %d; want 3", st.Loads)
	}
	check(t, "removed", f.call(request("reload", 1, desc("block", "foo"))), ok, unlimitedWant(ok, 0))
}
