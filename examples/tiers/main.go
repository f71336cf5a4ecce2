// Command tiers is an API whose clients present an API key and get the limit of their tier:
// free or pro, each a token bucket per key in sluice; an override gives one key a limit of its
// own in place of its tier's; internal clients are not limited at all; a prohibited key and a
// key the table does not know get 403, and a request without a key 401. Every limited
// response, admitted or not, carries the RateLimit and RateLimit-Policy fields (and, with -x,
// the X-RateLimit trio); a refused one gets 429 with Retry-After and a problem naming the tier.
//
// Free keys fail closed when sluice cannot decide (503: the free tier is what abuse comes
// through) and pro keys fail open (a paying client is served through a limiter outage); either
// way a decision takes at most -timeout.
//
//	go run ./examples/tiers -addr 127.0.0.1:6380 -listen 127.0.0.1:8081 \
//	    -key k-free=free -key k-pro=pro -key k-ops=internal -key k-gone=deny -override k-big=100
//	curl -i -H 'X-API-Key: k-free' http://127.0.0.1:8081/things
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

// The tiers a key can be in.
const (
	tierFree     = "free"
	tierPro      = "pro"
	tierInternal = "internal" // not limited
	tierDeny     = "deny"     // refused with 403
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
	fs.Var(cfg.overrides, "override", "an API key and its own quota per -window: key=N (repeatable; the key need not be in a tier)")
	fs.Int64Var(&cfg.free, "free", 60, "requests per -window for each free key")
	fs.Int64Var(&cfg.pro, "pro", 600, "requests per -window for each pro key")
	fs.DurationVar(&cfg.window, "window", time.Minute, "the tiers' window: a key may burst its whole quota, which refills over it")
	fs.DurationVar(&cfg.timeout, "timeout", 5*time.Millisecond, "the longest a decision may take")
	fs.BoolVar(&cfg.x, "x", false, "add X-RateLimit-Limit, -Remaining and -Reset (seconds until the reset)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rdb := redis.NewClient(&redis.Options{Addr: *addr, MaxRetries: -1, ContextTimeoutEnabled: true})
	defer rdb.Close()
	h, err := newAPI(client.New(rdb), cfg, http.HandlerFunc(things))
	if err != nil {
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

// api sends each request to its key's limiter.
type api struct {
	keys     map[string]string       // API key → tier
	limiters map[string]http.Handler // tier name, or "override:<key>" → next behind its limiter
	next     http.Handler
}

// newAPI builds one limiter per tier and one per override, all sharing c.
func newAPI(c *client.Client, cfg config, next http.Handler) (*api, error) {
	a := &api{keys: map[string]string{}, limiters: map[string]http.Handler{}, next: next}
	for k, tier := range cfg.keys {
		switch tier {
		case tierFree, tierPro, tierInternal, tierDeny:
			a.keys[k] = tier
		default:
			return nil, fmt.Errorf("-key %s=%s: the tiers are free, pro, internal and deny", k, tier)
		}
	}
	headers := httplimit.HeaderOptions{}
	if cfg.x {
		headers.XRateLimit = httplimit.XRateLimitResetSeconds
	}
	add := func(name, prefix string, quota int64, onError httplimit.ErrorMode) error {
		l, err := httplimit.New(c, httplimit.Options{
			Key:     httplimit.Header("X-API-Key"),
			Limit:   client.Token(prefix, client.Per(quota, cfg.window), quota),
			Name:    name,
			OnError: onError,
			Timeout: cfg.timeout,
			Headers: headers,
		})
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		a.limiters[name] = l.Handler(next)
		return nil
	}
	if err := add(tierFree, "tier:free:", cfg.free, httplimit.FailClosed); err != nil {
		return nil, err
	}
	if err := add(tierPro, "tier:pro:", cfg.pro, httplimit.FailOpen); err != nil {
		return nil, err
	}
	for k, v := range cfg.overrides {
		quota, err := strconv.ParseInt(v, 10, 64)
		if err != nil || quota <= 0 {
			return nil, fmt.Errorf("-override %s=%s: the quota is a positive integer", k, v)
		}
		// The override's own bucket: its key is not a tier's, so a change of quota starts afresh.
		name := "override:" + k
		if err := add(name, "override:"+v+":", quota, httplimit.FailOpen); err != nil {
			return nil, err
		}
		a.keys[k] = name
	}
	return a, nil
}

func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("X-API-Key")
	if key == "" {
		w.Header().Set("WWW-Authenticate", `ApiKey header="X-API-Key"`)
		httplimit.WriteProblem(w, httplimit.Problem{Type: "about:blank", Status: http.StatusUnauthorized,
			Title: http.StatusText(http.StatusUnauthorized), Detail: "no X-API-Key"})
		return
	}
	tier, known := a.keys[key]
	switch {
	case !known:
		httplimit.WriteProblem(w, httplimit.Problem{Type: "about:blank", Status: http.StatusForbidden,
			Title: http.StatusText(http.StatusForbidden), Detail: "unknown API key"})
	case tier == tierDeny:
		httplimit.WriteForbidden(w, http.StatusForbidden, httplimit.Decision{Name: tierDeny})
	case tier == tierInternal:
		a.next.ServeHTTP(w, r)
	default:
		a.limiters[tier].ServeHTTP(w, r)
	}
}
