package rls

import (
	"context"
	"net"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
)

// ServiceName is the gRPC service the health service reports on, besides
// "" (the server as a whole) and "ratelimit" (the name
// envoyproxy/ratelimit's health checks ask for).
const ServiceName = "envoy.service.ratelimit.v3.RateLimitService"

// ServerOptions tune a Server.
type ServerOptions struct {
	// Reflection serves the gRPC reflection service (grpcurl, grpcui).
	Reflection bool
	// StreamWorkers is how many goroutines wait to serve calls (grpc-go's
	// NumStreamWorkers); a call that finds them all busy gets a goroutine
	// of its own. 0: every call gets a new goroutine, grpc-go's default.
	// A new goroutine starts on a 2 KiB stack that a call's path through
	// grpc-go and the store outgrows, and copying the stack as it grows
	// is costly (bench/RESULTS.md, "Measurements behind the code's
	// choices"); a waiting worker keeps the stack it grew.
	StreamWorkers int
}

// DefaultStreamWorkers is --grpc-stream-workers' default: the 50
// concurrent calls of make bench's RLS comparison find a waiting worker.
// Many more workers cost more than they save at that concurrency: each
// worker's stack is shrunk again by the collector while it waits.
const DefaultStreamWorkers = 64

// Server is the gRPC front end: the rate limit service, the standard
// health service (grpc.health.v1) and, optionally, reflection.
type Server struct {
	g      *grpc.Server
	health *health.Server
}

// NewServer returns a server for svc. Clients may ping every 10 s at most
// (Envoy's gRPC keepalive default is off; a faster pinger is told to back
// off with GOAWAY, as grpc-go does).
func NewServer(svc *Service, opts ServerOptions) *Server {
	o := []grpc.ServerOption{
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
	}
	if opts.StreamWorkers > 0 {
		o = append(o, grpc.NumStreamWorkers(uint32(opts.StreamWorkers)))
	}
	g := grpc.NewServer(o...)
	rlsv3.RegisterRateLimitServiceServer(g, svc)
	h := health.NewServer()
	for _, name := range []string{"", ServiceName, "ratelimit"} {
		h.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	}
	healthpb.RegisterHealthServer(g, h)
	if opts.Reflection {
		reflection.Register(g)
	}
	return &Server{g: g, health: h}
}

// Serve accepts connections on ln until Stop; it returns nil after Stop.
func (s *Server) Serve(ln net.Listener) error {
	err := s.g.Serve(ln)
	if err == grpc.ErrServerStopped {
		return nil
	}
	return err
}

// Stop reports NOT_SERVING to health checks, lets the calls in progress
// finish until ctx is done, then closes every connection.
func (s *Server) Stop(ctx context.Context) {
	s.health.Shutdown()
	done := make(chan struct{})
	go func() {
		s.g.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		s.g.Stop()
		<-done
	}
}
