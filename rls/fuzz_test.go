package rls

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
)

// The parsers of this package are protobuf's (the request's wire form)
// and readRequest (the request's fields into the policy package's form);
// FuzzShouldRateLimit feeds both arbitrary bytes, then plans, decides and
// answers, and checks the answer's shape. The seed corpus is
// testdata/fuzz/FuzzShouldRateLimit, plus the requests below.

func fuzzSeeds() []*rlsv3.RateLimitRequest {
	over := withLimit(desc("remote_address", "x"), 2, typev3.RateLimitUnit_SECOND)
	over.Limit.UnitMultiplier = wrapperspb.UInt32(7)
	neg := withHits(desc("user", "u", "plan", "free"), 2)
	neg.IsNegativeHits = true
	return []*rlsv3.RateLimitRequest{
		request("api", 0, desc("remote_address", "192.0.2.1")),
		request("api", 3, desc("user", "u"), desc("user", "u", "plan", "free"), desc("path", "/api/x"), desc("tier", "enterprise")),
		request("api", 0, over, neg, withHits(desc("token", "t"), 0), desc("health", "")),
		request("api", 1, withLimit(desc("a", "b"), 1, 99)),
		request("nope", 1, desc("k", "v")),
		request("", 1),
	}
}

func FuzzShouldRateLimit(f *testing.F) {
	for _, r := range fuzzSeeds() {
		b, err := proto.Marshal(r)
		if err != nil {
			f.Fatal(err)
		}
		for _, mode := range []byte{0, 1, 2, 3} {
			f.Add(b, mode)
		}
	}
	rs, err := policy.Load([]string{filepath.Join("testdata", "rules", "api.yaml")}, policy.Options{})
	if err != nil {
		f.Fatal(err)
	}
	reg := policy.NewRegistry()
	reg.SetRules(rs)
	st := store.New(4)
	clock := newTestClock(t0)
	svcs := []*Service{
		New(Config{}, st, reg, clock),
		New(Config{Batch: BatchCall, Headers: HeadersIETF, CountOverLimit: true}, st, reg, clock),
		New(Config{Headers: HeadersXRateLimit, UnknownDomain: UnknownDomainOverLimit}, st, reg, clock),
		New(Config{Headers: HeadersRateLimitTrio, UnknownDomain: UnknownDomainError}, st, reg, clock),
	}
	f.Fuzz(func(t *testing.T, wire []byte, mode byte) {
		req := &rlsv3.RateLimitRequest{}
		if proto.Unmarshal(wire, req) != nil {
			return
		}
		clock.advance(time.Duration(mode) * time.Millisecond)
		resp, err := svcs[int(mode)%len(svcs)].ShouldRateLimit(context.Background(), req)
		if err != nil {
			switch status.Code(err) {
			case codes.InvalidArgument, codes.NotFound:
			default:
				t.Fatalf("error %v for %v", err, req)
			}
			return
		}
		if len(resp.Statuses) != len(req.Descriptors) {
			t.Fatalf("%d statuses for %d descriptors", len(resp.Statuses), len(req.Descriptors))
		}
		anyOver := false
		for _, s := range resp.Statuses {
			if s.Code != ok && s.Code != over {
				t.Fatalf("status code %v", s.Code)
			}
			anyOver = anyOver || s.Code == over
			if (s.CurrentLimit == nil) != (s.DurationUntilReset == nil) {
				t.Fatalf("a status with a limit and no duration, or the reverse: %v", s)
			}
			if d := s.DurationUntilReset; d != nil && (d.Seconds < 0 || d.Nanos < 0 || d.Nanos >= 1e9) {
				t.Fatalf("duration_until_reset %v", d)
			}
		}
		if (resp.OverallCode == over) != anyOver { // api.yaml has no quota_mode rule
			t.Fatalf("overall %v with statuses %v", resp.OverallCode, resp.Statuses)
		}
		for _, h := range resp.ResponseHeadersToAdd {
			if h.Key == "" || strings.ContainsAny(h.Value, "\r\n\x00") {
				t.Fatalf("header %q: %q", h.Key, h.Value)
			}
		}
	})
}

// FuzzStructuredFieldString checks that any name becomes one valid
// Structured Field String (RFC 9651 §3.3.3).
func FuzzStructuredFieldString(f *testing.F) {
	for _, s := range []string{"", "api.user_u", `q"uote\`, "caf\xc3\xa9", strings.Repeat("x", 200)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, name []byte) {
		out := appendSFString(nil, name)
		if len(out) < 2 || out[0] != '"' || out[len(out)-1] != '"' {
			t.Fatalf("%q: not quoted", out)
		}
		body := out[1 : len(out)-1]
		for i := 0; i < len(body); i++ {
			c := body[i]
			switch {
			case c < 0x20 || c > 0x7E:
				t.Fatalf("%q: byte %#x", out, c)
			case c == '\\':
				if i+1 == len(body) || (body[i+1] != '"' && body[i+1] != '\\') {
					t.Fatalf("%q: a lone backslash", out)
				}
				i++
			case c == '"':
				t.Fatalf("%q: an unescaped quote", out)
			}
		}
	})
}
