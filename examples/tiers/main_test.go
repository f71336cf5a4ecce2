package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-rl/sluice/client"
	"github.com/sluice-rl/sluice/client/httplimit"
	"github.com/sluice-rl/sluice/client/sluicetest"
)

// startAPI runs the example against srv with args; it stops when the test ends.
func startAPI(t *testing.T, srv *sluicetest.Server, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan string, 1), make(chan error, 1)
	out := &lockedBuilder{}
	go func() {
		done <- run(ctx, append([]string{"-addr", srv.Addr, "-listen", "127.0.0.1:0"}, args...), out, ready)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	select {
	case addr := <-ready:
		return "http://" + addr
	case err := <-done:
		t.Fatalf("the API did not start: %v", err)
	}
	return ""
}

type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

type reply struct {
	status  int
	header  http.Header
	problem httplimit.Problem
}

func call(t *testing.T, base, key string) reply {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/things", nil)
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := reply{status: resp.StatusCode, header: resp.Header}
	if resp.Header.Get("Content-Type") == "application/problem+json" {
		if err := json.NewDecoder(resp.Body).Decode(&r.problem); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// Free keys get 3 an hour and pro keys 5, each its tier's server policy; the key with an
// override 4 of its own in the free tier; the internal key (pro with an UNLIMITED override) as
// many as it asks, without rate-limit fields; the prohibited key (a DENY override) 403 naming
// its tier, the unknown key 403, no key 401. An operator's change in sluice applies to the next
// request. Then sluice is killed and every key fails closed (503).
func TestTiersArePoliciesAndOverridesInSluice(t *testing.T) {
	srv := sluicetest.Start(t)
	base := startAPI(t, srv, "-free", "3", "-pro", "5", "-window", "1h", "-timeout", "1s", "-x",
		"-key", "k-free=free", "-key", "k-pro=pro", "-key", "k-ops=internal", "-key", "k-gone=deny",
		"-key", "k-late=pro", "-override", "k-big=4")
	expect := func(key string, admitted int, tier, policy string) {
		t.Helper()
		for i := 1; i <= admitted; i++ {
			r := call(t, base, key)
			if r.status != 200 || r.header.Get("RateLimit-Policy") != policy ||
				!strings.HasPrefix(r.header.Get("RateLimit"), `"`+tier+`";r=`) ||
				r.header.Get("X-RateLimit-Remaining") != strconv.Itoa(admitted-i) {
				t.Fatalf("%s, request %d: %d %v; want 200 with %s", key, i, r.status, r.header, policy)
			}
		}
		r := call(t, base, key)
		if r.status != 429 || r.header.Get("Retry-After") == "" || r.header.Get("RateLimit-Policy") != policy ||
			r.problem.Type != httplimit.QuotaExceeded || len(r.problem.ViolatedPolicies) != 1 || r.problem.ViolatedPolicies[0] != tier {
			t.Fatalf("%s over its quota: %d %v %+v; want 429 naming %s", key, r.status, r.header, r.problem, tier)
		}
	}
	expect("k-free", 3, "free", `"free";q=3;w=3600`)
	expect("k-pro", 5, "pro", `"pro";q=5;w=3600`)
	expect("k-big", 4, "free", `"free";q=4;w=3600`)
	for i := 0; i < 20; i++ {
		if r := call(t, base, "k-ops"); r.status != 200 || r.header.Get("RateLimit") != "" {
			t.Fatalf("internal, request %d: %d %v; want 200 without rate-limit fields", i+1, r.status, r.header)
		}
	}
	if r := call(t, base, "k-gone"); r.status != 403 || r.header.Get("Retry-After") != "" ||
		len(r.problem.ViolatedPolicies) != 1 || r.problem.ViolatedPolicies[0] != "free" {
		t.Fatalf("prohibited key: %d %v %+v; want 403 naming free", r.status, r.header, r.problem)
	}
	if r := call(t, base, "k-nobody"); r.status != 403 || r.problem.Detail != "unknown API key" {
		t.Fatalf("unknown key: %d %+v; want 403", r.status, r.problem)
	}
	if r := call(t, base, ""); r.status != 401 || r.header.Get("WWW-Authenticate") == "" {
		t.Fatalf("no key: %d %v; want 401", r.status, r.header)
	}

	// The limits live in sluice: what the API set is there, and an operator's change is the
	// next request's limit.
	ctx := context.Background()
	c := client.New(srv.Client(2))
	if o, ok, err := c.GetOverride(ctx, "pro", "k-ops"); err != nil || !ok || o.Mode != client.OverrideUnlimited {
		t.Fatalf("RL.OVERRIDE GET pro k-ops = %+v, %v, %v; want UNLIMITED", o, ok, err)
	}
	if r := call(t, base, "k-late"); r.status != 200 {
		t.Fatalf("k-late: %d; want 200", r.status)
	}
	if err := c.SetOverride(ctx, "pro", "k-late", client.Deny()); err != nil {
		t.Fatal(err)
	}
	if r := call(t, base, "k-late"); r.status != 403 {
		t.Fatalf("k-late once denied in sluice: %d; want 403", r.status)
	}
	if _, err := c.DeleteOverride(ctx, "pro", "k-ops"); err != nil {
		t.Fatal(err)
	}
	expect("k-ops", 5, "pro", `"pro";q=5;w=3600`) // internal without its override: a pro key
	if err := c.SetPolicy(ctx, "free", client.Token("", client.PerHour(10), 10), client.PolicyOptions{}); err != nil {
		t.Fatal(err)
	}
	// A token bucket's state is the time until it is full again: k-free emptied its bucket, an
	// hour's worth, and under the new policy waits for one token at 10 an hour (6 minutes)
	// instead of 3 an hour (20 minutes).
	// (The API runs on the real clock: the seconds the test took since are off the wait.)
	r := call(t, base, "k-free")
	if retry, _ := strconv.Atoi(r.header.Get("Retry-After")); r.status != 429 || r.header.Get("RateLimit-Policy") != `"free";q=10;w=3600` ||
		retry > 360 || retry < 300 {
		t.Fatalf("k-free after the free tier became 10 an hour: %d %v; want 429, retry in 360 s less the test's time", r.status, r.header)
	}

	srv.Kill()
	for _, key := range []string{"k-free", "k-pro", "k-ops"} {
		if r := call(t, base, key); r.status != 503 || r.header.Get("Retry-After") == "" {
			t.Fatalf("%s with sluice down: %d %v; want 503 (fail closed)", key, r.status, r.header)
		}
	}
}

// With -on-error open, requests are served while sluice is down.
func TestTiersFailOpenServesWhileSluiceIsDown(t *testing.T) {
	srv := sluicetest.Start(t)
	base := startAPI(t, srv, "-on-error", "open", "-timeout", "1s", "-key", "k-free=free")
	if r := call(t, base, "k-free"); r.status != 200 || r.header.Get("RateLimit") == "" {
		t.Fatalf("k-free: %d %v; want 200 with rate-limit fields", r.status, r.header)
	}
	srv.Kill()
	if r := call(t, base, "k-free"); r.status != 200 || r.header.Get("RateLimit") != "" {
		t.Fatalf("k-free with sluice down: %d %v; want 200 without rate-limit fields", r.status, r.header)
	}
}

// A key in an unknown tier, an override that is not a quota or a bad -on-error stops the API at
// start, before anything is set in sluice.
func TestTiersRefusesABadKeyTable(t *testing.T) {
	srv := sluicetest.Start(t)
	for _, args := range [][]string{{"-key", "k=gold"}, {"-override", "k=lots"}, {"-override", "k=0"}, {"-key", "k"},
		{"-on-error", "maybe"}} {
		err := run(context.Background(), append([]string{"-addr", srv.Addr, "-listen", "127.0.0.1:0"}, args...), &lockedBuilder{}, nil)
		if err == nil {
			t.Errorf("%v: started; want an error", args)
		}
	}
	if names, err := client.New(srv.Client(2)).ListPolicies(context.Background(), ""); err != nil || len(names) != 0 {
		t.Fatalf("RL.POLICY LIST after refused starts = %v, %v; want none", names, err)
	}
}
