package httplimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-rl/sluice/client"
)

// ErrorMode is what a request gets when no decision can be had: sluice is down, slow past the
// timeout, or failing, or the breaker is open.
type ErrorMode uint8

const (
	// FailOpen serves the request as if admitted, without rate-limit fields.
	FailOpen ErrorMode = iota + 1
	// FailClosed refuses it: 503 with Retry-After and a problem body.
	FailClosed
)

// Options configure a Limiter. Key, OnError, and one of Limit, Policy and PolicyOf are required.
type Options struct {
	// Key returns a request's key (RemoteIP(), Header("X-API-Key"), User …).
	Key KeyFunc
	// Limit is the limit each key gets; its key is a prefix for the request's key
	// (client.Token("api:", client.PerSecond(10), 20) limits "api:<key>").
	Limit client.Limit
	// Policy is a server policy to check each key under instead (RL.CHECK policy key): the
	// limits, tiers and overrides then live in sluice. Give the client named replies
	// (client.NamedReplies) for the policy's quota in RateLimit-Policy and its mode.
	Policy string
	// PolicyOf chooses each request's server policy instead of one Policy for all (the tier of
	// an API key): it gets the request and its key, and the key is checked under the policy it
	// returns. An error refuses the request with ForbiddenStatus and a problem whose detail is
	// the error's text (the unknown key of a quota table); no decision is asked for.
	PolicyOf func(r *http.Request, key string) (string, error)
	// Name is the policy's name in the response fields (default: the policy checked, or
	// "default" for a Limit).
	Name string
	// Cost returns a request's cost in units (default 1).
	Cost func(*http.Request) int64
	// OnError chooses fail-open or fail-closed; there is no default, it must be chosen.
	OnError ErrorMode
	// Timeout bounds each decision (default 5ms), whatever the go-redis client's own timeouts:
	// a sluice outage costs a request at most this.
	Timeout time.Duration
	// Breaker configures the circuit breaker (defaults: 5 failures, 1s).
	Breaker Breaker
	// Headers choose the response fields; the IETF fields are on by default.
	Headers HeaderOptions
	// DeniedStatus is the status of a request over its limit (default 429).
	DeniedStatus int
	// ForbiddenStatus is the status of a request that can never be admitted: a DENY override,
	// a prohibited key, a cost above the limit (default 403).
	ForbiddenStatus int
	// NoKey answers requests whose key function fails (default: 400 with a problem body).
	NoKey http.Handler
	// Logger receives failures, at most one line per LogEvery (default 10s) with the count of
	// those not logged; default slog.Default().
	Logger   *slog.Logger
	LogEvery time.Duration
	// Now is the clock for the breaker and X-RateLimit-Reset's epoch form (default time.Now).
	Now func() time.Time
}

// Stats counts what a Limiter did. Each counter only grows.
type Stats struct {
	Allowed   int64 // admitted by a decision
	Denied    int64 // refused with DeniedStatus
	Forbidden int64 // refused with ForbiddenStatus
	NoKey     int64 // answered by NoKey
	Failures  int64 // decisions that failed (errors and timeouts)
	Timeouts  int64 // of Failures, those that ran out of time
	Skipped   int64 // decisions not asked for: the breaker was open
	FailOpen  int64 // requests served without a decision
	FailClose int64 // requests refused for want of a decision
	Trips     int64 // times the breaker opened
	Breaker   BreakerState
}

// Limiter is the middleware. It is safe for concurrent use.
type Limiter struct {
	c       *client.Client
	o       Options
	inline  bool // the go-redis client ends a call at its context's deadline by itself
	breaker breaker

	allowed, denied, forbidden, noKey, failures, timeouts, skipped, failOpen, failClose atomic.Int64

	logMu    sync.Mutex
	lastLog  time.Time
	unlogged int64
}

