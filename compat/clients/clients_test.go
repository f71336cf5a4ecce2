package clients

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/testutil"
)

// requiredEnv, set by .ci/run, makes a missing client runtime (node and
// the npm packages, Debian's python3-redis) a failure instead of a skip.
const requiredEnv = "SLUICE_CLIENT_MATRIX"

// server is a sluice process (testutil.Start), restartable on its port: the first start lets
// the kernel choose it (--port auto) and reads it from the ports file; a restart keeps it, as
// a restarted server keeps its configured port.
type server struct {
	*testutil.Sluice
	port string
}

func startServer(t *testing.T) *server {
	t.Helper()
	s := &server{Sluice: testutil.Start(t, "--loglevel", "warning")}
	_, s.port, _ = strings.Cut(s.Addr, ":")
	return s
}

// restart stops the server as an operator does (SIGTERM: a save, then the
// listener closes before the clients) and starts a new one on the same
// port and directory. After a SIGKILL the kernel may close a client's
// connection before the dead process's listener, so a client that
// reconnects at once can be reset mid-handshake; node-redis 5.9.0 then
// reports ready on the reset socket and never answers again (the server
// cannot order a SIGKILL; TestStoppedServerRefusesAClientThatReconnectsAtOnce
// in cmd/sluice holds it to the order for a SIGTERM).
func (s *server) restart() {
	s.Stop()
	s.Start()
}

// missing skips the test for a local run, or fails it under CI.
func missing(t *testing.T, what string) {
	t.Helper()
	if os.Getenv(requiredEnv) != "" {
		t.Fatalf("%s is missing, and %s is set: .ci/run installs it", what, requiredEnv)
	}
	t.Skipf("%s is missing (.ci/run installs it; set %s to make this a failure)", what, requiredEnv)
}

// runScript runs a client script against a fresh server: when the script
// prints RESTART the server is restarted on its port and the script told
// to go on. It returns the script's RESULT line.
func runScript(t *testing.T, name string, args ...string) string {
	t.Helper()
	s := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "SLUICE_PORT="+s.port)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var result string
	restarted := false
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "RESTART":
			s.restart()
			restarted = true
			io.WriteString(stdin, "GO\n")
		case strings.HasPrefix(line, "RESULT "):
			result = strings.TrimPrefix(line, "RESULT ")
		}
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, stderr.String())
	}
	if !restarted || result == "" {
		t.Fatalf("%s %v ended without restarting the server or a result\n%s", name, args, stderr.String())
	}
	return result
}

// TestNodeClients runs ioredis 5 and 6 and node-redis 4, 5 and 6 (as
// pinned in package-lock.json) with their default protocols: every one
// must read a decision as the same five integers.
func TestNodeClients(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		missing(t, "node")
	}
	if _, err := os.Stat("node_modules"); err != nil {
		missing(t, "compat/clients/node_modules (npm ci)")
	}
	want := map[string]string{"ioredis5": "proto=2", "ioredis6": "proto=3", "redis4": "proto=2",
		"redis5": "proto=2", "redis6": "proto=3"}
	for _, client := range []string{"ioredis5", "ioredis6", "redis4", "redis5", "redis6"} {
		t.Run(client, func(t *testing.T) {
			got := runScript(t, node, "node/matrix.mjs", client)
			if !strings.HasPrefix(got, want[client]+" decision=[1,20,19,0,100] denial=[0,1,0]") {
				t.Fatalf("%s: %s; want %s and the five integers", client, got, want[client])
			}
			t.Log(got)
		})
	}
}

// TestRedisPy runs Debian's python3-redis (RESP2 only before redis-py 5).
func TestRedisPy(t *testing.T) {
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import redis").Run(); err != nil {
		missing(t, "python3-redis (Debian's, for /usr/bin/python3)")
	}
	got := runScript(t, py, "python/matrix.py")
	if got != "proto=2 decision=[1, 20, 19, 0, 100] denial=[0, 1, 0]" {
		t.Fatalf("redis-py: %s", got)
	}
	t.Log(got)
}
