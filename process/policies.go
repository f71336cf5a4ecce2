package process

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sluice-rl/sluice/commands"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/rls"
)

// The rules files (--policies) and the Envoy RLS v3 gRPC front end that
// applies them (--grpc-*): main owns the registry and its watcher and hands
// the registry to whatever applies rules.

// policiesPoll is how often the watcher reads the rules files for changes.
const policiesPoll = time.Second

// rulesLoader keeps a registry's rules in step with the --policies files.
type rulesLoader struct {
	log     *slog.Logger
	w       *policy.Watcher
	signals bool // reload on SIGHUP (Options.Signals)
	stop    chan struct{}
	done    chan struct{}
}

// loadPolicies loads the files of cfg.policies into reg, and from then on
// reloads them when what they hold changes (read every policiesPoll) and on
// SIGHUP. A set with an error at start stops the start; later, it is
// refused whole and logged, and the rules in force stay. Without
// --policies it returns nil: reg stays empty.
func loadPolicies(log *slog.Logger, cfg Options, reg *policy.Registry) (*rulesLoader, error) {
	if len(cfg.policies) == 0 {
		return nil, nil
	}
	w := policy.NewWatcher(policy.WatchConfig{
		Paths:   cfg.policies,
		Options: policy.Options{LogMaxLimit: cfg.commands.LogMaxLimit, MaxBytes: cfg.rulesMaxBytes},
		Apply: func(rs *policy.RuleSet) error {
			if err := checkSlotted(cfg, rs); err != nil {
				return err
			}
			reg.SetRules(rs)
			return nil
		},
	})
	if err := w.Reload(time.Now().UnixNano()); err != nil {
		return nil, fmt.Errorf("--policies: %w", err)
	}
	l := &rulesLoader{log: log, w: w, signals: cfg.Signals, stop: make(chan struct{}), done: make(chan struct{})}
	l.logged("rules loaded")
	go l.run()
	return l, nil
}

// checkSlotted refuses rules under which the gRPC front end of a sharded
// node with --grpc-batch call could not decide a call's descriptors in one
// data group (policy.RuleSet.CheckSlotted): at start, and at each reload,
// which then leaves the rules in force.
func checkSlotted(cfg Options, rs *policy.RuleSet) error {
	if cfg.cluster.Shard == 0 || cfg.grpcBind == "" || cfg.rls.Batch != rls.BatchCall {
		return nil
	}
	return rs.CheckSlotted()
}

// run polls the files and reloads them on SIGHUP (with Options.Signals)
// until close.
func (l *rulesLoader) run() {
	defer close(l.done)
	var hup chan os.Signal // nil without Options.Signals: never ready
	if l.signals {
		hup = make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
	}
	tick := time.NewTicker(policiesPoll)
	defer tick.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-hup:
			if err := l.w.Reload(time.Now().UnixNano()); err != nil {
				l.log.Error("SIGHUP: the rules files were refused; the rules in force stay", "err", err)
			} else {
				l.logged("SIGHUP: rules reloaded")
			}
		case now := <-tick.C:
			tried, err := l.w.Poll(now.UnixNano())
			switch {
			case err != nil:
				l.log.Error("the rules files changed and were refused; the rules in force stay", "err", err)
			case tried:
				l.logged("the rules files changed: rules reloaded")
			}
		}
	}
}

// logged logs a load that took effect, with what it loaded.
func (l *rulesLoader) logged(msg string) {
	st := l.w.Status()
	l.log.Info(msg, "files", len(st.Files), "domains", st.Domains, "rules", st.Rules, "policies", st.Policies,
		"hash", fmt.Sprintf("%x", st.Hash[:8]))
}

// close stops the reloading. A nil loader has nothing to stop.
func (l *rulesLoader) close() {
	if l == nil {
		return
	}
	close(l.stop)
	<-l.done
}

// The Envoy RLS v3 gRPC front end (--grpc-bind): the rls package's service
// over the same keyspace, clock and rules as the RESP server.

// grpcFrontEnd is the running gRPC server.
type grpcFrontEnd struct {
	srv  *rls.Server
	svc  *rls.Service
	addr string // the address it listens on
}

// startGRPC listens on --grpc-bind and serves the rate limit service
// there, deciding with dec under the rules of reg at the instants of
// clock; errs receives Serve's end. It returns nil without --grpc-bind.
func startGRPC(log *slog.Logger, cfg Options, dec rls.Decider, reg *policy.Registry, clock *commands.Clock, errs chan<- error) (*grpcFrontEnd, error) {
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
	rcfg := cfg.rls
	rcfg.MaxKey = int(cfg.server.Limits.MaxBulk) // the longest key a RESP client can name
	svc := rls.New(rcfg, dec, reg, clock)
	srv := rls.NewServer(svc, rls.ServerOptions{Reflection: cfg.grpcReflection, StreamWorkers: cfg.grpcWorkers, Limits: cfg.grpcLimits})
	log.Info("Envoy rate limit service (gRPC) ready", "addr", ln.Addr().String(),
		"reflection", yesNo(cfg.grpcReflection), "stream_workers", cfg.grpcWorkers, "headers", nameOf(cfg.rls.Headers, rlsHeaders),
		"batch", nameOf(cfg.rls.Batch, rlsBatches), "unknown_domain", nameOf(cfg.rls.UnknownDomain, rlsUnknownDomains),
		"count_over_limit", yesNo(cfg.rls.CountOverLimit), "max_connections", cfg.grpcLimits.MaxConnections,
		"max_concurrent_streams", cfg.grpcLimits.MaxConcurrentStreams, "max_message_size", cfg.grpcLimits.MaxMessageSize)
	go func() { errs <- srv.Serve(ln) }()
	return &grpcFrontEnd{srv: srv, svc: svc, addr: ln.Addr().String()}, nil
}

// stop reports NOT_SERVING to health checks and lets the calls in progress
// finish until ctx is done. A nil front end has nothing to stop.
func (g *grpcFrontEnd) stop(ctx context.Context) {
	if g != nil {
		g.srv.Stop(ctx)
	}
}
