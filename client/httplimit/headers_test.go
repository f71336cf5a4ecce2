package httplimit

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/client"
)

func TestSetHeadersWritesTheDraftsFields(t *testing.T) {
	now := time.Unix(1800000000, 0)
	user := Decision{Name: "per-user", Quota: 10, Window: time.Second,
		Result: client.Result{Allowed: true, Limit: 10, Remaining: 7, ResetAfter: 300 * time.Millisecond}}
	day := Decision{Name: `da"y\`, Quota: 1000, Window: 24 * time.Hour,
		Result: client.Result{Allowed: true, Limit: 1000, Remaining: 3, ResetAfter: 5*time.Hour + time.Millisecond}}
	jobs := Decision{Name: "jobs", Quota: 5, ConcurrentRequests: true,
		Result: client.Result{Allowed: true, Limit: 5, Remaining: 4, ResetAfter: 30 * time.Second}}
	h := http.Header{}
	SetHeaders(h, HeaderOptions{XRateLimit: XRateLimitResetSeconds}, now, user, day, jobs)
	for field, want := range map[string]string{
		"RateLimit-Policy":      `"per-user";q=10;w=1, "da\"y\\";q=1000;w=86400, "jobs";q=5;qu="concurrent-requests"`,
		"RateLimit":             `"per-user";r=7;t=1, "da\"y\\";r=3;t=18001, "jobs";r=4;t=30`,
		"X-RateLimit-Limit":     "1000", // the least remaining
		"X-RateLimit-Remaining": "3",
		"X-RateLimit-Reset":     "18001",
	} {
		if got := h.Get(field); got != want {
			t.Errorf("%s: %s; want %s", field, got, want)
		}
	}
	h = http.Header{}
	user.Allowed, user.Remaining = false, 0
	SetHeaders(h, HeaderOptions{NoIETF: true, XRateLimit: XRateLimitResetEpoch}, now, day, user)
	if h.Get("RateLimit") != "" || h.Get("X-RateLimit-Limit") != "10" || h.Get("X-RateLimit-Reset") != "1800000001" {
		t.Errorf("epoch trio of the denying decision: %v", h)
	}
}

func TestWriteTooManyRequestsRoundsRetryAfterUp(t *testing.T) {
	for _, tc := range []struct {
		retry time.Duration
		want  string
	}{{90 * time.Millisecond, "1"}, {time.Second, "1"}, {1001 * time.Millisecond, "2"}, {0, "1"}} {
		w := httptest.NewRecorder()
		WriteTooManyRequests(w, 0, Decision{Name: "free", Result: client.Result{RetryAfter: tc.retry}})
		if w.Code != 429 || w.Header().Get("Retry-After") != tc.want {
			t.Errorf("RetryAfter %v: %d, Retry-After %q; want 429, %q", tc.retry, w.Code, w.Header().Get("Retry-After"), tc.want)
		}
	}
	w := httptest.NewRecorder()
	WriteTooManyRequests(w, 0, Decision{Name: "a", Result: client.Result{Allowed: true}},
		Decision{Name: "b", Result: client.Result{RetryAfter: 2500 * time.Millisecond}})
	var p Problem
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || w.Header().Get("Content-Type") != "application/problem+json" ||
		p.Type != QuotaExceeded || p.Status != 429 || len(p.ViolatedPolicies) != 1 || p.ViolatedPolicies[0] != "b" ||
		w.Header().Get("Retry-After") != "3" {
		t.Errorf("problem %+v (%v), headers %v", p, err, w.Header())
	}
	w = httptest.NewRecorder()
	WriteForbidden(w, 0, Decision{Name: "free"})
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || w.Code != 403 || p.Status != 403 || p.ViolatedPolicies[0] != "free" {
		t.Errorf("forbidden: %d %s", w.Code, w.Body)
	}
}

func TestBreakerOpensAfterFailuresAndProbesAfterCooldown(t *testing.T) {
	now := time.Unix(0, 0)
	b := breaker{threshold: 3, cooldown: time.Second, now: func() time.Time { return now }}
	for i := 0; i < 2; i++ {
		if !b.allow() {
			t.Fatal("closed breaker refused")
		}
		b.report(false)
	}
	b.report(true) // a success resets the count
	for i := 0; i < 3; i++ {
		b.allow()
		b.report(false)
	}
	if s, trips := b.state(); s != BreakerOpen || trips != 1 || b.allow() {
		t.Fatalf("after 3 failures: %v, trips %d", s, trips)
	}
	now = now.Add(time.Second)
	if !b.allow() || b.allow() {
		t.Fatal("after the cooldown: want one probe, and only one")
	}
	if s, _ := b.state(); s != BreakerHalfOpen {
		t.Fatalf("state %v; want half-open", s)
	}
	b.report(false) // the probe failed: open again
	if s, trips := b.state(); s != BreakerOpen || trips != 1 || b.allow() {
		t.Fatalf("after a failed probe: %v, trips %d", s, trips)
	}
	now = now.Add(time.Second)
	b.allow()
	b.report(true)
	if s, _ := b.state(); s != BreakerClosed || !b.allow() {
		t.Fatalf("after a good probe: %v", s)
	}
}
