package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
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

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// startServer starts bin with the arguments args gives for a free port and
// waits until it answers PING.
func startServer(bin string, args func(port int) []string, env []string) (*server, error) {
	port, err := freePort()
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

// rss returns the process's resident set size from /proc.
func (s *server) rss() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
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
