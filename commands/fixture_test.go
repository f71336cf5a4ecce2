package commands

import (
	"context"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/server"
	"github.com/sluice-rl/sluice/store"
)

// The package's one server fixture: a Handler over a server.Server on
// 127.0.0.1:0, backed by a real store, with the debug clock frozen at
// epochMs so that tests drive time exactly; and its one script runner,
// play.

// testConfig is what a test server starts with. Zero fields keep the
// defaults, except that DEBUG is allowed and two event loops serve the
// clients.
type testConfig struct {
	Password    string
	ACLFile     string
	Renames     []Rename
	Debug       DebugMode // "": yes
	LogMaxLimit int64
	// AllMaxLimits and AllMaxLogUnits: 0 for the defaults.
	AllMaxLimits, AllMaxLogUnits int64
	Params                       []Param
	Shutdowner                   Shutdowner
	Keyspace                     Keyspace // nil: store.New(8)
	// EventLoops: 0 for two loops, goroutines for a goroutine per client.
	EventLoops       int
	MaxMemoryClients int64
	// RealClock leaves the clock running instead of frozen at epochMs.
	RealClock bool
	// Wrap wraps the listener (to watch what a connection reads).
	Wrap func(net.Listener) net.Listener
	// Policies and Rules: the policy registry and the rules files (nil:
	// an empty registry of the Handler's own, no files).
	Policies *policy.Registry
	Rules    RulesFiles
	// NoTopKeys turns the heavy-hitters sketches off (top-keys 0).
	NoTopKeys bool
	// Topology is the shard the CLUSTER commands report (nil: none).
	Topology Topology
}

// testServer is a running test server.
type testServer struct {
	h     *Handler
	srv   *server.Server
	clock *Clock
	addr  string
	port  string
}

// epochMs is an instant on a whole minute (and hour), where scripts start.
const epochMs = 1_800_000_000_000 // 2027-01-15T08:00:00Z

// goroutines in testConfig.EventLoops asks for a goroutine per client.
const goroutines = -1