// New returns a Limiter that decides with c as o says.
func New(c *client.Client, o Options) (*Limiter, error) {
	switch {
	case c == nil:
		return nil, errors.New("httplimit: no client")
	case o.Key == nil:
		return nil, errors.New("httplimit: Options.Key is required")
	case o.OnError != FailOpen && o.OnError != FailClosed:
		return nil, errors.New("httplimit: Options.OnError must be FailOpen or FailClosed")
	case btoi(o.Policy != "")+btoi(o.PolicyOf != nil)+btoi(o.Limit.Algorithm() != 0) != 1:
		return nil, errors.New("httplimit: give one of Options.Limit, Options.Policy and Options.PolicyOf")
	case o.Limit.Algorithm() == client.AlgoPolicy:
		return nil, errors.New("httplimit: a policy goes in Options.Policy")
	case o.Limit.Algorithm() != 0 && !o.Limit.Valid():
		return nil, fmt.Errorf("httplimit: invalid Options.Limit (%v, quota %d, rate %v, window %v)",
			o.Limit.Algorithm(), o.Limit.Quota(), o.Limit.Rate(), o.Limit.Window())
	}
	if o.Name == "" && o.Limit.Algorithm() != 0 {
		o.Name = "default"
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Millisecond
	}
	if o.Breaker.Failures <= 0 {
		o.Breaker.Failures = 5
	}
	if o.Breaker.Cooldown <= 0 {
		o.Breaker.Cooldown = time.Second
	}
	if o.DeniedStatus == 0 {
		o.DeniedStatus = http.StatusTooManyRequests
	}
	if o.ForbiddenStatus == 0 {
		o.ForbiddenStatus = http.StatusForbidden
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.LogEvery <= 0 {
		o.LogEvery = 10 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.NoKey == nil {
		o.NoKey = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			WriteProblem(w, Problem{Type: "about:blank", Status: http.StatusBadRequest,
				Title: http.StatusText(http.StatusBadRequest), Detail: "the request carries no rate-limit key"})
		})
	}
	l := &Limiter{c: c, o: o, breaker: breaker{threshold: o.Breaker.Failures, cooldown: o.Breaker.Cooldown, now: o.Now}}
	if rdb, ok := c.Redis().(*redis.Client); ok && rdb.Options().ContextTimeoutEnabled {
		l.inline = true
	}
	return l, nil
}

// Handler returns next behind the limiter.
func (l *Limiter) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { l.serve(w, r, next) })
}

// Stats returns the counters.
func (l *Limiter) Stats() Stats {
	state, trips := l.breaker.state()
	return Stats{Allowed: l.allowed.Load(), Denied: l.denied.Load(), Forbidden: l.forbidden.Load(),
		NoKey: l.noKey.Load(), Failures: l.failures.Load(), Timeouts: l.timeouts.Load(),
		Skipped: l.skipped.Load(), FailOpen: l.failOpen.Load(), FailClose: l.failClose.Load(),
		Trips: trips, Breaker: state}
}

func (l *Limiter) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	key, err := l.o.Key(r)
	if err != nil || key == "" {
		l.noKey.Add(1)
		l.o.NoKey.ServeHTTP(w, r)
		return
	}
	policy := l.o.Policy
	if l.o.PolicyOf != nil {
		if policy, err = l.o.PolicyOf(r, key); err != nil || policy == "" {
			l.forbidden.Add(1)
			detail := "no rate-limit policy for this client"
			if err != nil {
				detail = err.Error()
			}
			status := l.o.ForbiddenStatus
			WriteProblem(w, Problem{Type: "about:blank", Status: status, Title: http.StatusText(status), Detail: detail})
			return
		}
	}
	n := int64(1)
	if l.o.Cost != nil {
		n = l.o.Cost(r)
	}
	if !l.breaker.allow() {
		l.skipped.Add(1)
		l.fail(w, r, next, errBreakerOpen)
		return
	}
	res, err := l.decide(r.Context(), policy, key, n)
	l.breaker.report(err == nil || refused(err))
	if err != nil {
		l.failures.Add(1)
		if errors.Is(err, context.DeadlineExceeded) {
			l.timeouts.Add(1)
		}
		l.logFailure(err)
		l.fail(w, r, next, err)
		return
	}
	if res.Mode == client.ModeUnlimited { // an UNLIMITED override: not limited, so no fields
		l.allowed.Add(1)
		next.ServeHTTP(w, r)
		return
	}
	d := Decision{Name: l.o.Name, Quota: l.o.Limit.Quota(), Window: l.o.Limit.Window(), Result: res}
	if d.Name == "" {
		d.Name = policy
	}
	if policy != "" {
		d.Quota, d.Window = res.Quota, res.Window
		if d.Quota == 0 { // a positional reply: the policy's limit is what we know
			d.Quota = res.Limit
		}
	}
	SetHeaders(w.Header(), l.o.Headers, l.o.Now(), d)
	switch {
	case res.Allowed:
		l.allowed.Add(1)
		next.ServeHTTP(w, r)
	case res.Never() || res.Mode == client.ModeDeny:
		l.forbidden.Add(1)
		WriteForbidden(w, l.o.ForbiddenStatus, d)
	default:
		l.denied.Add(1)
		WriteTooManyRequests(w, l.o.DeniedStatus, d)
	}
}

