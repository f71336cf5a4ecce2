package testutil

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/childproc"
)

// Sluice is one sluice process started by Start. Its methods may be called from any
// goroutine of the test.
type Sluice struct {
	// Addr is the RESP listener's host:port; it stays the same across Restart.
	Addr string
	// Dir is the process's --dir, the test's own.
	Dir string

	t    testing.TB
	args []string

	mu    sync.Mutex
	cmd   *exec.Cmd
	done  chan struct{}
	log   strings.Builder
	ports map[string]string // from the ports file, by listener
}

// Start runs the binary of Binary with --bind 127.0.0.1, a --dir of the test's own and
// --port auto, then args (later flags win), and returns once every listener serves, as its
// --ports-file says. A process that exits before fails the test at once with its log. It is
// killed when the test ends (Stop ends it first, as an operator does).
func Start(t testing.TB, args ...string) *Sluice {
	t.Helper()
	s := &Sluice{t: t, args: args, Dir: t.TempDir()}
	s.start("auto")
	t.Cleanup(s.Kill)
	return s
}

func (s *Sluice) start(port string) {
	s.t.Helper()
	portsFile := filepath.Join(s.Dir, "sluice.ports")
	if err := os.Remove(portsFile); err != nil && !os.IsNotExist(err) {
		s.t.Fatal(err)
	}
	argv := []string{"--bind", "127.0.0.1", "--dir", s.Dir, "--ports-file", portsFile}
	if !slices.Contains(s.args, "--port") {
		argv = append(argv, "--port", port)
	}
	argv = append(argv, s.args...)
	cmd := exec.Command(Binary(s.t), argv...)
	childproc.KillWithParent(cmd)
	out, err := cmd.StderrPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr // one pipe, read in order
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	done := make(chan struct{})
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	go func() {
		s.copyLog(out)
		cmd.Wait()
		close(done)
	}()
	// The ports file is written once every listener serves.
	for deadline := time.Now().Add(15 * time.Second); ; {
		if b, err := os.ReadFile(portsFile); err == nil {
			ports := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				if name, addr, ok := strings.Cut(line, " "); ok {
					if _, seen := ports[name]; !seen {
						ports[name] = addr
					}
				}
			}
			s.mu.Lock()
			s.ports = ports
			s.Addr = ports["resp"]
			s.mu.Unlock()
			return
		}
		select {
		case <-done:
			s.t.Fatalf("sluice %s exited before it was serving (%v):\n%s", strings.Join(argv, " "), cmd.ProcessState, s.Log())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-done
			s.t.Fatalf("sluice %s wrote no ports file in 15 s:\n%s", strings.Join(argv, " "), s.Log())
		}
	}
}

func (s *Sluice) copyLog(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		s.mu.Lock()
		s.log.WriteString(sc.Text() + "\n")
		s.mu.Unlock()
	}
	io.Copy(io.Discard, r) // a line over 1 MiB: keep the pipe drained
}

// Listening returns the address of one of the process's listeners by its name in the
// --ports-file: "resp", "tls", "raft", "grpc" or "metrics" ("" if it has none).
func (s *Sluice) Listening(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ports[name]
}

// Log returns what the process has written to stdout and stderr so far, across restarts.
func (s *Sluice) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// Pid is the running process's id.
func (s *Sluice) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd.Process.Pid
}

// Exited is closed once the running process has exited and its log is read.
func (s *Sluice) Exited() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}

// ExitCode is the process's exit code once Exited is closed (-1 for a signal).
func (s *Sluice) ExitCode() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd.ProcessState.ExitCode()
}

// Signal sends sig to the running process.
func (s *Sluice) Signal(sig os.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cmd.Process.Signal(sig)
}

// Kill ends the process with SIGKILL (resuming it first if paused) and waits for it. Killing a
// process that has exited does nothing.
func (s *Sluice) Kill() {
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

// Stop ends the process as an operator does, with SIGTERM (a save, then the listeners close
// before the clients), and waits for it; one still running after 10 s is killed. It reports
// whether the process ended on the SIGTERM.
func (s *Sluice) Stop() bool {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
		return true
	case <-time.After(10 * time.Second):
		s.Kill()
		return false
	}
}

// Pause stops the process with SIGSTOP: its port still accepts connections (the kernel does)
// but nothing is answered, as with a server stalled by the machine. It returns once every
// thread is stopped (where /proc shows it, for at most 5 s): the signal is delivered
// asynchronously, and a busy thread may answer a command or two after kill(2) returns.
func (s *Sluice) Pause() {
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
func (s *Sluice) Resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cmd.Process.Signal(syscall.SIGCONT)
}

// Restart kills the process and starts it again with the same arguments, directory and RESP
// address: the port it held until the kill, as a restarted server keeps its configured port.
func (s *Sluice) Restart() {
	s.t.Helper()
	s.Kill()
	s.Start()
}

// Start starts the process again after Kill or Stop on the same RESP address, with the same
// arguments and directory.
func (s *Sluice) Start() {
	s.t.Helper()
	_, port, _ := strings.Cut(s.Addr, ":")
	s.start(port)
}