func startServer(t testing.TB, tc testConfig) *testServer {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	cfg := DefaultConfig()
	cfg.Debug = DebugYes
	if tc.Debug != "" {
		cfg.Debug = tc.Debug
	}
	if tc.LogMaxLimit > 0 {
		cfg.LogMaxLimit = tc.LogMaxLimit
	}
	if tc.AllMaxLimits > 0 {
		cfg.AllMaxLimits = tc.AllMaxLimits
	}
	if tc.AllMaxLogUnits > 0 {
		cfg.AllMaxLogUnits = tc.AllMaxLogUnits
	}
	cfg.Password, cfg.Params, cfg.Shutdowner, cfg.Logger = tc.Password, tc.Params, tc.Shutdowner, quiet
	cfg.ACLFile, cfg.Renames = tc.ACLFile, tc.Renames
	cfg.Policies, cfg.Rules = tc.Policies, tc.Rules
	cfg.Topology = tc.Topology
	if tc.NoTopKeys {
		cfg.TopKeys = 0
	}
	ks := tc.Keyspace
	if ks == nil {
		ks = store.New(8)
	}
	clock := NewClock()
	h, err := New(cfg, ks, clock)
	if err != nil {
		t.Fatal(err)
	}
	scfg := server.DefaultConfig()
	scfg.Clock, scfg.Logger = clock, quiet
	switch tc.EventLoops {
	case 0:
		scfg.EventLoops = 2
	case goroutines:
		scfg.EventLoops = 0
	default:
		scfg.EventLoops = tc.EventLoops
	}
	if tc.MaxMemoryClients != 0 {
		scfg.MaxMemoryClients = tc.MaxMemoryClients
	}
	srv, err := server.New(scfg, h)
	if err != nil {
		t.Fatal(err)
	}
	h.Attach(srv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if tc.Wrap != nil {
		ln = tc.Wrap(ln)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	stop := make(chan struct{})
	swept := make(chan struct{})
	go func() { h.Sweep(stop); close(swept) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		close(stop)
		<-swept
	})
	if !tc.RealClock {
		clock.Set(epochMs * 1e6)
	}
	_, port, _ := net.SplitHostPort(addr)
	return &testServer{h: h, srv: srv, clock: clock, addr: addr, port: port}
}

// ioModels runs fn once with event loops and once with a goroutine per
// client, for the behaviour the two carry out differently.
func ioModels(t *testing.T, fn func(t *testing.T, loops int)) {
	t.Run("loops", func(t *testing.T) { fn(t, 2) })
	t.Run("goroutines", func(t *testing.T) { fn(t, goroutines) })
}

// proto returns go-redis options for RESP protocol n, without the
// client's CLIENT SETINFO handshake.
func proto(n int) *redis.Options { return &redis.Options{Protocol: n, DisableIndentity: true} }

// client returns a go-redis client of the server with opt (nil: go-redis's
// defaults, RESP3).
func (s *testServer) client(t testing.TB, opt *redis.Options) *redis.Client {
	t.Helper()
	if opt == nil {
		opt = &redis.Options{}
	}
	opt.Addr = s.addr
	if opt.PoolSize == 0 {
		opt.PoolSize = 4
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// at freezes the server clock at epochMs + d.
func (s *testServer) at(d time.Duration) { s.clock.Set(epochMs*1e6 + int64(d)) }

// call is one step of a script: at epochMs + at, args, and the reply as
// RESP2 integers ("[1 3 2 0 1000]").
type call struct {
	at   time.Duration
	args []any
	want string
}

// ms is d milliseconds, for scripts.
func ms(d int64) time.Duration { return time.Duration(d) * time.Millisecond }

// play runs a script of calls through go-redis at RESP2, each at its
// instant, and fails at the first reply that differs.
func (s *testServer) play(t *testing.T, calls []call) {
	t.Helper()
	rdb := s.client(t, proto(2))
	for i, c := range calls {
		s.at(c.at)
		if got := ints(t, do(t, rdb, c.args...)); got != c.want {
			t.Fatalf("call %d at t0+%v %v = %s; want %s", i, c.at, c.args, got, c.want)
		}
	}
}

func redisCLI(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("redis-cli")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("redis-cli is not installed; .ci/run must install redis-tools")
		}
		t.Skip("redis-cli is not installed (apt-get install redis-tools)")
	}
	return path
}

// cli runs the redis-cli binary against the server with stdin and args and
// returns its standard output.
func (s *testServer) cli(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, redisCLI(t), append([]string{"-h", "127.0.0.1", "-p", s.port}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("redis-cli %v: %v (stderr %q)", args, err, stderr.String())
	}
	return string(out)
}

// do runs a command through go-redis and returns its reply, failing the
// test on an error.
func do(t testing.TB, rdb *redis.Client, args ...any) any {
	t.Helper()
	v, err := rdb.Do(context.Background(), args...).Result()
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return v
}

// doErr runs a command that must fail and returns the error text.
func doErr(t testing.TB, rdb *redis.Client, args ...any) string {
	t.Helper()
	v, err := rdb.Do(context.Background(), args...).Result()
	if err == nil {
		t.Fatalf("%v = %v; want an error", args, v)
	}
	return err.Error()
}

// ints renders a RESP2 array of integers as "[1 3 2 0 1000]".
func ints(t testing.TB, v any) string {
	t.Helper()
	list, ok := v.([]any)
	if !ok {
		t.Fatalf("reply %#v is not an array", v)
	}
	parts := make([]string, len(list))
	for i, x := range list {
		n, ok := x.(int64)
		if !ok {
			t.Fatalf("element %d of %#v is not an integer", i, v)
		}
		parts[i] = strconv.FormatInt(n, 10)
	}
	return "[" + strings.Join(parts, " ") + "]"
}
