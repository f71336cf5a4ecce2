package main

import (
	"context"
	"hash/crc32"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The lean generator against a grpc-go server whose answers depend on the
// request, so that an answer delivered to the wrong caller shows; the
// server allows few concurrent streams, so that callers wait for them.

// echoRLS answers every call OK with remaining derived from the
// descriptor's value; value "error" is refused and value "big" gets a
// response larger than an HTTP/2 frame.
type echoRLS struct {
	rlsv3.UnimplementedRateLimitServiceServer
	calls atomic.Int64
}

func remainingFor(value string) uint32 { return crc32.ChecksumIEEE([]byte(value)) % (rlsLimit - 1) }

func (e *echoRLS) ShouldRateLimit(_ context.Context, req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	e.calls.Add(1)
	v := req.GetDescriptors()[0].GetEntries()[0].GetValue()
	switch v {
	case "error":
		return nil, status.Error(codes.ResourceExhausted, "refused on purpose")
	}
	resp := &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OK, Statuses: []*rlsv3.RateLimitResponse_DescriptorStatus{{
		Code: rlsv3.RateLimitResponse_OK, LimitRemaining: remainingFor(v),
		CurrentLimit: &rlsv3.RateLimitResponse_RateLimit{RequestsPerUnit: rlsLimit, Unit: rlsv3.RateLimitResponse_RateLimit_MINUTE}}}}
	if v == "big" {
		resp.RawBody = []byte(strings.Repeat("x", 100_000))
	}
	return resp, nil
}

// startEchoRLS serves e with grpc-go on 127.0.0.1:0.
func startEchoRLS(t *testing.T, e *echoRLS, opts ...grpc.ServerOption) (string, *grpc.Server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(opts...)
	rlsv3.RegisterRateLimitServiceServer(g, e)
	go g.Serve(ln)
	t.Cleanup(g.Stop)
	return ln.Addr().String(), g
}

func TestLeanCallsGetTheirOwnAnswersFromGRPCGo(t *testing.T) {
	e := &echoRLS{}
	addr, _ := startEchoRLS(t, e, grpc.MaxConcurrentStreams(3))
	reqs := rlsRequests(1000)
	tr, err := dialLean(addr, 2, reqs)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.close()
	const callers, calls = 12, 300
	var wg sync.WaitGroup
	errs := make(chan string, callers)
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			do, rng := tr.caller(i), rand.New(rand.NewPCG(uint64(i), 1))
			for n := 0; n < calls; n++ {
				k := rng.IntN(len(reqs))
				resp, err := do(k)
				if err != nil {
					errs <- err.Error()
					return
				}
				if _, p := checkRLS(resp); p != "" {
					errs <- p
					return
				}
				want := remainingFor(reqs[k].Descriptors[0].Entries[0].Value)
				if got := resp.Statuses[0].LimitRemaining; got != want {
					errs <- "another call's answer"
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if got := e.calls.Load(); got != callers*calls {
		t.Fatalf("the server saw %d calls; want %d", got, callers*calls)
	}
}

func TestLeanReportsErrorsAndLargeAnswers(t *testing.T) {
	e := &echoRLS{}
	addr, g := startEchoRLS(t, e)
	reqs := rlsRequests(10)
	reqs[0].Descriptors[0].Entries[0].Value = "error"
	reqs[1].Descriptors[0].Entries[0].Value = "big"
	tr, err := dialLean(addr, 1, reqs)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.close()
	do := tr.caller(0)
	if _, err := do(0); err == nil || !strings.Contains(err.Error(), "grpc-status 8: refused on purpose") {
		t.Fatalf("a refused call: %v", err)
	}
	for i := 0; i < 30; i++ { // 3 MB of answers: more than the server's first windows
		resp, err := do(1)
		if err != nil || len(resp.RawBody) != 100_000 {
			t.Fatalf("a 100 kB answer: %v", err)
		}
	}
	if resp, err := do(2); err != nil || resp.Statuses[0].LimitRemaining != remainingFor(reqs[2].Descriptors[0].Entries[0].Value) {
		t.Fatalf("after them: %v", err)
	}
	// A server that goes away: calls fail, none hangs.
	g.Stop()
	done := make(chan error, 1)
	go func() { _, err := do(2); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a call after the server stopped succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a call after the server stopped hangs")
	}
}

// Both generators drive the same server through driveRLS; the server's
// count covers every answer the callers counted.
func TestDriveRLSWithBothGenerators(t *testing.T) {
	for _, gen := range []string{rlsGenLean, rlsGenGRPC} {
		t.Run(gen, func(t *testing.T) {
			e := &echoRLS{}
			addr, _ := startEchoRLS(t, e)
			reqs := rlsRequests(5000)
			tr, err := dialRLSGen(gen, addr, 3, reqs)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.close()
			l := &rlsLoad{callers: 10, conns: 3, keys: 5000}
			var before int64
			tl, elapsed := driveRLS(l, tr, len(reqs), 50*time.Millisecond, 300*time.Millisecond, measureMarks{
				start: func() { before = e.calls.Load() },
				end:   func() {},
			})
			after := e.calls.Load()
			if tl.errors != 0 || tl.ok == 0 || tl.allowed != tl.ok || elapsed < 300*time.Millisecond {
				t.Fatalf("ok %d allowed %d errors %d %v in %v", tl.ok, tl.allowed, tl.errors, tl.sortedProblems(), elapsed)
			}
			// Calls under way at either end of the measured time are not counted.
			if n := after - before; tl.ok > n || tl.ok < n-int64(2*l.callers) {
				t.Fatalf("the callers counted %d answers; the server answered %d calls meanwhile", tl.ok, n)
			}
			if int64(tl.hist.TotalCount()) != tl.ok {
				t.Fatalf("%d latencies for %d answers", tl.hist.TotalCount(), tl.ok)
			}
		})
	}
}
