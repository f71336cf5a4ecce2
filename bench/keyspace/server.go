package main

import (
	"bufio"
	"errors"
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

// startServer starts bin with the arguments args gives for a port and waits until it
// answers PING. With portsFile set (sluice), the port is "auto" and the address is read from
// the --ports-file the arguments name; else (redis-server) the port is drawn, and another is
// drawn when the server exits because it was taken (up to 20 times).
func startServer(bin string, args func(port string) []string, env []string, portsFile string) (*server, error) {
	if portsFile != "" {
		return tryServer(bin, args("auto"), env, "", portsFile)
	}
	var err error
	for attempt := 0; attempt < 20; attempt++ {
		port := strconv.Itoa(proc.DrawPort())
		var s *server
		if s, err = tryServer(bin, args(port), env, "127.0.0.1:"+port, ""); err == nil {
			return s, nil
		}
		if !errors.Is(err, errPortTaken) {
			break
		}
	}
	return nil, err
}

// errPortTaken is a server's exit because the port drawn for it was taken.
var errPortTaken = errors.New("its port was taken")

func tryServer(bin string, argv, env []string, addr, portsFile string) (*server, error) {
	if portsFile != "" {
		if err := os.Remove(portsFile); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	s := &server{addr: addr, done: make(chan struct{})}
	s.cmd = exec.Command(bin, argv...)
	s.cmd.Env = append(os.Environ(), env...)
	out, _ := s.cmd.StderrPipe()
	s.cmd.Stdout = s.cmd.Stderr
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go s.read(bufio.NewScanner(out))
	deadline := time.Now().Add(15 * time.Second)
	for {
		if s.addr == "" {
			if ports, err := proc.ReadPortsFile(portsFile); err == nil {
				s.addr = ports["resp"]
			}
		}
		if s.addr != "" && s.answers() {
			return s, nil
		}
		select {
		case <-s.done:
			s.mu.Lock()
			tail := strings.Join(s.tail, " | ")
			s.mu.Unlock()
			err := fmt.Errorf("%s exited: %s", bin, tail)
			if proc.AddrInUse(tail) {
				err = fmt.Errorf("%w: %w", errPortTaken, err)
			}
			return nil, err
		default:
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("%s did not answer PING in 15s", bin)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// answers reports whether the process answers PING on s.addr, and is the one that answers:
// on a drawn port another server may answer while this one exits because it could not bind
// the port (INFO server's process_id tells).
func (s *server) answers() bool {
	c, err := dial(s.addr)
	if err != nil {
		return false
	}
	defer c.close()
	if _, err := c.do("PING"); err != nil {
		return false
	}
	info, err := c.info("server")
	return err == nil && info["process_id"] == strconv.Itoa(s.cmd.Process.Pid)
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
