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
}

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
	g := grpc.NewServer(
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
	)
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
