// Command gateway is an HTTP gateway that applies three limits to every request in one atomic
// call to sluice: one for the user, one for the route (all users together) and one for the
// whole API. A request is admitted only if all three admit it, and then it is counted in all
// three; if any refuses, nothing is counted anywhere, so a refused request never uses up
// another limit (RL.ALL). With -policies the limits are server policies checked with one
// RL.CHECK instead, so that operators change them in sluice without redeploying the gateway.
//
//	go run ./examples/gateway -addr 127.0.0.1:6380 -listen 127.0.0.1:8080
//	curl -i -H 'X-User: alice' http://127.0.0.1:8080/orders
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-rl/sluice/client"
	"github.com/sluice-rl/sluice/client/httplimit"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, nil); err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}

// limits are the gateway's three limits: N requests per window each.
type limits struct {
	user, route, global          int64
	userWin, routeWin, globalWin time.Duration
}

// gateway holds the limits and decides for each request.
type gateway struct {
	c        *client.Client
	l        limits
	policies bool
	log      *slog.Logger
}

// run serves until ctx ends; ready, if not nil, receives the address once it listens.
func run(ctx context.Context, args []string, out io.Writer, ready chan<- string) error {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:6380", "sluice's address")
	listen := fs.String("listen", "127.0.0.1:8080", "the gateway's address")
	var l limits
	fs.Int64Var(&l.user, "user", 10, "requests per -user-window for each user (a token bucket)")
	fs.DurationVar(&l.userWin, "user-window", time.Second, "")
	fs.Int64Var(&l.route, "route", 300, "requests per -route-window for each route, all users together (a sliding window)")
	fs.DurationVar(&l.routeWin, "route-window", time.Minute, "")
	fs.Int64Var(&l.global, "global", 1000, "requests per -global-window for the whole API (a token bucket)")
	fs.DurationVar(&l.globalWin, "global-window", time.Second, "")
	policies := fs.Bool("policies", false, "define the limits as server policies and check them with RL.CHECK")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rdb := redis.NewClient(&redis.Options{Addr: *addr, MaxRetries: -1, ContextTimeoutEnabled: true})
	defer rdb.Close()
	g := &gateway{c: client.New(rdb), l: l, policies: *policies, log: slog.New(slog.NewTextHandler(out, nil))}
	if g.policies {
		if err := g.definePolicies(ctx); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: g.handler(http.HandlerFunc(backend)), ReadHeaderTimeout: 5 * time.Second}
	fmt.Fprintf(out, "gateway on http://%s\n", ln.Addr())
	if ready != nil {
		ready <- ln.Addr().String()
	}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// backend stands for the services behind the gateway.
func backend(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "%s served\n", r.URL.Path) }

// policyNames are the server policies of the user's, the route's and the global limit.
var policyNames = [...]string{"gw-user", "gw-route", "gw-global"}

// definePolicies puts the three limits in sluice as policies (RL.POLICY SET), replacing those
// of an earlier run.
func (g *gateway) definePolicies(ctx context.Context) error {
	for i, l := range g.limits("", "") {
		if err := g.c.SetPolicy(ctx, policyNames[i], l, client.PolicyOptions{Description: "examples/gateway"}); err != nil {
			return fmt.Errorf("RL.POLICY SET %s: %w", policyNames[i], err)
		}
	}
	return nil
}

// limits are the user's, the route's and the global limit, on their keys.
func (g *gateway) limits(user, route string) []client.Limit {
	return []client.Limit{
		client.Token("gw:user:"+user, client.Per(g.l.user, g.l.userWin), g.l.user),
		client.Sliding("gw:route:"+route, g.l.route, g.l.routeWin),
		client.Token("gw:global", client.Per(g.l.global, g.l.globalWin), g.l.global),
	}
}

// handler applies the three limits in front of next.
func (g *gateway) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user := r.Header.Get("X-User")
		if user == "" {
			httplimit.WriteProblem(w, httplimit.Problem{Type: "about:blank", Status: 401, Title: "Unauthorized", Detail: "no X-User"})
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 50*time.Millisecond)
		defer cancel()
		decisions, err := g.decide(ctx, user, r.URL.Path)
		if err != nil {
			// Fail open: the API stays up while its limiter is down; say so in the log.
			g.log.Warn("no rate-limit decision, serving anyway", "err", err)
			next.ServeHTTP(w, r)
			return
		}
		httplimit.SetHeaders(w.Header(), httplimit.HeaderOptions{}, time.Now(), decisions...)
		for _, d := range decisions {
			if d.Never() {
				httplimit.WriteForbidden(w, 0, d)
				return
			}
			if !d.Allowed {
				httplimit.WriteTooManyRequests(w, 0, decisions...)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// decide takes one request from the user's, the route's and the global limit at once.
func (g *gateway) decide(ctx context.Context, user, route string) ([]httplimit.Decision, error) {
	var res client.AllResult
	var err error
	names := []string{"user", "route", "global"}
	lims := g.limits(user, route)
	if g.policies {
		res, err = g.c.CheckAll(ctx, 1, client.Policy(policyNames[0], user), client.Policy(policyNames[1], route),
			client.Policy(policyNames[2], "all"))
	} else {
		res, err = g.c.All(ctx, 1, lims...)
	}
	if err != nil {
		return nil, err
	}
	ds := make([]httplimit.Decision, len(res.Results))
	for i, r := range res.Results {
		ds[i] = httplimit.Decision{Name: names[i], Quota: lims[i].Quota(), Window: lims[i].Window(), Result: r}
	}
	return ds, nil
}
