package rls

import (
	"context"
	"net"
	"path/filepath"
	"strconv"
	"testing"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
)

// benchService is a service over a store with the api rules, at a clock
// that does not move (the bucket refills nothing; the window never ends).
func benchService(b *testing.B, cfg Config) *Service {
	rs, err := policy.Load([]string{filepath.Join("testdata", "rules", "api.yaml")}, policy.Options{})
	if err != nil {
		b.Fatal(err)
	}
	reg := policy.NewRegistry()
	reg.SetRules(rs)
	return New(cfg, store.New(8), reg, newTestClock(t0))
}

// benchRequests are n requests of one descriptor, on n addresses.
func benchRequests(n int, ds func(i int) *rlsv3.RateLimitRequest) []*rlsv3.RateLimitRequest {
	out := make([]*rlsv3.RateLimitRequest, n)
	for i := range out {
		out[i] = ds(i)
	}
	return out
}

// The call without gRPC: read, plan, decide, compose, build the response.
// The response's messages are what it allocates.
func BenchmarkShouldRateLimitOneDescriptor(b *testing.B) {
	svc := benchService(b, Config{})
	reqs := benchRequests(4096, func(i int) *rlsv3.RateLimitRequest {
		return request("api", 0, desc("token", strconv.Itoa(i)))
	})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := svc.ShouldRateLimit(context.Background(), reqs[i%len(reqs)]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkShouldRateLimitFourDescriptorsOneCall(b *testing.B) {
	for _, c := range []struct {
		name string
		cfg  Config
	}{{"descriptor", Config{}}, {"call", Config{Batch: BatchCall}}, {"ietf-headers", Config{Headers: HeadersIETF}}} {
		b.Run(c.name, func(b *testing.B) {
			svc := benchService(b, c.cfg)
			reqs := benchRequests(4096, func(i int) *rlsv3.RateLimitRequest {
				u := strconv.Itoa(i)
				return request("api", 0, desc("token", u), desc("user", u), desc("user", u, "plan", "enterprise"), desc("path", "/api/"+u))
			})
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if _, err := svc.ShouldRateLimit(context.Background(), reqs[i%len(reqs)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Through gRPC on loopback, calls from parallel goroutines on one
// connection: what the protocol adds to the call.
func BenchmarkShouldRateLimitGRPC(b *testing.B) {
	svc := benchService(b, Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := NewServer(svc, ServerOptions{})
	go srv.Serve(ln)
	defer srv.Stop(context.Background())
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	client := rlsv3.NewRateLimitServiceClient(conn)
	reqs := benchRequests(4096, func(i int) *rlsv3.RateLimitRequest {
		return request("api", 0, desc("token", strconv.Itoa(i)))
	})
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := client.ShouldRateLimit(context.Background(), reqs[i%len(reqs)]); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}
