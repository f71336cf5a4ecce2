package rls

import (
	"context"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
)

// The tests run a real gRPC server on 127.0.0.1:0 over a real store, and
// call it with the client go-control-plane generates, as Envoy does. Time
// is a script of instants: the service reads a clock the test moves.

// t0 is 10 s into a minute (and an hour, and a day): a minute window ends
// 50 s later.
var t0 = time.Date(2026, 3, 2, 12, 0, 10, 0, time.UTC)

// testClock is a clock the test sets.
type testClock struct{ ns atomic.Int64 }

func newTestClock(at time.Time) *testClock {
	c := &testClock{}
	c.ns.Store(at.UnixNano())
	return c
}

func (c *testClock) Now() int64              { return c.ns.Load() }
func (c *testClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// fixture is a server and a client connected to it.
type fixture struct {
	t      *testing.T
	st     *store.Store
	reg    *policy.Registry
	clock  *testClock
	svc    *Service
	srv    *Server
	conn   *grpc.ClientConn
	client rlsv3.RateLimitServiceClient
}

// newFixture starts a server with cfg whose rules are the files at paths
// (under testdata/), or none.
func newFixture(t *testing.T, cfg Config, paths ...string) *fixture {
	t.Helper()
	return newFixtureDeciding(t, cfg, nil, paths...)
}

// newFixtureDeciding is newFixture with dec deciding instead of the store
// (nil: the store).
func newFixtureDeciding(t *testing.T, cfg Config, dec Decider, paths ...string) *fixture {
	t.Helper()
	f := &fixture{t: t, st: store.New(4), reg: policy.NewRegistry(), clock: newTestClock(t0)}
	if len(paths) > 0 {
		full := make([]string, len(paths))
		for i, p := range paths {
			full[i] = filepath.Join("testdata", p)
		}
		rs, err := policy.Load(full, policy.Options{})
		if err != nil {
			t.Fatal(err)
		}
		f.reg.SetRules(rs)
	}
	if dec == nil {
		dec = f.st
	}
	f.svc = New(cfg, dec, f.reg, f.clock)
	f.start(ServerOptions{Reflection: true, StreamWorkers: DefaultStreamWorkers})
	return f
}

// start serves f.svc on a fresh 127.0.0.1 port and connects a client.
func (f *fixture) start(opts ServerOptions) {
	t := f.t
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(f.svc, opts)
	f.srv = srv
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	f.conn, f.client = conn, rlsv3.NewRateLimitServiceClient(conn)
	t.Cleanup(func() {
		conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Stop(ctx)
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
}

// call sends req and fails the test on an error.
func (f *fixture) call(req *rlsv3.RateLimitRequest) *rlsv3.RateLimitResponse {
	f.t.Helper()
	resp, err := f.try(req)
	if err != nil {
		f.t.Fatalf("ShouldRateLimit(%v): %v", req, err)
	}
	return resp
}

// try sends req, with a bound on the wait.
func (f *fixture) try(req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return f.client.ShouldRateLimit(ctx, req)
}

// desc builds a descriptor from key, value pairs.
func desc(kv ...string) *ratelimitv3.RateLimitDescriptor {
	d := &ratelimitv3.RateLimitDescriptor{}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, &ratelimitv3.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

// withHits sets a descriptor's own hits_addend.
func withHits(d *ratelimitv3.RateLimitDescriptor, hits uint64) *ratelimitv3.RateLimitDescriptor {
	d.HitsAddend = wrapperspb.UInt64(hits)
	return d
}

// withLimit sets a descriptor's limit override.
func withLimit(d *ratelimitv3.RateLimitDescriptor, rpu uint32, unit typev3.RateLimitUnit) *ratelimitv3.RateLimitDescriptor {
	d.Limit = &ratelimitv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: rpu, Unit: unit}
	return d
}

// request builds a request of domain with descriptors.
func request(domain string, hits uint32, ds ...*ratelimitv3.RateLimitDescriptor) *rlsv3.RateLimitRequest {
	return &rlsv3.RateLimitRequest{Domain: domain, Descriptors: ds, HitsAddend: hits}
}

const (
	ok   = rlsv3.RateLimitResponse_OK
	over = rlsv3.RateLimitResponse_OVER_LIMIT
)

// want describes one status: its code, and (when rpu > 0 or unit is set)
// its current limit and limit_remaining. noLimit: no current limit.
type want struct {
	code      rlsv3.RateLimitResponse_Code
	rpu       uint32
	unit      rlsv3.RateLimitResponse_RateLimit_Unit
	remaining uint32
}

func limited(code rlsv3.RateLimitResponse_Code, rpu uint32, unit rlsv3.RateLimitResponse_RateLimit_Unit, remaining uint32) want {
	return want{code: code, rpu: rpu, unit: unit, remaining: remaining}
}

func unlimitedWant(code rlsv3.RateLimitResponse_Code, remaining uint32) want {
	return want{code: code, remaining: remaining}
}

// check compares a response's codes, limits and remaining counts.
func check(t *testing.T, what string, resp *rlsv3.RateLimitResponse, overall rlsv3.RateLimitResponse_Code, ws ...want) {
	t.Helper()
	if resp.GetOverallCode() != overall {
		t.Errorf("%s: overall %v; want %v (%v)", what, resp.GetOverallCode(), overall, resp)
	}
	if len(resp.GetStatuses()) != len(ws) {
		t.Fatalf("%s: %d statuses; want %d (%v)", what, len(resp.GetStatuses()), len(ws), resp)
	}
	for i, w := range ws {
		st := resp.GetStatuses()[i]
		if st.GetCode() != w.code || st.GetLimitRemaining() != w.remaining {
			t.Errorf("%s: status %d = %v remaining %d; want %v remaining %d", what, i, st.GetCode(), st.GetLimitRemaining(), w.code, w.remaining)
		}
		hasLimit := w.unit != 0
		switch {
		case hasLimit != (st.GetCurrentLimit() != nil):
			t.Errorf("%s: status %d current_limit %v; want one: %v", what, i, st.GetCurrentLimit(), hasLimit)
		case hasLimit && (st.GetCurrentLimit().GetRequestsPerUnit() != w.rpu || st.GetCurrentLimit().GetUnit() != w.unit):
			t.Errorf("%s: status %d limit %v; want %d per %v", what, i, st.GetCurrentLimit(), w.rpu, w.unit)
		case hasLimit != (st.GetDurationUntilReset() != nil):
			t.Errorf("%s: status %d duration_until_reset %v; want one: %v", what, i, st.GetDurationUntilReset(), hasLimit)
		}
	}
}

// header returns the value of the response header named key, and whether
// there is one.
func header(resp *rlsv3.RateLimitResponse, key string) (string, bool) {
	for _, h := range resp.GetResponseHeadersToAdd() {
		if h.GetKey() == key {
			return h.GetValue(), true
		}
	}
	return "", false
}
