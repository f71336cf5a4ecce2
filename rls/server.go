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
	// Limits bound what clients can make the server hold; a zero field
	// takes its default (DefaultLimits).
	Limits Limits
}

// Limits bound what the server holds for its clients. A connection holds
// at most MaxConcurrentStreams calls, each with at most MaxMessageSize
// bytes of request or of unsent reply, maxHeaderList bytes of headers and
// flowWindow bytes of unread request data, besides the connection's
// read and write buffers (bufferSize each); MaxConnections connections
// are served at once. docs/envoy.md states the bound these make.
type Limits struct {
	// MaxConnections is the most connections served at once; one accepted
	// past them is closed at once.
	MaxConnections int
	// MaxConcurrentStreams is the most calls in progress on one connection
	// (SETTINGS_MAX_CONCURRENT_STREAMS). A call is in progress until its
	// reply is written: a client that does not read its replies stops at
	// this many, and a stream past it is refused (REFUSED_STREAM).
	MaxConcurrentStreams uint32
	// MaxMessageSize is the largest request and the largest reply, in
	// bytes; a larger request fails with RESOURCE_EXHAUSTED before it is
	// read whole.
	MaxMessageSize int
	// ConnectionTimeout is how long a new connection has to complete the
	// HTTP/2 handshake (grpc-go's default is 120 s).
	ConnectionTimeout time.Duration
	// KeepaliveTime is how long a connection may send nothing before the
	// server pings it; KeepaliveTimeout how long the server then waits for
	// a frame before it closes the connection. A client that stopped
	// reading (whose connection the server has stopped reading too, its
	// replies unsent) is closed after the two.
	KeepaliveTime, KeepaliveTimeout time.Duration
	// MaxConnectionIdle closes (GOAWAY) a connection that has had no call
	// in progress for this long; 0: never.
	MaxConnectionIdle time.Duration
}

// The defaults of Limits. Envoy opens a connection per worker thread and
// keeps a few calls in flight on each; its requests are a few hundred
// bytes.
const (
	DefaultMaxConnections       = 1024
	DefaultMaxConcurrentStreams = 100
	DefaultMaxMessageSize       = 64 << 10
	DefaultConnectionTimeout    = 5 * time.Second
	DefaultKeepaliveTime        = 60 * time.Second
	DefaultKeepaliveTimeout     = 20 * time.Second
)

// The transport's sizes, fixed: the HTTP/2 flow control windows (the
// least grpc-go takes; fixing them turns off its window growth, which
// could let one connection buffer 16 MiB), the read and write buffers
// (grpc-go's defaults), and the headers of one call (Envoy sends a few
// hundred bytes; grpc-go's default is 16 MiB).
const (
	flowWindow    = 64 << 10
	bufferSize    = 32 << 10
	maxHeaderList = 16 << 10
)

// DefaultLimits returns the defaults.
func DefaultLimits() Limits {
	return Limits{
		MaxConnections:       DefaultMaxConnections,
		MaxConcurrentStreams: DefaultMaxConcurrentStreams,
		MaxMessageSize:       DefaultMaxMessageSize,
		ConnectionTimeout:    DefaultConnectionTimeout,
		KeepaliveTime:        DefaultKeepaliveTime,
		KeepaliveTimeout:     DefaultKeepaliveTimeout,
	}
}

// withDefaults returns l with each zero field but MaxConnectionIdle set to
// its default.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxConnections <= 0 {
		l.MaxConnections = d.MaxConnections
	}
	if l.MaxConcurrentStreams == 0 {
		l.MaxConcurrentStreams = d.MaxConcurrentStreams
	}
	if l.MaxMessageSize <= 0 {
		l.MaxMessageSize = d.MaxMessageSize
	}
	if l.ConnectionTimeout <= 0 {
		l.ConnectionTimeout = d.ConnectionTimeout
	}
	if l.KeepaliveTime <= 0 {
		l.KeepaliveTime = d.KeepaliveTime
	}
	if l.KeepaliveTimeout <= 0 {
		l.KeepaliveTimeout = d.KeepaliveTimeout
	}
	return l
}

// DefaultStreamWorkers is --grpc-stream-workers' default: the 50
// concurrent calls of make bench's RLS comparison find a waiting worker.
// Many more workers cost more than they save at that concurrency: each
// worker's stack is shrunk again by the collector while it waits.
const DefaultStreamWorkers = 64

// Server is the gRPC front end: the rate limit service, the standard
// health service (grpc.health.v1) and, optionally, reflection.
type Server struct {
	g        *grpc.Server
	health   *health.Server
	maxConns int
}

// NewServer returns a server for svc, within opts.Limits. Clients may
// ping every 10 s at most (Envoy's gRPC keepalive default is off; a faster
// pinger is told to back off with GOAWAY, as grpc-go does).
func NewServer(svc *Service, opts ServerOptions) *Server {
	l := opts.Limits.withDefaults()
	o := []grpc.ServerOption{
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			Time: l.KeepaliveTime, Timeout: l.KeepaliveTimeout, MaxConnectionIdle: l.MaxConnectionIdle,
		}),
		grpc.MaxConcurrentStreams(l.MaxConcurrentStreams),
		grpc.MaxRecvMsgSize(l.MaxMessageSize),
		grpc.MaxSendMsgSize(l.MaxMessageSize),
		grpc.ConnectionTimeout(l.ConnectionTimeout),
		grpc.InitialWindowSize(flowWindow),
		grpc.InitialConnWindowSize(flowWindow),
		grpc.ReadBufferSize(bufferSize),
		grpc.WriteBufferSize(bufferSize),
		grpc.MaxHeaderListSize(maxHeaderList),
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
	return &Server{g: g, health: h, maxConns: l.MaxConnections}
}

// Serve accepts connections on ln until Stop, at most Limits.MaxConnections
// at once; it returns nil after Stop.
func (s *Server) Serve(ln net.Listener) error {
	err := s.g.Serve(&connLimit{Listener: ln, max: int64(s.maxConns)})
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