var errBreakerOpen = errors.New("httplimit: circuit breaker open")

// refused reports whether err is sluice refusing this request (an unknown policy, a key of
// another type, a bad argument) rather than failing to decide: sluice answered, so the breaker
// does not count it against sluice. The request still fails as OnError says.
func refused(err error) bool {
	var se *client.ServerError
	return errors.As(err, &se) && (se.Kind == client.ErrNoSuchPolicy || se.Kind == client.ErrWrongType || se.Kind == client.ErrServer)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// isTimeout reports whether err is a context's deadline or a network timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// decide asks for a decision, taking at most the timeout. When the go-redis client does not end
// calls at their context's deadline by itself (ContextTimeoutEnabled unset), the call runs in a
// goroutine of its own that is abandoned at the deadline: it ends at go-redis's ReadTimeout, and
// the breaker keeps such calls few.
func (l *Limiter) decide(ctx context.Context, policy, key string, n int64) (client.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, l.o.Timeout)
	defer cancel()
	call := func(ctx context.Context) (client.Result, error) {
		if policy != "" {
			return l.c.Check(ctx, policy, key, n)
		}
		return l.c.Decide(ctx, l.o.Limit.WithKey(l.o.Limit.Key()+key), n)
	}
	if l.inline {
		r, err := call(ctx)
		if isTimeout(err) { // go-redis reports the deadline as its own i/o timeout
			err = fmt.Errorf("httplimit: no decision within %v: %w (%w)", l.o.Timeout, context.DeadlineExceeded, err)
		}
		return r, err
	}
	type outcome struct {
		r   client.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		r, err := call(ctx)
		done <- outcome{r, err}
	}()
	select {
	case o := <-done:
		return o.r, o.err
	case <-ctx.Done():
		return client.Result{}, fmt.Errorf("httplimit: no decision within %v: %w", l.o.Timeout, ctx.Err())
	}
}

// fail handles a request without a decision, as OnError says.
func (l *Limiter) fail(w http.ResponseWriter, r *http.Request, next http.Handler, err error) {
	if l.o.OnError == FailOpen {
		l.failOpen.Add(1)
		next.ServeHTTP(w, r)
		return
	}
	l.failClose.Add(1)
	w.Header().Set("Retry-After", fmt.Sprint(max(ceilSeconds(l.o.Breaker.Cooldown), 1)))
	WriteProblem(w, Problem{Type: "about:blank", Status: http.StatusServiceUnavailable,
		Title: http.StatusText(http.StatusServiceUnavailable), Detail: "the rate limiter is unavailable"})
}

// logFailure logs err unless a line was logged less than LogEvery ago; the next line says how
// many were not logged.
func (l *Limiter) logFailure(err error) {
	l.logMu.Lock()
	now := l.o.Now()
	if !l.lastLog.IsZero() && now.Sub(l.lastLog) < l.o.LogEvery {
		l.unlogged++
		l.logMu.Unlock()
		return
	}
	unlogged := l.unlogged
	l.lastLog, l.unlogged = now, 0
	l.logMu.Unlock()
	state, _ := l.breaker.state()
	mode := "fail-open"
	if l.o.OnError == FailClosed {
		mode = "fail-closed"
	}
	l.o.Logger.Warn("sluice rate-limit decision failed", "err", err, "on_error", mode,
		"not_logged_since_last", unlogged, "failures", l.failures.Load(), "breaker", state.String())
}
