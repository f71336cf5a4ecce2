package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"

	"github.com/sluice-rl/sluice/bench/internal/proc"
)

// The two rate limit services the RLS comparison starts for every round:
// sluice with --grpc-bind, and envoyproxy/ratelimit with a Redis behind it
// (USE_STATSD=false, the rules in a config directory, Redis over TCP on
// loopback). Both run on the servers' CPUs.

// ratelimitModule is the envoyproxy/ratelimit the comparison builds: its
// newest pseudo-version on the Go module proxy.
const (
	ratelimitModule  = "github.com/envoyproxy/ratelimit"
	ratelimitVersion = "v1.4.1-0.20260122083618-3fb702589d36"
)

// rlsServer is one started service: its gRPC address and its processes.
type rlsServer struct {
	addr  string
	procs []*server
}

func (s *rlsServer) stop() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		s.procs[i].stop()
	}
}

// cpu is the processes' CPU time together.
func (s *rlsServer) cpu() (time.Duration, error) {
	var total time.Duration
	for _, p := range s.procs {
		c, err := proc.CPU(p.pid)
		if err != nil {
			return 0, err
		}
		total += c
	}
	return total, nil
}

// writeRLSRules writes the rules both services load into dir/config.
func writeRLSRules(dir string) (string, error) {
	cfg := filepath.Join(dir, "ratelimit", "config")
	if err := os.MkdirAll(cfg, 0o755); err != nil {
		return "", err
	}
	return cfg, os.WriteFile(filepath.Join(cfg, "bench.yaml"), []byte(rlsRules), 0o644)
}

// startSluiceRLS starts sluice serving gRPC with the rules in rulesDir, on ports it chooses
// itself and reports in its --ports-file.
func startSluiceRLS(ctx context.Context, bin, dir, rulesDir string) (*rlsServer, error) {
	n := logSeq.Add(1)
	portsFile := filepath.Join(dir, fmt.Sprintf("sluice-rls-%d.ports", n))
	s, err := spawn("sluice", bin, []string{"--port", "auto", "--bind", "127.0.0.1", "--loglevel", "warning",
		"--save", "0", "--dir", dir, "--policies", rulesDir, "--grpc-bind", "127.0.0.1:0", "--ports-file", portsFile}, nil, 0, "",
		filepath.Join(dir, fmt.Sprintf("sluice-rls-%d.log", n)))
	if err != nil {
		return nil, err
	}
	srv := &rlsServer{procs: []*server{s}}
	ports, err := s.waitPorts(ctx, portsFile, 10*time.Second)
	if err != nil {
		srv.stop()
		return nil, err
	}
	s.addr, srv.addr = ports["resp"], ports["grpc"]
	if err := waitRLS(ctx, srv, s); err != nil {
		srv.stop()
		return nil, err
	}
	return srv, nil
}

