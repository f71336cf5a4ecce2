package sluicetest

import (
	"os/exec"
	"regexp"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-rl/sluice/internal/testutil"
)

// Binary returns the path of a sluice binary: $SLUICE_BIN if set, else one built from the
// module's cmd/sluice, once per source tree (kept in the user's cache directory). Tests that
// need it are skipped with -short.
func Binary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a sluice process; skipped with -short")
	}
	return testutil.Binary(t)
}

// Server is one sluice process. Its methods may be called from any goroutine of the test.
type Server struct {
	// Addr is the server's host:port on 127.0.0.1; it stays the same across Restart.
	Addr string
	t    testing.TB
	p    *testutil.Sluice
}

// Start runs a server on 127.0.0.1 with --save 0 and its own --dir, plus args (such as
// "--enable-debug-command", "yes"), and waits until it serves. It is killed when the test
// ends. The RESP port is one the kernel chooses (--port auto) unless args give --port;
// Listening says where each listener ended up.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	Binary(t)
	p := testutil.Start(t, append([]string{"--save", "0"}, args...)...)
	return &Server{Addr: p.Addr, t: t, p: p}
}

// Listening returns the address of one of the server's listeners, by its name in the
// server's --ports-file: "resp", "tls", "raft", "grpc" or "metrics" ("" if it has none).
func (s *Server) Listening(name string) string { return s.p.Listening(name) }

// Log returns what the server has logged so far, across restarts.
func (s *Server) Log() string { return s.p.Log() }

// Kill ends the process with SIGKILL (resuming it first if paused) and waits for it. Killing a
// dead server does nothing.
func (s *Server) Kill() { s.p.Kill() }

// Pause stops the process with SIGSTOP: its port still accepts connections (the kernel does)
// but nothing is answered, as with a server stalled by the machine. It returns once every
// thread is stopped (where /proc shows it, for at most 5 s): the signal is delivered
// asynchronously, and a busy thread may answer a command or two after kill(2) returns.
func (s *Server) Pause() { s.p.Pause() }

// Resume continues a paused process with SIGCONT.
func (s *Server) Resume() { s.p.Resume() }

// Restart kills the process and starts it again on the same address with the same arguments
// (its state is lost: --save 0): the port it held until the kill, as a restarted server keeps
// its configured port.
func (s *Server) Restart() {
	s.t.Helper()
	s.p.Restart()
}

// Client returns a go-redis client of the server speaking RESP protocol (2 or 3), closed when
// the test ends. It does not retry on its own (MaxRetries -1), honours contexts' deadlines, and
// waits up to 10 s for a reply (a replicated node waits 3 s for a leader before it answers).
func (s *Server) Client(protocol int) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: protocol, MaxRetries: -1,
		DisableIndentity: true, ContextTimeoutEnabled: true, ReadTimeout: 10 * time.Second})
	s.t.Cleanup(func() { rdb.Close() })
	return rdb
}

// HasFlag reports whether the server knows a command-line flag ("--policies"), from its
// --help, so that a test of a newer feature can skip on an older server.
func HasFlag(t testing.TB, flag string) bool {
	t.Helper()
	out, _ := exec.Command(Binary(t), "--help").CombinedOutput()
	return regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(flag) + `\b`).Match(out)
}
