package sluicetest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-rl/sluice/internal/childproc"
)

// The binary, built once per test process.
var bin struct {
	once sync.Once
	path string
	err  error
}

// Binary returns the path of a sluice binary: $SLUICE_BIN if set, else one built from the
// module's cmd/sluice into a temporary directory, once per process. Tests that need it are
// skipped with -short.
func Binary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a sluice process; skipped with -short")
	}
	bin.once.Do(func() {
		if p := os.Getenv("SLUICE_BIN"); p != "" {
			bin.path = p
			return
		}
		dir, err := os.MkdirTemp("", "sluicetest-bin-")
		if err != nil {
			bin.err = err
			return
		}
		bin.path = filepath.Join(dir, "sluice")
		out, err := exec.Command("go", "build", "-o", bin.path, "github.com/sluice-rl/sluice/cmd/sluice").CombinedOutput()
		if err != nil {
			bin.err = fmt.Errorf("go build sluice: %v\n%s", err, out)
		}
	})
	if bin.err != nil {
		t.Fatal(bin.err)
	}
	return bin.path
}

// Server is one sluice process. Its methods may be called from any goroutine of the test.
type Server struct {
	// Addr is the server's host:port on 127.0.0.1; it stays the same across Restart.
	Addr string
	t    testing.TB
	args []string
	dir  string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	log  strings.Builder

	ports map[string]string // from the ports file, by listener
}


// Start runs a server on 127.0.0.1 with --save 0 and its own --dir, plus args (such as
// "--enable-debug-command", "yes"), and waits until it serves. It is killed when the test
// ends. The RESP port is one the kernel chooses (--port auto) unless args give --port;
// Listening says where each listener ended up.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	s := &Server{t: t, args: args, dir: t.TempDir()}
	s.start("auto")
	t.Cleanup(s.Kill)
	return s
}

func (s *Server) start(port string) {
	s.t.Helper()
	portsFile := filepath.Join(s.dir, "sluice.ports")
	argv := []string{"--bind", "127.0.0.1", "--save", "0", "--dir", s.dir, "--ports-file", portsFile}
	if !slices.Contains(s.args, "--port") {
		argv = append(argv, "--port", port)
	}
	argv = append(argv, s.args...)
	cmd := exec.Command(Binary(s.t), argv...)
	childproc.KillWithParent(cmd)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	cmd.Stdout = nil
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	done := make(chan struct{})
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			s.mu.Lock()
			s.log.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
		}
		cmd.Wait()
		close(done)
	}()
	// The ports file is written once every listener serves (a stale one is removed first).
	for deadline := time.Now().Add(15 * time.Second); ; {
		if b, err := os.ReadFile(portsFile); err == nil {
			s.ports = map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				if name, addr, ok := strings.Cut(line, " "); ok {
					if _, seen := s.ports[name]; !seen {
						s.ports[name] = addr
					}
				}
			}
			s.Addr = s.ports["resp"]
			return
		}
		select {
		case <-done:
			s.t.Fatalf("sluice exited before it was ready:\n%s", s.Log())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			s.t.Fatalf("sluice not ready in 15s:\n%s", s.Log())
		}
	}
}

// Listening returns the address of one of the server's listeners, by its name in the
// server's --ports-file: "resp", "tls", "raft", "grpc" or "metrics" ("" if it has none).
func (s *Server) Listening(name string) string { return s.ports[name] }

// Log returns what the server has logged so far, across restarts.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// Kill ends the process with SIGKILL (resuming it first if paused) and waits for it. Killing a
// dead server does nothing.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGCONT)
	cmd.Process.Kill()
	<-done
}

// Pause stops the process with SIGSTOP: its port still accepts connections (the kernel does)
// but nothing is answered, as with a server stalled by the machine. It returns once every
// thread is stopped (where /proc shows it, for at most 5 s): the signal is delivered
// asynchronously, and a busy thread may answer a command or two after kill(2) returns.
func (s *Server) Pause() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cmd.Process.Signal(syscall.SIGSTOP)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if allStopped(s.cmd.Process.Pid) {
			return
		}
	}
}

// allStopped reports whether every thread of pid is stopped, or true where /proc cannot tell.
func allStopped(pid int) bool {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil || len(tasks) == 0 {
		return true
	}
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread ended
		}
		// The state follows the command name in parentheses, which may itself hold ") ".
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 || i+2 >= len(b) || b[i+2] != 'T' && b[i+2] != 't' {
			return false
		}
	}
	return true
}

// Resume continues a paused process with SIGCONT.
func (s *Server) Resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cmd.Process.Signal(syscall.SIGCONT)
}

// Restart kills the process and starts it again on the same address with the same arguments
// (its state is lost: --save 0): the port it held until the kill, as a restarted server keeps
// its configured port.
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	_, port, _ := strings.Cut(s.Addr, ":")
	s.start(port)
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

