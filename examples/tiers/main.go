// Command tiers is an API whose clients present an API key and get the limit of their tier,
// with the limits kept in sluice as server policies and overrides:
//
//   - the tiers are the policies free and pro (RL.POLICY SET free TOKEN …), a token bucket per
//     key that holds the tier's quota and refills it over -window;
//   - an internal key is in the pro tier with an UNLIMITED override (RL.OVERRIDE SET pro <key>
//     UNLIMITED): never limited, served without rate-limit fields;
//   - a prohibited key is in the free tier with a DENY override: 403;
//   - -override gives one key a quota of its own in its tier (RL.OVERRIDE SET free <key> TOKEN …).
//
// One middleware serves every key: it checks each request under the policy of its key's tier
// (httplimit.Options.PolicyOf), so an operator changes a tier's limit or a key's override in
// sluice (redis-cli RL.POLICY SET, RL.OVERRIDE SET/DEL) and the next request sees it, with no
// redeploy. A key the table does not know gets 403, a request without a key 401. Limited
// responses, admitted or not, carry RateLimit and RateLimit-Policy (and with -x the X-RateLimit
// trio); a refused one gets 429 with Retry-After and a problem naming the tier. When sluice
// cannot decide within -timeout, requests fail as -on-error says (503 when closed).
//
//	go run ./examples/tiers -addr 127.0.0.1:6380 -listen 127.0.0.1:8081 \
//	    -key k-free=free -key k-pro=pro -key k-ops=internal -key k-gone=deny -override k-big=100
//	curl -i -H 'X-API-Key: k-free' http://127.0.0.1:8081/things
//	redis-cli -p 6380 RL.OVERRIDE SET free k-free DENY     # k-free now gets 403
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-rl/sluice/client"
	"github.com/sluice-rl/sluice/client/httplimit"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, nil); err != nil {
		fmt.Fprintln(os.Stderr, "tiers:", err)
		os.Exit(1)
	}
}

// The tiers a key can be given with -key.
const (
	tierFree     = "free"     // the policy free
	tierPro      = "pro"      // the policy pro
	tierInternal = "internal" // pro, with an UNLIMITED override
	tierDeny     = "deny"     // free, with a DENY override
)

// pairs is a repeatable name=value flag.
type pairs map[string]string

func (p pairs) String() string { return fmt.Sprint(map[string]string(p)) }

func (p pairs) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" || v == "" {
		return fmt.Errorf("%q is not name=value", s)
	}
	p[k] = v
	return nil
}

// config is the key table and the tiers' limits.
type config struct {
	keys      pairs // API key → tier
	overrides pairs // API key → its own quota per -window
	free, pro int64
	window    time.Duration
	timeout   time.Duration
	onError   string
	x         bool
}

