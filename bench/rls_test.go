package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// The RLS comparison's parts: the reply check, the load against a real
// sluice gRPC server built from this tree, the flags and the report's own
// section. The comparison with envoyproxy/ratelimit runs in the benchmark
// (it builds that service from the Go module proxy), never here.

func TestCheckRLS(t *testing.T) {
	status := func(code rlsv3.RateLimitResponse_Code, rpu, rem uint32) *rlsv3.RateLimitResponse {
		return &rlsv3.RateLimitResponse{OverallCode: code, Statuses: []*rlsv3.RateLimitResponse_DescriptorStatus{{
			Code: code, LimitRemaining: rem,
			CurrentLimit: &rlsv3.RateLimitResponse_RateLimit{RequestsPerUnit: rpu, Unit: rlsv3.RateLimitResponse_RateLimit_MINUTE}}}}
	}
	good := status(rlsv3.RateLimitResponse_OK, rlsLimit, rlsLimit-1)
	if allowed, p := checkRLS(good); !allowed || p != "" {
		t.Fatalf("a good answer: %v %q", allowed, p)
	}
	if allowed, p := checkRLS(status(rlsv3.RateLimitResponse_OVER_LIMIT, rlsLimit, 0)); allowed || p != "" {
		t.Fatalf("OVER_LIMIT: %v %q", allowed, p)
	}
	mixed := status(rlsv3.RateLimitResponse_OK, rlsLimit, 5)
	mixed.OverallCode = rlsv3.RateLimitResponse_OVER_LIMIT
	for name, bad := range map[string]*rlsv3.RateLimitResponse{
		"no status":           {OverallCode: rlsv3.RateLimitResponse_OK},
		"another limit":       status(rlsv3.RateLimitResponse_OK, 10, 5),
		"remaining too large": status(rlsv3.RateLimitResponse_OK, rlsLimit, rlsLimit),
		"status under over":   mixed,
		"unknown code":        status(rlsv3.RateLimitResponse_UNKNOWN, rlsLimit, 5),
	} {
		if _, p := checkRLS(bad); p == "" {
			t.Errorf("%s: accepted", name)
		}
	}
}

// Both load generators against sluice's gRPC front end: every answer is
// checked (the rule's limit, OK, what is left). The exact count of calls
// is checked against a grpc-go server (rlslean_test.go).
func TestRLSLoadAgainstSluice(t *testing.T) {
	tg := sluiceTarget(t)
	rules, err := writeRLSRules(tg.dir)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := startSluiceRLS(context.Background(), tg.bin, tg.dir, rules)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.stop()
	for _, gen := range []string{rlsGenLean, rlsGenGRPC} {
		o := &options{warmup: 100 * time.Millisecond, rls: rlsOptions{callers: 8, conns: 2, dur: 300 * time.Millisecond, keys: 1000, gen: gen}}
		res, err := measureRLS(srv, o)
		if err != nil {
			t.Fatal(err)
		}
		if res.t.errors != 0 || res.t.ok == 0 || res.t.allowed != res.t.ok || !res.cpuKnown || res.srvCPU <= 0 {
			t.Fatalf("%s: ok %d allowed %d errors %d (%v), server CPU %v (known %v)",
				gen, res.t.ok, res.t.allowed, res.t.errors, res.t.sortedProblems(), res.srvCPU, res.cpuKnown)
		}
		if f := res.figs(); f.ops <= 0 || f.p99 <= 0 {
			t.Fatalf("%s: figures %+v", gen, f)
		}
	}
}

