package httplimit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-rl/sluice/client"
	"github.com/sluice-rl/sluice/client/sluicetest"
)

// The middleware in front of a real handler (httptest) and a real sluice process: the response
// fields and status codes, and what requests see while sluice is killed or stopped.

const t0ms = 1800000000000 // 2027-01-15 08:00:00 UTC

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })

// serve starts the middleware over okHandler on 127.0.0.1.
func serve(t *testing.T, c *client.Client, o Options) (*Limiter, *httptest.Server) {
	t.Helper()
	l, err := New(c, o)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(l.Handler(okHandler))
	t.Cleanup(ts.Close)
	return l, ts
}

func get(t *testing.T, url string, header ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func frozenServer(t *testing.T) (*sluicetest.Server, *redis.Client) {
	srv := sluicetest.Start(t, "--enable-debug-command", "yes")
	rdb := srv.Client(3)
	if err := rdb.Do(context.Background(), "DEBUG", "CLOCK", "SET", t0ms).Err(); err != nil {
		t.Fatal(err)
	}
	return srv, rdb
}

func TestMiddlewareSendsTheFieldsThen429WithRetryAfterAndAProblem(t *testing.T) {
	_, rdb := frozenServer(t)
	_, ts := serve(t, client.New(rdb), Options{Key: Header("X-API-Key"), OnError: FailClosed, Timeout: time.Second,
		Limit: client.Fixed("api:", 3, time.Minute), Name: "per-key",
		Headers: HeaderOptions{XRateLimit: XRateLimitResetSeconds}})
	for i := 1; i <= 3; i++ {
		resp := get(t, ts.URL, "X-API-Key", "k1")
		if resp.StatusCode != 200 || resp.Header.Get("RateLimit") != fmt.Sprintf(`"per-key";r=%d;t=60`, 3-i) ||
			resp.Header.Get("RateLimit-Policy") != `"per-key";q=3;w=60` || resp.Header.Get("X-RateLimit-Remaining") != fmt.Sprint(3-i) ||
			resp.Header.Get("X-RateLimit-Reset") != "60" || resp.Header.Get("X-RateLimit-Limit") != "3" {
			t.Fatalf("request %d: %d %v", i, resp.StatusCode, resp.Header)
		}
	}
	req, _ := http.NewRequest("GET", ts.URL, nil)
	req.Header.Set("X-API-Key", "k1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var p Problem
	json.NewDecoder(resp.Body).Decode(&p)
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "60" || resp.Header.Get("RateLimit") != `"per-key";r=0;t=60` ||
		resp.Header.Get("Content-Type") != "application/problem+json" || p.Type != QuotaExceeded ||
		len(p.ViolatedPolicies) != 1 || p.ViolatedPolicies[0] != "per-key" {
		t.Fatalf("4th request: %d %v %+v", resp.StatusCode, resp.Header, p)
	}
	// Another key has its own limit; a request without a key gets 400.
	if resp := get(t, ts.URL, "X-API-Key", "k2"); resp.StatusCode != 200 {
		t.Fatalf("another key: %d", resp.StatusCode)
	}
	if resp := get(t, ts.URL); resp.StatusCode != 400 || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("no key: %d", resp.StatusCode)
	}
}

func TestMiddlewareTokenBucketPolicyAndEpochReset(t *testing.T) {
	_, rdb := frozenServer(t)
	now := time.UnixMilli(t0ms)
	l, ts := serve(t, client.New(rdb), Options{Key: RemoteIP(), OnError: FailOpen, Timeout: time.Second,
		Limit: client.Token("ip:", client.PerSecond(10), 20), Now: func() time.Time { return now },
		Headers: HeaderOptions{XRateLimit: XRateLimitResetEpoch}})
	resp := get(t, ts.URL)
	// 20 tokens at 10 a second: the policy is 20 per 2 s; one taken refills in 100 ms.
	if resp.StatusCode != 200 || resp.Header.Get("RateLimit-Policy") != `"default";q=20;w=2` ||
		resp.Header.Get("RateLimit") != `"default";r=19;t=1` || resp.Header.Get("X-RateLimit-Reset") != "1800000001" {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	if s := l.Stats(); s.Allowed != 1 || s.Failures != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestMiddlewareRefusesWhatCanNeverBeAdmittedWith403(t *testing.T) {
	_, rdb := frozenServer(t)
	l, ts := serve(t, client.New(rdb), Options{Key: Header("X-API-Key"), OnError: FailClosed, Timeout: time.Second,
		Limit: client.Token("api:", client.PerSecond(1), 5), Cost: func(*http.Request) int64 { return 10 }})
	if resp := get(t, ts.URL, "X-API-Key", "k"); resp.StatusCode != 403 || resp.Header.Get("Retry-After") != "" {
		t.Fatalf("a cost above the limit: %d %v", resp.StatusCode, resp.Header)
	}
	if s := l.Stats(); s.Forbidden != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// logLines counts what the limiter logs.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, string(p))
	return len(p), nil
}

func (l *logLines) count() int { l.mu.Lock(); defer l.mu.Unlock(); return len(l.lines) }

// Sluice is killed mid-test. Fail-open serves every request (without fields), fail-closed
// refuses with 503; the breaker opens after 3 failures and skips sluice; failures are logged
// once per LogEvery. When sluice is back, the breaker's probe closes it and limiting resumes.
func TestMiddlewareFailsOpenOrClosedWhenSluiceIsKilled(t *testing.T) {
	for _, mode := range []ErrorMode{FailOpen, FailClosed} {
		t.Run(map[ErrorMode]string{FailOpen: "FailOpen", FailClosed: "FailClosed"}[mode], func(t *testing.T) {
			srv := sluicetest.Start(t)
			rdb := srv.Client(2)
			logs := &logLines{}
			l, ts := serve(t, client.New(rdb), Options{Key: Header("X-API-Key"), OnError: mode, Timeout: 200 * time.Millisecond,
				Limit: client.Fixed("api:", 2, time.Hour), Breaker: Breaker{Failures: 3, Cooldown: 300 * time.Millisecond},
				Logger: slog.New(slog.NewTextHandler(logs, nil)), LogEvery: time.Hour})
			for i := 0; i < 3; i++ {
				get(t, ts.URL, "X-API-Key", "k")
			}
			if resp := get(t, ts.URL, "X-API-Key", "k"); resp.StatusCode != 429 {
				t.Fatalf("before the kill: %d; want 429", resp.StatusCode)
			}
			srv.Kill()
			want := map[ErrorMode]int{FailOpen: 200, FailClosed: 503}[mode]
			for i := 0; i < 10; i++ {
				resp := get(t, ts.URL, "X-API-Key", "k")
				if resp.StatusCode != want || resp.Header.Get("RateLimit") != "" {
					t.Fatalf("request %d with sluice dead: %d %v; want %d without rate-limit fields", i+1, resp.StatusCode, resp.Header, want)
				}
			}
			s := l.Stats()
			if s.Failures != 3 || s.Skipped != 7 || s.Trips != 1 || s.Breaker != BreakerOpen || s.FailOpen+s.FailClose != 10 {
				t.Fatalf("stats with sluice dead: %+v; want 3 failures, then the breaker open for 7", s)
			}
			if logs.count() != 1 {
				t.Fatalf("%d log lines for 3 failures within LogEvery; want 1", logs.count())
			}
			srv.Restart() // empty state (--save 0): the key starts afresh
			time.Sleep(400 * time.Millisecond)
			for i, want := range []int{200, 200, 429} {
				if resp := get(t, ts.URL, "X-API-Key", "k"); resp.StatusCode != want {
					t.Fatalf("request %d after the restart: %d; want %d", i+1, resp.StatusCode, want)
				}
			}
			if s := l.Stats(); s.Breaker != BreakerClosed {
				t.Fatalf("breaker %v after a good probe", s.Breaker)
			}
		})
	}
}

// Sluice is stopped with SIGSTOP: its port still accepts connections but nothing is answered.
// Each request must be answered in about the decision timeout, not go-redis's 3 s ReadTimeout,
// with go-redis honouring contexts or not.
func TestMiddlewareDoesNotStallWhileSluiceIsStopped(t *testing.T) {
	for _, ctxTimeout := range []bool{false, true} {
		t.Run(fmt.Sprintf("ContextTimeoutEnabled=%v", ctxTimeout), func(t *testing.T) {
			srv := sluicetest.Start(t)
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, Protocol: 2, MaxRetries: -1, ContextTimeoutEnabled: ctxTimeout})
			defer rdb.Close()
			const timeout = 20 * time.Millisecond
			l, ts := serve(t, client.New(rdb), Options{Key: Header("X-API-Key"), OnError: FailOpen, Timeout: timeout,
				Limit: client.Token("api:", client.PerSecond(1000), 1000), Breaker: Breaker{Failures: 1000, Cooldown: time.Second},
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			// The first decision dials sluice, which on a loaded machine can outlast the 20 ms
			// timeout and be served open: wait for one decided request before the stop.
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				resp := get(t, ts.URL, "X-API-Key", "k")
				if resp.StatusCode == 200 && resp.Header.Get("RateLimit") != "" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("before the stop: %d %v", resp.StatusCode, resp.Header)
				}
			}
			before := l.Stats()
			srv.Pause()
			defer srv.Resume()
			var took []time.Duration
			for i := 0; i < 20; i++ {
				start := time.Now()
				resp := get(t, ts.URL, "X-API-Key", "k")
				took = append(took, time.Since(start))
				if resp.StatusCode != 200 || resp.Header.Get("RateLimit") != "" {
					t.Fatalf("request %d with sluice stopped: %d %v; want served without a decision", i+1, resp.StatusCode, resp.Header)
				}
			}
			sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
			// Margins for a loaded 2-core machine: the median within 10 × the timeout, the
			// slowest under a second; a stall would last go-redis's ReadTimeout, 3 s.
			t.Logf("with sluice stopped, requests took %v (median) to %v (max); decision timeout %v", took[len(took)/2], took[len(took)-1], timeout)
			if took[len(took)/2] > 10*timeout || took[len(took)-1] > time.Second {
				t.Fatalf("requests took %v", took)
			}
			if s := l.Stats(); s.Timeouts-before.Timeouts != 20 || s.FailOpen-before.FailOpen != 20 {
				t.Fatalf("stats %+v after %+v; want 20 more timeouts served open", s, before)
			}
			srv.Resume()
			deadline := time.Now().Add(10 * time.Second)
			for get(t, ts.URL, "X-API-Key", "k").Header.Get("RateLimit") == "" {
				if time.Now().After(deadline) {
					t.Fatal("decisions did not come back after SIGCONT")
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

func TestNewRefusesIncompleteOptions(t *testing.T) {
	c := client.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}))
	lim := client.Token("k:", client.PerSecond(1), 1)
	for name, o := range map[string]Options{
		"no key":          {OnError: FailOpen, Limit: lim},
		"no OnError":      {Key: User, Limit: lim},
		"neither":         {Key: User, OnError: FailOpen},
		"both":            {Key: User, OnError: FailOpen, Limit: lim, Policy: "free"},
		"policy and func": {Key: User, OnError: FailOpen, Policy: "free", PolicyOf: func(*http.Request, string) (string, error) { return "free", nil }},
		"invalid limit":   {Key: User, OnError: FailOpen, Limit: client.Token("k:", client.PerSecond(0), 1)},
		"policy as limit": {Key: User, OnError: FailOpen, Limit: client.Policy("free", "")},
	} {
		if _, err := New(c, o); err == nil {
			t.Errorf("%s: New accepted %+v", name, o)
		}
	}
}

// Failures are logged at most once per LogEvery; the next line says how many were not.
func TestFailuresAreLoggedAtMostOncePerInterval(t *testing.T) {
	// A socket path nothing listens on: every decision fails at once.
	dead := filepath.Join(t.TempDir(), "nothing.sock")
	rdb := redis.NewClient(&redis.Options{Network: "unix", Addr: dead, MaxRetries: -1})
	defer rdb.Close()
	now := time.Unix(1800000000, 0)
	var mu sync.Mutex
	var buf strings.Builder
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}), nil))
	_, ts := serve(t, client.New(rdb), Options{Key: Header("X-API-Key"), OnError: FailOpen, Timeout: time.Second,
		Limit: client.Token("api:", client.PerSecond(1), 1), Breaker: Breaker{Failures: 1000},
		Logger: logger, LogEvery: 10 * time.Second, Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }})
	for i := 0; i < 5; i++ {
		get(t, ts.URL, "X-API-Key", "k")
	}
	mu.Lock()
	now = now.Add(10 * time.Second)
	mu.Unlock()
	get(t, ts.URL, "X-API-Key", "k")
	mu.Lock()
	defer mu.Unlock()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "not_logged_since_last=0") ||
		!strings.Contains(lines[1], "not_logged_since_last=4") || !strings.Contains(lines[1], "failures=6") {
		t.Fatalf("log:\n%s", buf.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
