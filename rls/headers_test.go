package rls

import (
	"context"
	"strings"
	"testing"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
)

// headersOf returns the response's headers as "Key: value" lines.
func headersOf(resp *rlsv3.RateLimitResponse) string {
	var lines []string
	for _, h := range resp.GetResponseHeadersToAdd() {
		lines = append(lines, h.GetKey()+": "+h.GetValue())
	}
	return strings.Join(lines, "\n")
}

func wantHeaders(t *testing.T, what string, resp *rlsv3.RateLimitResponse, want ...string) {
	t.Helper()
	if got := headersOf(resp); got != strings.Join(want, "\n") {
		t.Errorf("%s: headers\n%s\nwant\n%s", what, got, strings.Join(want, "\n"))
	}
}

func TestHeadersIETF(t *testing.T) {
	f := newFixture(t, Config{Headers: HeadersIETF}, "rules/api.yaml")
	wantHeaders(t, "one descriptor", f.call(request("api", 0, desc("remote_address", "192.0.2.1"))),
		`RateLimit-Policy: "api.remote_address";q=5;w=60`,
		`RateLimit: "api.remote_address";r=4;t=50`)
	// A named rule is named by its name; a token bucket's quota is its burst,
	// its window the time a drained bucket takes to refill (4 × 100 ms,
	// rounded up to a second); unmatched descriptors are left out.
	wantHeaders(t, "several", f.call(request("api", 0, desc("path", "/api/v1"), desc("token", "t"), desc("nomatch", "x"))),
		`RateLimit-Policy: "api_paths";q=4;w=60, "api.token";q=4;w=1`,
		`RateLimit: "api_paths";r=3;t=50, "api.token";r=3;t=1`)
	for i := 0; i < 4; i++ {
		f.call(request("api", 0, desc("remote_address", "192.0.2.1")))
	}
	f.clock.advance(20 * time.Second)
	wantHeaders(t, "over the limit", f.call(request("api", 0, desc("remote_address", "192.0.2.1"))),
		`RateLimit-Policy: "api.remote_address";q=5;w=60`,
		`RateLimit: "api.remote_address";r=0;t=30`,
		`Retry-After: 30`)
	// requests_per_unit 0: a quota of 0, and no Retry-After (never admitted).
	wantHeaders(t, "blocked", f.call(request("api", 0, desc("remote_address", "10.0.0.66"))),
		`RateLimit-Policy: "api.remote_address_10.0.0.66";q=0;w=1`,
		`RateLimit: "api.remote_address_10.0.0.66";r=0;t=1`)
	wantHeaders(t, "no limit at all", f.call(request("api", 0, desc("nomatch", "x"))))
}

func TestHeadersOfTheDescriptorNearestItsLimit(t *testing.T) {
	for _, c := range []struct {
		mode                    Headers
		limit, remaining, reset string
	}{
		{HeadersXRateLimit, "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"},
		{HeadersRateLimitTrio, "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"},
	} {
		f := newFixture(t, Config{Headers: c.mode}, "rules/api.yaml")
		req := func() *rlsv3.RateLimitRequest {
			return request("api", 0, desc("user", "u"), desc("user", "u", "plan", "free"), desc("user", "u", "plan", "internal"))
		}
		// (user) 10/min has 9 left, (user, plan free) 3/min has 2 left: the latter.
		wantHeaders(t, c.limit, f.call(req()), c.limit+": 3", c.remaining+": 2", c.reset+": 50")
		f.call(req())
		f.call(req())
		// Over the limit: that descriptor, and Retry-After.
		wantHeaders(t, c.limit+" over", f.call(req()), c.limit+": 3", c.remaining+": 0", c.reset+": 50", "Retry-After: 50")
	}
}

func TestHeadersOffAddNothing(t *testing.T) {
	f := newFixture(t, Config{}, "rules/api.yaml")
	for i := 0; i < 6; i++ {
		if resp := f.call(request("api", 0, desc("remote_address", "h"))); len(resp.ResponseHeadersToAdd) != 0 {
			t.Fatalf("call %d: headers %v", i+1, resp.ResponseHeadersToAdd)
		}
	}
}

func TestStructuredFieldStringEscapesWhatItCannotHold(t *testing.T) {
	long := strings.Repeat("a", maxNameLen+10)
	cases := map[string]string{
		"plain":              `"plain"`,
		`say "hi"\`:          `"say \"hi\"\\"`,
		"tab\there":          `"tab%09here"`,
		"caf\xc3\xa9":        `"caf%C3%A9"`,
		"del\x7f":            `"del%7F"`,
		long:                 `"` + long[:maxNameLen] + `"`,
		"":                   `""`,
		"api.user_u.plan_x*": `"api.user_u.plan_x*"`,
	}
	for in, want := range cases {
		if got := string(appendSFString(nil, []byte(in))); got != want {
			t.Errorf("appendSFString(%q) = %s; want %s", in, got, want)
		}
	}
}

func TestHealthServiceReportsServingUntilStop(t *testing.T) {
	f := newFixture(t, Config{}, "rules/api.yaml")
	h := healthpb.NewHealthClient(f.conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, name := range []string{"", ServiceName, "ratelimit"} {
		resp, err := h.Check(ctx, &healthpb.HealthCheckRequest{Service: name})
		if err != nil || resp.Status != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("Check(%q) = %v, %v; want SERVING", name, resp, err)
		}
	}
	watch, err := h.Watch(ctx, &healthpb.HealthCheckRequest{Service: ServiceName})
	if err != nil {
		t.Fatal(err)
	}
	if first, err := watch.Recv(); err != nil || first.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("Watch: %v, %v; want SERVING", first, err)
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		sctx, scancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer scancel()
		f.srv.Stop(sctx) // the watch is a call in progress: Stop waits, then closes it
	}()
	// A watcher hears NOT_SERVING before its connection closes.
	if next, err := watch.Recv(); err != nil || next.Status != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("Watch after Stop: %v, %v; want NOT_SERVING", next, err)
	}
	<-stopped
}

func TestReflectionListsTheRateLimitService(t *testing.T) {
	f := newFixture(t, Config{}, "rules/api.yaml")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := reflectionpb.NewServerReflectionClient(f.conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	if got := strings.Join(names, ","); !strings.Contains(got, ServiceName) || !strings.Contains(got, "grpc.health.v1.Health") {
		t.Fatalf("services %s; want %s and grpc.health.v1.Health", got, ServiceName)
	}
}

func TestReflectionIsOffUnlessAsked(t *testing.T) {
	f := newFixture(t, Config{}, "rules/api.yaml")
	f.start(ServerOptions{}) // a second server on the same service, without reflection
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := reflectionpb.NewServerReflectionClient(f.conn).ServerReflectionInfo(ctx)
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("reflection without ServerOptions.Reflection: %v; want UNIMPLEMENTED", err)
	}
}