func TestRLSFlags(t *testing.T) {
	for _, bad := range [][]string{{"-rls", "maybe"}, {"-rls-c", "0"}, {"-rls-c", "4", "-rls-conns", "5"}, {"-rls-keys", "0"}, {"-rls-gen", "ghz"}} {
		if _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	o, err := parseFlags([]string{"-rls", "only"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !o.rls.wanted(o.plan) || o.rls.dur != 3*time.Second || o.rls.gen != rlsGenLean {
		t.Fatalf("-rls only: %+v", o.rls)
	}
	for plan, want := range map[string]bool{"quick": true, "full": true, "custom": false} {
		r := rlsOptions{mode: "auto"}
		if r.wanted(plan) != want {
			t.Errorf("auto with plan %s: %v", plan, !want)
		}
	}
}

func TestRLSSectionKeepsTheOtherSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "RESULTS.md")
	if err := os.WriteFile(path, spliceSection([]byte("# Results\n\nkept\n"), "the RESP section\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := func(ok int64, lat time.Duration, cpu time.Duration) *result {
		r := &result{t: &tally{hist: newHistogram(), problems: map[string]*problem{}}, elapsed: time.Second, srvCPU: cpu, cpuKnown: true}
		r.t.ok = ok
		for i := int64(0); i < ok; i++ {
			r.t.hist.RecordValue(int64(lat))
		}
		return r
	}
	rep := &rlsReport{rounds: 1, opts: rlsOptions{callers: 50, conns: 4, dur: time.Second, keys: 65536},
		results: map[string]*result{rlsSluice: res(50000, time.Millisecond, time.Second), rlsEnvoy: res(10000, 4*time.Millisecond, time.Second)}}
	for i := 0; i < 2; i++ { // twice: the section is replaced, not added again
		if err := rep.writeMarkdown(path); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(path)
	doc := string(b)
	for _, want := range []string{"kept", "the RESP section", "throughput **5.00×**", "p99 **0.25×**", "server CPU per call **0.20×**"} {
		if !strings.Contains(doc, want) {
			t.Errorf("RESULTS.md lacks %q:\n%s", want, doc)
		}
	}
	if strings.Count(doc, rlsBegin) != 1 || strings.Count(doc, sectionBegin) != 1 {
		t.Fatalf("sections duplicated:\n%s", doc)
	}
}

// Without the module proxy and with an empty module cache, building
// envoyproxy/ratelimit fails at once, and the comparison says why and how to
// give a binary instead of failing the bench.
func TestRLSSkipsEnvoyRatelimitItCannotBuild(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("GOMODCACHE", t.TempDir())
	t.Setenv("GOPROXY", "off")
	t.Setenv("GOFLAGS", "-modcacherw")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var log strings.Builder
	bin, why := ratelimitBinary(ctx, "", &log)
	t.Log(why)
	if bin != "" || !strings.Contains(why, "building envoyproxy/ratelimit failed") || !strings.Contains(why, "give -ratelimit-bin") {
		t.Fatalf("ratelimitBinary = %q, %q; want a failed build that says what to do", bin, why)
	}
	if bin, why := ratelimitBinary(ctx, filepath.Join(t.TempDir(), "ratelimit"), &log); bin != "" || !strings.HasPrefix(why, "-ratelimit-bin ") {
		t.Fatalf("a missing -ratelimit-bin: %q, %q", bin, why)
	}

	rep := &rlsReport{rounds: 1, opts: rlsOptions{callers: 50, conns: 4, dur: time.Second, keys: 65536},
		results: map[string]*result{}, skipped: why}
	md := rep.markdown()
	var text strings.Builder
	rep.printText(&text)
	for _, out := range []string{md, text.String()} {
		if !strings.Contains(out, "skipped") {
			t.Errorf("no skipped row:\n%s", out)
		}
		if !strings.Contains(out, why) {
			t.Errorf("the reason %q is not given:\n%s", why, out)
		}
		if strings.Contains(out, "throughput") && strings.Contains(out, "×") {
			t.Errorf("ratios without the other side:\n%s", out)
		}
	}
}

// TestRLSStartsThePrebuiltBinary: the RLS comparison starts -sluice-bin, as
// the other plans do, instead of building the tree's, and its report says so.
func TestRLSStartsThePrebuiltBinary(t *testing.T) {
	bin := sluiceTarget(t).bin
	var stdout, stderr bytes.Buffer
	code := run([]string{"-rls", "only", "-sluice-bin", bin, "-ratelimit-bin", filepath.Join(t.TempDir(), "none"),
		"-rounds", "1", "-rls-d", "200ms", "-rls-c", "4", "-rls-conns", "1", "-warmup", "0s"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "bench: starting "+bin) || strings.Contains(stderr.String(), "building ./cmd/sluice") {
		t.Errorf("stderr does not say it starts the binary given:\n%s", stderr.String())
	}
	if !strings.Contains(stdout.String(), "sluice gRPC") {
		t.Errorf("stdout lacks sluice's row:\n%s", stdout.String())
	}
}
