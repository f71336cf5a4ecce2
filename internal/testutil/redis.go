package testutil

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/childproc"
)

// Redis is a redis-server process started by StartRedis or StartRedisTCP, stopped when the
// test ends.
type Redis struct {
	// Network and Addr are where it listens: "unix" and a socket's path, or "tcp" and
	// 127.0.0.1:port.
	Network, Addr string
	// Version is its redis_version ("7.0.15"); Major and Minor are its first two numbers.
	Version      string
	Major, Minor int

	mu  sync.Mutex
	log strings.Builder
}

// Log returns what the process has written so far.
func (r *Redis) Log() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.log.String()
}

func (r *Redis) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.log.Write(p)
}

// StartRedis runs redis-server without persistence on a Unix socket of the test's own and no
// TCP port (redis-server cannot bind a port the kernel chooses and report it), with extra
// flags after the others, and waits until it answers PING. It skips the test when
// redis-server is not installed.
func StartRedis(t testing.TB, extra ...string) *Redis {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "redis.sock")
	r, err := startRedis(t, "unix", sock, append([]string{"--port", "0", "--unixsocket", sock}, extra...))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// drawPort returns a port for StartRedisTCP to try: from 20000–32767, below Linux's ephemeral
// ports (32768–60999), which the kernel gives to outgoing connections and to port 0.
var drawPort = func() int { return 20000 + rand.IntN(32768-20000) }

// StartRedisTCP is StartRedis on 127.0.0.1 and a TCP port, for clients that cannot dial a
// Unix socket. The port is drawn at random and redis-server binds it itself; when it exits
// because the port is taken, another is drawn (up to 20 tries). No port is ever opened,
// closed and handed on, so none can be taken between a check and its use.
func StartRedisTCP(t testing.TB, extra ...string) *Redis {
	t.Helper()
	var lastErr error
	for range 20 {
		port := strconv.Itoa(drawPort())
		r, err := startRedis(t, "tcp", "127.0.0.1:"+port, append([]string{"--port", port, "--bind", "127.0.0.1"}, extra...))
		if err == nil {
			return r
		}
		if !strings.Contains(err.Error(), "Address already in use") {
			t.Fatal(err)
		}
		lastErr = err
	}
	t.Fatalf("redis-server found no free port in 20 tries: %v", lastErr)
	return nil
}

// startRedis starts redis-server with listen (its flags for network and addr) and waits
// until it answers; an error is one the process reported by exiting, with its log.
func startRedis(t testing.TB, network, addr string, listen []string) (*Redis, error) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not on PATH (apt-get install redis-server): the comparison with Redis is not run")
	}
	r := &Redis{Network: network, Addr: addr}
	args := append([]string{"--save", "", "--appendonly", "no", "--daemonize", "no", "--dir", t.TempDir(),
		"--loglevel", "warning"}, listen...)
	cmd := exec.Command(bin, args...)
	childproc.KillWithParent(cmd)
	cmd.Stdout, cmd.Stderr = r, r
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop := func() { cmd.Process.Kill(); <-exited }
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		// The process id tells this server from another one on the port, which this one
		// then could not bind.
		info, err := redisInfo(network, addr)
		if err == nil && info["process_id"] != strconv.Itoa(cmd.Process.Pid) {
			err = fmt.Errorf("%s is served by process %s", addr, info["process_id"])
		}
		if err == nil {
			r.Version = info["redis_version"]
			fmt.Sscanf(r.Version, "%d.%d", &r.Major, &r.Minor)
			t.Cleanup(stop)
			return r, nil
		}
		select {
		case <-exited:
			return nil, fmt.Errorf("redis-server %s exited: %v\n%s", strings.Join(args, " "), cmd.ProcessState, r.Log())
		default:
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("redis-server did not answer within 10 s: %v\n%s", err, r.Log())
		}
	}
}

// redisInfo sends INFO server and returns its fields; an error until the server serves.
func redisInfo(network, addr string) (map[string]string, error) {
	nc, err := net.DialTimeout(network, addr, time.Second)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Write([]byte("INFO server\r\n")); err != nil {
		return nil, err
	}
	reply, err := ReadReply(bufio.NewReader(nc))
	if err != nil {
		return nil, err
	}
	text, ok := strings.CutPrefix(reply, "$")
	if !ok {
		return nil, fmt.Errorf("INFO server = %q", Clip(reply))
	}
	fields := map[string]string{}
	for _, line := range strings.Split(text, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[k] = v
		}
	}
	return fields, nil
}
