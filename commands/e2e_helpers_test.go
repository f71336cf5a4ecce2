package commands

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-rl/sluice/store"
)

// testServer is a sluice server on 127.0.0.1:0, backed by a real store, with
// the debug clock enabled so that tests drive time exactly.
type testServer struct {
	srv  *Server
	addr string
	port string
}

// epochMs is an instant on a whole minute (and hour), where scripts start.
const epochMs = 1_800_000_000_000 // 2027-01-15T08:00:00Z

func startServer(t testing.TB, cfg Config) *testServer {
	t.Helper()
	if cfg.Debug == "" {
		cfg.Debug = "yes"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	cfg.EventLoops = testLoops(cfg.EventLoops)
	srv := NewServer(cfg, store.New(8), NewClock())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
	})
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	srv.Clock().Set(epochMs * 1e6)
	return &testServer{srv: srv, addr: ln.Addr().String(), port: port}
}

// goroutines in Config.EventLoops asks a test helper for a goroutine per
// client; the helpers otherwise serve clients from two event loops, as
// sluice does by default on a single node.
const goroutines = -1

// testLoops is the EventLoops a test server runs with (NewServer reads
// goroutines as 0).
func testLoops(n int) int {
	if n == 0 {
		return 2
	}
	return n
}

// ioModels runs fn once with event loops and once with a goroutine per
// client, for the behaviour the two carry out differently (writes that do
// not fit, idle clients, kills, panics, shutdown).
func ioModels(t *testing.T, fn func(t *testing.T, loops int)) {
	t.Run("loops", func(t *testing.T) { fn(t, 2) })
	t.Run("goroutines", func(t *testing.T) { fn(t, goroutines) })
}

// client returns a go-redis client speaking RESP protocol (2 or 3).
func (s *testServer) client(t testing.TB, protocol int) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: s.addr, Protocol: protocol, DisableIndentity: true})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// at freezes the server clock at epochMs + ms.
func (s *testServer) at(ms int64) { s.srv.Clock().Set((epochMs + ms) * 1e6) }

// cli runs the redis-cli binary against the server and returns its output
// with the formatting a terminal shows (--no-raw).
func (s *testServer) cli(t testing.TB, args ...string) string {
	t.Helper()
	path, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli is not installed (apt-get install redis-tools)")
	}
	argv := append([]string{"-p", s.port, "--no-raw"}, args...)
	out, err := exec.Command(path, argv...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
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
