package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

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

// Free keys get 3 an hour, pro keys 5, the key with an override 4 of its own, the internal key
// as many as it asks; the prohibited and the unknown key get 403, no key 401. Then sluice is
// killed: the free tier fails closed (503), the pro tier open (200), internal is unaffected.
func TestTiersOverridesAndUnlimitedInternalClient(t *testing.T) {
	srv := sluicetest.Start(t)
	base := startAPI(t, srv, "-free", "3", "-pro", "5", "-window", "1h", "-timeout", "1s", "-x",
		"-key", "k-free=free", "-key", "k-pro=pro", "-key", "k-ops=internal", "-key", "k-gone=deny",
		"-override", "k-big=4")
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
	expect("k-big", 4, "override:k-big", `"override:k-big";q=4;w=3600`)
	for i := 0; i < 10; i++ {
		if r := call(t, base, "k-ops"); r.status != 200 || r.header.Get("RateLimit") != "" {
			t.Fatalf("internal, request %d: %d %v; want 200 without rate-limit fields", i+1, r.status, r.header)
		}
	}
	if r := call(t, base, "k-gone"); r.status != 403 || len(r.problem.ViolatedPolicies) != 1 || r.problem.ViolatedPolicies[0] != "deny" {
		t.Fatalf("prohibited key: %d %+v; want 403 naming deny", r.status, r.problem)
	}
	if r := call(t, base, "k-nobody"); r.status != 403 || r.problem.Detail != "unknown API key" {
		t.Fatalf("unknown key: %d %+v; want 403", r.status, r.problem)
	}
	if r := call(t, base, ""); r.status != 401 || r.header.Get("WWW-Authenticate") == "" {
		t.Fatalf("no key: %d %v; want 401", r.status, r.header)
	}

	srv.Kill()
	for _, tc := range []struct {
		key    string
		status int
	}{{"k-free", 503}, {"k-pro", 200}, {"k-ops", 200}} {
		if r := call(t, base, tc.key); r.status != tc.status {
			t.Fatalf("%s with sluice down: %d %v; want %d", tc.key, r.status, r.header, tc.status)
		}
	}
}

// A key in an unknown tier or an override that is not a quota stops the API at start.
func TestTiersRefusesABadKeyTable(t *testing.T) {
	srv := sluicetest.Start(t)
	for _, args := range [][]string{{"-key", "k=gold"}, {"-override", "k=lots"}, {"-override", "k=0"}, {"-key", "k"}} {
		err := run(context.Background(), append([]string{"-addr", srv.Addr, "-listen", "127.0.0.1:0"}, args...), &lockedBuilder{}, nil)
		if err == nil {
			t.Errorf("%v: started; want an error", args)
		}
	}
}
