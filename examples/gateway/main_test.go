package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/client"
	"github.com/sluice-rl/sluice/client/httplimit"
	"github.com/sluice-rl/sluice/client/sluicetest"
)

// startGateway runs the example against srv with args; it stops when the test ends.
func startGateway(t *testing.T, srv *sluicetest.Server, args ...string) (string, *strings.Builder) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan string, 1), make(chan error, 1)
	var out strings.Builder
	go func() {
		done <- run(ctx, append([]string{"-addr", srv.Addr, "-listen", "127.0.0.1:0"}, args...), &syncWriter{w: &out}, ready)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	select {
	case addr := <-ready:
		return "http://" + addr, &out
	case err := <-done:
		t.Fatalf("gateway did not start: %v", err)
	}
	return "", nil
}

type syncWriter struct{ w io.Writer }

func (s *syncWriter) Write(p []byte) (int, error) { return s.w.Write(p) }

type reply struct {
	status  int
	header  http.Header
	problem httplimit.Problem
}

func call(t *testing.T, base, user, path string) reply {
	t.Helper()
	req, _ := http.NewRequest("GET", base+path, nil)
	req.Header.Set("X-User", user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r reply
	r.status, r.header = resp.StatusCode, resp.Header
	if resp.Header.Get("Content-Type") == "application/problem+json" {
		json.NewDecoder(resp.Body).Decode(&r.problem)
	}
	return r
}

// testGateway: the user's limit (3 an hour here), the route's (5 an hour, all users) and the global one
// (7 an hour) in one atomic call: the refusal names the limit that refused, and a refused
// request is counted nowhere.
func testGateway(t *testing.T, args ...string) *sluicetest.Server {
	srv := sluicetest.Start(t)
	base, _ := startGateway(t, srv, append([]string{"-user", "3", "-user-window", "1h", "-route", "5", "-route-window", "1h",
		"-global", "7", "-global-window", "1h"}, args...)...)
	expect := func(user, path string, status int, violated string) reply {
		t.Helper()
		r := call(t, base, user, path)
		got := ""
		if len(r.problem.ViolatedPolicies) > 0 {
			got = r.problem.ViolatedPolicies[0]
		}
		if r.status != status || got != violated || !strings.Contains(r.header.Get("RateLimit"), `"user";r=`) {
			t.Fatalf("%s %s: %d, violated %q, RateLimit %q; want %d, %q", user, path, r.status, got, r.header.Get("RateLimit"), status, violated)
		}
		return r
	}
	for i := 0; i < 3; i++ {
		expect("alice", "/orders", 200, "")
	}
	r := expect("alice", "/orders", 429, "user")
	if r.header.Get("Retry-After") == "" || r.header.Get("RateLimit-Policy") != `"user";q=3;w=3600, "route";q=5;w=3600, "global";q=7;w=3600` {
		t.Fatalf("429 fields: %v", r.header)
	}
	expect("bob", "/orders", 200, "")
	expect("bob", "/orders", 200, "")
	expect("carol", "/orders", 429, "route") // /orders has had its 5
	expect("carol", "/users", 200, "")       // 6 admitted in all
	expect("carol", "/users", 200, "")       // 7
	expect("dave", "/users", 429, "global")
	if r := call(t, base, "", "/orders"); r.status != 401 {
		t.Fatalf("no user: %d", r.status)
	}
	return srv
}

func TestGatewayAppliesThreeLimitsAtomically(t *testing.T) {
	srv := testGateway(t)
	if n, err := srv.Client(2).Exists(context.Background(), "gw:user:alice").Result(); err != nil || n != 1 {
		t.Fatalf("EXISTS gw:user:alice = %d, %v; want the explicit limit's key", n, err)
	}
}

// With -policies the same three limits are server policies, decided by one RL.CHECK of three
// pairs, with the same outcomes.
func TestGatewayWithPolicies(t *testing.T) {
	srv := testGateway(t, "-policies")
	c := client.New(srv.Client(2))
	ctx := context.Background()
	p, ok, err := c.GetPolicy(ctx, "gw-route")
	if err != nil || !ok || p.Limit != client.Sliding("", 5, time.Hour) {
		t.Fatalf("RL.POLICY GET gw-route = %+v, %v, %v; want SLIDING 5 1h", p, ok, err)
	}
	if n, err := srv.Client(2).Exists(ctx, "gw:user:alice").Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS gw:user:alice = %d, %v; want no explicit limit's key", n, err)
	}
	if r, err := c.Check(ctx, "gw-user", "alice", 0); err != nil || r.Remaining != 0 || r.Limit != 3 {
		t.Fatalf("RL.CHECK gw-user alice 0 = %+v, %v; want alice's 3 used up under the policy", r, err)
	}
}