// startEnvoyRatelimit starts a Redis, then envoyproxy/ratelimit on it with
// the rules under runtime/ratelimit/config. Neither can bind port 0 and say
// what it got: each is started on drawn ports (proc.DrawPort), and again on
// others when one was taken (up to 20 times each).
func startEnvoyRatelimit(ctx context.Context, ratelimitBin, redisBin, dir, runtimeRoot string) (*rlsServer, error) {
	var redis *server
	var err error
	for attempt := 0; attempt < 20; attempt++ {
		if redis, err = startRLSRedis(ctx, redisBin, dir); !errors.Is(err, errPortTaken) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	for attempt := 0; attempt < 20; attempt++ {
		var srv *rlsServer
		if srv, err = startRatelimit(ctx, ratelimitBin, redis, dir, runtimeRoot); err == nil {
			return srv, nil
		}
		if !errors.Is(err, errPortTaken) {
			break
		}
	}
	redis.stop()
	return nil, err
}

// startRLSRedis starts the redis-server behind envoyproxy/ratelimit on a drawn port.
func startRLSRedis(ctx context.Context, redisBin, dir string) (*server, error) {
	port := strconv.Itoa(proc.DrawPort())
	raddr := net.JoinHostPort("127.0.0.1", port)
	redis, err := spawn("redis", redisBin, []string{"--port", port, "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--daemonize", "no", "--loglevel", "warning", "--io-threads", "1"}, nil, 0, raddr,
		filepath.Join(dir, fmt.Sprintf("redis-rls-%s.log", port)))
	if err != nil {
		return nil, err
	}
	if err := redis.waitReady(ctx, 10*time.Second); err != nil {
		redis.stop()
		return nil, err
	}
	return redis, nil
}

// startRatelimit starts envoyproxy/ratelimit on redis with its three ports (HTTP, debug,
// gRPC) drawn; an error wraps errPortTaken when it exited because one was taken.
func startRatelimit(ctx context.Context, ratelimitBin string, redis *server, dir, runtimeRoot string) (*rlsServer, error) {
	var ports [3]string
	for i := range ports {
		ports[i] = strconv.Itoa(proc.DrawPort())
	}
	srv := &rlsServer{addr: net.JoinHostPort("127.0.0.1", ports[0]), procs: []*server{redis}}
	env := []string{
		"USE_STATSD=false", "LOG_LEVEL=warn", "REDIS_SOCKET_TYPE=tcp", "REDIS_URL=" + redis.addr,
		"RUNTIME_ROOT=" + runtimeRoot, "RUNTIME_SUBDIRECTORY=ratelimit", "RUNTIME_WATCH_ROOT=false",
		"HOST=127.0.0.1", "PORT=" + ports[1], "DEBUG_HOST=127.0.0.1", "DEBUG_PORT=" + ports[2],
		"GRPC_HOST=127.0.0.1", "GRPC_PORT=" + ports[0],
	}
	rl, err := spawn("ratelimit", ratelimitBin, nil, env, 0, srv.addr, filepath.Join(dir, fmt.Sprintf("ratelimit-%s.log", ports[0])))
	if err != nil {
		return nil, err
	}
	if err := waitRLS(ctx, srv, rl); err != nil {
		rl.stop()
		return nil, err
	}
	srv.procs = append(srv.procs, rl)
	return srv, nil
}

// waitRLS waits up to 30 s until the service answers a call with the
// rules' limit (it has loaded them).
func waitRLS(ctx context.Context, srv *rlsServer, p *server) error {
	conns, err := dialRLS(srv.addr, 1)
	if err != nil {
		return err
	}
	defer conns[0].Close()
	deadline := time.Now().Add(30 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			err := fmt.Errorf("%s exited before it was ready; its log (%s) ends with:\n%s", p.kind, p.log, tail(p.log))
			if b, _ := os.ReadFile(p.log); proc.AddrInUse(string(b)) {
				err = fmt.Errorf("%w: %w", errPortTaken, err)
			}
			return err
		default:
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		last = probeRLS(ctx, conns[0])
		if last == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s on %s did not answer with the rules' limit within 30 s (%v); log %s:\n%s", p.kind, srv.addr, last, p.log, tail(p.log))
}

func probeRLS(ctx context.Context, conn *grpc.ClientConn) error {
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	resp, err := rlsv3.NewRateLimitServiceClient(conn).ShouldRateLimit(cctx, rlsRequest(0))
	if err != nil {
		return err
	}
	if _, problem := checkRLS(resp); problem != "" {
		return errors.New(problem)
	}
	return nil
}

// ratelimitBinary returns envoyproxy/ratelimit's service binary: path if
// given, else the one built earlier into the cache directory, else one
// built now (a minute or two: go get in a scratch module there, from the
// Go module proxy). It returns why not when it cannot.
func ratelimitBinary(ctx context.Context, path string, log io.Writer) (string, string) {
	if path != "" {
		if _, err := os.Stat(path); err != nil {
			return "", "-ratelimit-bin " + path + ": " + err.Error()
		}
		return path, ""
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", "no cache directory to build envoyproxy/ratelimit into (" + err.Error() + "); give -ratelimit-bin"
	}
	dir := filepath.Join(cache, "sluice-bench", "ratelimit-"+ratelimitVersion)
	bin := filepath.Join(dir, "ratelimit")
	if _, err := os.Stat(bin); err == nil {
		return bin, ""
	}
	fmt.Fprintf(log, "bench: building %s@%s into %s (once; from the Go module proxy)\n", ratelimitModule, ratelimitVersion, dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err.Error()
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module ratelimitbuild\n\ngo 1.26\n"), 0o644); err != nil {
		return "", err.Error()
	}
	pkg := ratelimitModule + "/src/service_cmd"
	for _, args := range [][]string{{"get", pkg + "@" + ratelimitVersion}, {"build", "-o", bin + ".tmp", pkg}} {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			msg := strings.TrimSpace(string(out))
			if i := strings.IndexByte(msg, '\n'); i > 0 {
				msg = msg[:i]
			}
			return "", fmt.Sprintf("building envoyproxy/ratelimit failed (go %s: %v: %s); give -ratelimit-bin, or let the Go module proxy be reached", args[0], err, msg)
		}
	}
	if err := os.Rename(bin+".tmp", bin); err != nil {
		return "", err.Error()
	}
	return bin, ""
}
