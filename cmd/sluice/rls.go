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
	if err := cfg.rls.Validate(); err != nil {
		return nil, err
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
	svc := rls.New(cfg.rls, dec, reg, clock)
	srv := rls.NewServer(svc, rls.ServerOptions{Reflection: cfg.grpcReflection})
	log.Info("Envoy rate limit service (gRPC) ready", "addr", ln.Addr().String(),
		"reflection", yesNo(cfg.grpcReflection), "headers", nameOf(cfg.rls.Headers, rlsHeaders),
		"batch", nameOf(cfg.rls.Batch, rlsBatches), "unknown_domain", nameOf(cfg.rls.UnknownDomain, rlsUnknownDomains),
		"count_over_limit", yesNo(cfg.rls.CountOverLimit))
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