// run serves until ctx ends; ready, if not nil, receives the address once it listens.
func run(ctx context.Context, args []string, out io.Writer, ready chan<- string) error {
	cfg := config{keys: pairs{}, overrides: pairs{}}
	fs := flag.NewFlagSet("tiers", flag.ContinueOnError)
	fs.SetOutput(out)
	addr := fs.String("addr", "127.0.0.1:6380", "sluice's address")
	listen := fs.String("listen", "127.0.0.1:8081", "the API's address")
	fs.Var(cfg.keys, "key", "an API key and its tier: key=free|pro|internal|deny (repeatable)")
	fs.Var(cfg.overrides, "override", "an API key and its own quota per -window in its tier: key=N (repeatable; a key not in -key is free)")
	fs.Int64Var(&cfg.free, "free", 60, "requests per -window for each free key")
	fs.Int64Var(&cfg.pro, "pro", 600, "requests per -window for each pro key")
	fs.DurationVar(&cfg.window, "window", time.Minute, "the tiers' window: a key may burst its whole quota, which refills over it")
	fs.DurationVar(&cfg.timeout, "timeout", 5*time.Millisecond, "the longest a decision may take")
	fs.StringVar(&cfg.onError, "on-error", "closed", "without a decision: closed (503) or open (serve)")
	fs.BoolVar(&cfg.x, "x", false, "add X-RateLimit-Limit, -Remaining and -Reset (seconds until the reset)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	// Named replies carry each check's quota and window (RateLimit-Policy) and its mode
	// (an UNLIMITED override is served without fields).
	rdb := redis.NewClient(&redis.Options{Addr: *addr, MaxRetries: -1, ContextTimeoutEnabled: true, OnConnect: client.NamedReplies})
	defer rdb.Close()
	c := client.New(rdb)
	a, err := newAPI(cfg)
	if err != nil {
		return err
	}
	h, err := a.handler(c, cfg, http.HandlerFunc(things))
	if err != nil {
		return err
	}
	if err := a.define(ctx, c, cfg); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	fmt.Fprintf(out, "API on http://%s\n", ln.Addr())
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

// things stands for the API itself.
func things(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "%s served\n", r.URL.Path) }

// api is the key table: each key's policy, and the overrides to set in sluice.
type api struct {
	policy    map[string]string // API key → the policy it is checked under
	overrides map[string]client.Override
}

// newAPI reads the key table and the overrides of cfg.
func newAPI(cfg config) (*api, error) {
	a := &api{policy: map[string]string{}, overrides: map[string]client.Override{}}
	for k, tier := range cfg.keys {
		switch tier {
		case tierFree, tierPro:
			a.policy[k] = tier
		case tierInternal:
			a.policy[k], a.overrides[k] = tierPro, client.Unlimited()
		case tierDeny:
			a.policy[k], a.overrides[k] = tierFree, client.Deny()
		default:
			return nil, fmt.Errorf("-key %s=%s: the tiers are free, pro, internal and deny", k, tier)
		}
	}
	for k, v := range cfg.overrides {
		quota, err := strconv.ParseInt(v, 10, 64)
		if err != nil || quota <= 0 {
			return nil, fmt.Errorf("-override %s=%s: the quota is a positive integer", k, v)
		}
		if _, ok := a.policy[k]; !ok {
			a.policy[k] = tierFree
		}
		a.overrides[k] = client.OwnLimit(client.Token("", client.Per(quota, cfg.window), quota))
	}
	return a, nil
}

// define puts the tiers in sluice as policies and the keys' exceptions as overrides, replacing
// those of an earlier run. An operator may change both while the API runs.
func (a *api) define(ctx context.Context, c *client.Client, cfg config) error {
	for tier, quota := range map[string]int64{tierFree: cfg.free, tierPro: cfg.pro} {
		l := client.Token("", client.Per(quota, cfg.window), quota)
		if err := c.SetPolicy(ctx, tier, l, client.PolicyOptions{Description: "examples/tiers: the " + tier + " tier"}); err != nil {
			return fmt.Errorf("RL.POLICY SET %s: %w", tier, err)
		}
	}
	for k, o := range a.overrides {
		if err := c.SetOverride(ctx, a.policy[k], k, o); err != nil {
			return fmt.Errorf("RL.OVERRIDE SET %s %s: %w", a.policy[k], k, err)
		}
	}
	return nil
}

// errUnknownKey refuses a key the table does not have (403).
var errUnknownKey = errors.New("unknown API key")

// handler returns next behind one limiter that checks each key under its tier's policy.
func (a *api) handler(c *client.Client, cfg config, next http.Handler) (http.Handler, error) {
	o := httplimit.Options{
		Key: httplimit.Header("X-API-Key"),
		PolicyOf: func(_ *http.Request, key string) (string, error) {
			if p, ok := a.policy[key]; ok {
				return p, nil
			}
			return "", errUnknownKey
		},
		Timeout: cfg.timeout,
		NoKey: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("WWW-Authenticate", `ApiKey header="X-API-Key"`)
			httplimit.WriteProblem(w, httplimit.Problem{Type: "about:blank", Status: http.StatusUnauthorized,
				Title: http.StatusText(http.StatusUnauthorized), Detail: "no X-API-Key"})
		}),
	}
	switch cfg.onError {
	case "closed":
		o.OnError = httplimit.FailClosed
	case "open":
		o.OnError = httplimit.FailOpen
	default:
		return nil, fmt.Errorf("-on-error %s: closed or open", cfg.onError)
	}
	if cfg.x {
		o.Headers.XRateLimit = httplimit.XRateLimitResetSeconds
	}
	l, err := httplimit.New(c, o)
	if err != nil {
		return nil, err
	}
	return l.Handler(next), nil
}
