package main

import (
	"context"
	"log/slog"
	"net"

	"github.com/sluice-rl/sluice/commands"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/rls"
)

// The Envoy RLS v3 gRPC front end (--grpc-bind): the rls package's service
// over the same keyspace, clock and rules as the RESP server.

// rlsConfig maps the --grpc-* flags to the service's configuration.
func rlsConfig(cfg config) rls.Config {
	c := rls.Config{CountOverLimit: cfg.grpcCountOverLimit == "yes"}
	if cfg.grpcBatch == "call" {
		c.Batch = rls.BatchCall
	}
	switch cfg.grpcUnknownDomain {
	case "over-limit":
		c.UnknownDomain = rls.UnknownDomainOverLimit
	case "error":
		c.UnknownDomain = rls.UnknownDomainError
	}
	switch cfg.grpcHeaders {
	case "ietf":
		c.Headers = rls.HeadersIETF
	case "x-ratelimit":
		c.Headers = rls.HeadersXRateLimit
	case "ratelimit-limit":
		c.Headers = rls.HeadersRateLimitTrio
	}
	return c
}

// grpcFrontEnd is the running gRPC server.
type grpcFrontEnd struct {
	srv *rls.Server
}

// startGRPC listens on --grpc-bind and serves the rate limit service
// there, deciding with dec under the rules of reg at the instants of
// clock; errs receives Serve's end. It returns nil without --grpc-bind.
func startGRPC(log *slog.Logger, cfg config, dec rls.Decider, reg *policy.Registry, clock *commands.Clock, errs chan<- error) (*grpcFrontEnd, error) {
	if cfg.grpcBind == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", cfg.grpcBind)
	if err != nil {
		return nil, err
	}
	if host, _, _ := net.SplitHostPort(cfg.grpcBind); !isLoopback(host) {
		log.Warn("the Envoy rate limit service listens on "+cfg.grpcBind+" without TLS or authentication: "+
			"anyone who can reach it can spend any descriptor's limit. Bind it to loopback (a sidecar) or a private network",
			"grpc_bind", cfg.grpcBind)
	}
	svc := rls.New(rlsConfig(cfg), dec, reg, clock)
	srv := rls.NewServer(svc, rls.ServerOptions{Reflection: cfg.grpcReflection == "yes"})
	log.Info("Envoy rate limit service (gRPC) ready", "addr", ln.Addr().String(), "reflection", cfg.grpcReflection,
		"headers", cfg.grpcHeaders, "batch", cfg.grpcBatch, "unknown_domain", cfg.grpcUnknownDomain,
		"count_over_limit", cfg.grpcCountOverLimit)
	go func() { errs <- srv.Serve(ln) }()
	return &grpcFrontEnd{srv: srv}, nil
}

// stop reports NOT_SERVING to health checks and lets the calls in progress
// finish until ctx is done. A nil front end has nothing to stop.
func (g *grpcFrontEnd) stop(ctx context.Context) {
	if g != nil {
		g.srv.Stop(ctx)
	}
}
