package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluice-rl/sluice/bench/internal/proc"
)

// server is a process the tool started on a loopback port.
type server struct {
	cmd  *exec.Cmd
	addr string
	done chan struct{}

	mu     sync.Mutex
	gcList []gc
	tail   []string // last lines of output, for errors
}

// gc is one garbage collection cycle from the server's gctrace.
type gc struct {
	stopUS float64 // the two stop-the-world phases added up, µs
	wallMS float64 // the whole cycle, ms
}

// startServer starts bin with the arguments args gives for a free port and
// waits until it answers PING.
func startServer(bin string, args func(port int) []string, env []string) (*server, error) {
	port, err := proc.FreePort()
	if err != nil {
		return nil, err
	}
	s := &server{addr: fmt.Sprintf("127.0.0.1:%d", port), done: make(chan struct{})}
	s.cmd = exec.Command(bin, args(port)...)
	s.cmd.Env = append(os.Environ(), env...)
	out, _ := s.cmd.StderrPipe()
	s.cmd.Stdout = s.cmd.Stderr
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go s.read(bufio.NewScanner(out))
	deadline := time.Now().Add(15 * time.Second)
	for {
		if c, err := dial(s.addr); err == nil {
			_, err = c.do("PING")
			c.close()
			if err == nil {
				return s, nil
			}
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("%s exited: %s", bin, strings.Join(s.tail, " | "))
		default:
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("%s did not answer PING in 15s", bin)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// gctrace's line: gc 3 @0.1s 0%: 0.011+0.42+0.003 ms clock, ...
var gcLine = regexp.MustCompile(`^gc \d+ @[\d.]+s \d+%: ([\d.]+)\+([\d.]+)\+([\d.]+) ms clock`)

func (s *server) read(sc *bufio.Scanner) {
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		s.mu.Lock()
		if m := gcLine.FindStringSubmatch(line); m != nil {
			a, _ := strconv.ParseFloat(m[1], 64)
			b, _ := strconv.ParseFloat(m[2], 64)
			c, _ := strconv.ParseFloat(m[3], 64)
			s.gcList = append(s.gcList, gc{stopUS: (a + c) * 1000, wallMS: a + b + c})
		} else {
			s.tail = append(s.tail, line)
			if len(s.tail) > 20 {
				s.tail = s.tail[1:]
			}
		}
		s.mu.Unlock()
	}
	s.cmd.Wait()
	close(s.done)
}

// gcs returns the GC cycles seen so far.
func (s *server) gcs() []gc {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]gc(nil), s.gcList...)
}

// rss returns the process's resident set size (VmRSS), 0 if unreadable.
func (s *server) rss() int64 {
	v, _ := proc.RSS(s.cmd.Process.Pid)
	return v
}

// stop sends SIGTERM, waits up to 30 s, then kills.
func (s *server) stop() {
	select {
	case <-s.done:
		return
	default:
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
}
