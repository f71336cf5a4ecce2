package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluice-rl/sluice/bench/internal/proc"
	"github.com/sluice-rl/sluice/internal/resp"
)

// Starting, finding and stopping the servers under test, and reading their
// CPU time and resident memory from /proc.

// target says how to reach one kind of server: at a fixed address given by
// the user, or by starting a fresh process for every run.
type target struct {
	kind string // "sluice", "redis", "group" or "cluster"
	addr string // a running server; empty to start one
	bin  string // the binary to start when addr is empty
	dir  string // where logs of started servers go
	grp  groupTarget
	cl   clusterTarget
	// extra are more flags for a started sluice; with any, each server
	// gets a fresh --dir of its own under dir (its append-only log).
	extra []string
	// tls, if set, is how bench speaks to a started sluice that serves TLS
	// only (--port 0, --tls-port; extra has its certificate flags).
	tls *tls.Config
	// user and pass, if set, are the user the load authenticates as.
	user, pass string
	// scrape starts sluice with --metrics-bind on a port the kernel chooses and fetches
	// /metrics from it every second while it runs, as Prometheus would.
	scrape bool
	// threads, if set, returns the threading flags of a server started on
	// procs cores, in place of the kind's default (sluice: none, so one
	// event loop per GOMAXPROCS; Redis: --io-threads 1).
	threads func(procs int) []string
}

// server is one reachable server. pid is 0 when its process is unknown, and
// then CPU and memory are not reported.
type server struct {
	kind string
	addr string
	pid  int
	cmd  *exec.Cmd     // nil if bench did not start it
	done chan struct{} // closed when a started process has exited
	log  string
	// group is the replicated group this address belongs to, when bench
	// started one for the run: stopping the server stops the group. leader
	// is its leader when the run began.
	group  *group
	leader *member
	// cluster is the sharded cluster bench started for the run, and shards
	// its slot table: the load sends each key to its slot's leader, and
	// stopping the server stops the cluster.
	cluster *cluster
	shards  *slotMap
	// tls, user and pass are the target's (security.go's dial).
	tls        *tls.Config
	user, pass string
}

// started records the processes bench started, so that every exit path,
// Ctrl-C included, stops them.
var started struct {
	sync.Mutex
	list []*server
}

// stopAll stops every server bench started and has not stopped yet.
func stopAll() {
	started.Lock()
	list := started.list
	started.list = nil
	started.Unlock()
	for _, s := range list {
		s.stop()
	}
}

// open returns a server for one run: the given address, or a fresh process
// with procs as its GOMAXPROCS (0: the Go default).
func (t *target) open(ctx context.Context, procs int) (*server, error) {
	if t.addr != "" {
		s := &server{kind: t.kind, addr: t.addr, tls: t.tls, user: t.user, pass: t.pass}
		s.pid = localPID(t.addr)
		return s, nil
	}
	switch t.kind {
	case "group":
		return t.openGroup(ctx)
	case "cluster":
		return t.openCluster(ctx)
	}
	var lastErr error
	for attempt := 0; attempt < 20; attempt++ { // a drawn port may be taken: draw another
		s, err := t.start(ctx, procs)
		if err == nil {
			return s, nil
		}
		lastErr = err
		if !errors.Is(err, errPortTaken) || ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

// errPortTaken is a server's exit because the port drawn for it was taken (proc.DrawPort).
var errPortTaken = errors.New("its port was taken")

// logSeq numbers the logs of the servers bench starts.
var logSeq atomic.Int64

// start starts one server: sluice on ports it chooses itself (--port auto, --metrics-bind
// 127.0.0.1:0), read from its --ports-file; redis-server, which cannot, on a drawn port
// (an error wrapping errPortTaken when that was taken).
func (t *target) start(ctx context.Context, procs int) (*server, error) {
	var args []string
	addr, portsFile := "", ""
	logPath := filepath.Join(t.dir, fmt.Sprintf("%s-%d.log", t.kind, logSeq.Add(1)))
	switch t.kind {
	case "sluice":
		// No snapshots, as for Redis: a benchmark server starts empty and leaves nothing behind.
		dir := t.dir
		if len(t.extra) > 0 {
			var err error
			if dir, err = os.MkdirTemp(t.dir, "sluice-dir-"); err != nil {
				return nil, err
			}
		}
		portsFile = strings.TrimSuffix(logPath, ".log") + ".ports"
		args = []string{"--port", "auto", "--bind", "127.0.0.1", "--loglevel", "warning",
			"--save", "0", "--dir", dir, "--ports-file", portsFile}
		args = append(args, t.extra...)
		if t.tls != nil {
			args[1] = "0" // no plaintext port
			args = append(args, "--tls-port", "auto")
		}
		if t.scrape {
			args = append(args, "--metrics-bind", "127.0.0.1:0")
		}
	case "redis":
		port := strconv.Itoa(proc.DrawPort())
		addr = net.JoinHostPort("127.0.0.1", port)
		args = []string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--daemonize", "no", "--loglevel", "warning"}
		if t.threads == nil {
			args = append(args, "--io-threads", "1")
		}
	}
	if t.threads != nil {
		args = append(args, t.threads(procs)...)
	}
	var env []string
	if procs > 0 {
		env = append(env, "GOMAXPROCS="+strconv.Itoa(procs))
	}
	s, err := spawn(t.kind, t.bin, args, env, procs, addr, logPath)
	if err != nil {
		return nil, err
	}
	s.tls, s.user, s.pass = t.tls, t.user, t.pass
	metricsAddr := ""
	if portsFile != "" {
		ports, err := s.waitPorts(ctx, portsFile, 10*time.Second)
		if err != nil {
			s.stop()
			return nil, err
		}
		if s.addr = ports["resp"]; t.tls != nil {
			s.addr = ports["tls"]
		}
		metricsAddr = ports["metrics"]
	}
	if err := s.waitReady(ctx, 10*time.Second); err != nil {
		s.stop()
		return nil, err
	}
	if metricsAddr != "" {
		go s.scrape("http://"+metricsAddr+"/metrics", time.Second)
	}
	return s, nil
}

// waitPorts waits until the server has written its --ports-file, and returns its listeners.
func (s *server) waitPorts(ctx context.Context, path string, limit time.Duration) (map[string]string, error) {
	return waitFor(ctx, s, limit, "it was serving", func() (map[string]string, error) { return proc.ReadPortsFile(path) })
}

// waitFor polls read every 20 ms until it succeeds, and returns what it
// read. It fails at once, with the end of s's log, if s exits first, and
// after limit, saying it waited for what.
func waitFor[T any](ctx context.Context, s *server, limit time.Duration, what string, read func() (T, error)) (T, error) {
	for deadline := time.Now().Add(limit); ; time.Sleep(20 * time.Millisecond) {
		v, err := read()
		if err == nil {
			return v, nil
		}
		select {
		case <-s.done:
			return v, fmt.Errorf("%s exited before %s; its log (%s) ends with:\n%s", s.kind, what, s.log, tail(s.log))
		default:
		}
		if err := ctx.Err(); err != nil {
			return v, err
		}
		if time.Now().After(deadline) {
			return v, fmt.Errorf("%s: %v passed before %s; its log (%s) ends with:\n%s", s.kind, limit, what, s.log, tail(s.log))
		}
	}
}

// spawn starts bin with args on the servers' CPUs for procs (see cpus),
// its output in logPath, and records it in the started list so that every
// exit path stops it. addr is where it will listen for clients.
func spawn(kind, bin string, args, env []string, procs int, addr, logPath string) (*server, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	name, argv := cpus.command(bin, args, procs)
	cmd := exec.Command(name, argv...) // taskset execs bin: the pid is the server's
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = deathSignal()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	logFile.Close()
	s := &server{kind: kind, addr: addr, pid: cmd.Process.Pid, cmd: cmd, done: make(chan struct{}), log: logPath}
	go func() { cmd.Wait(); close(s.done) }()
	started.Lock()
	started.list = append(started.list, s)
	started.Unlock()
	return s, nil
}

// waitReady waits until the server answers PING. A server that exits first fails it, with
// an error wrapping errPortTaken if its log says its port was taken.
func (s *server) waitReady(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		select {
		case <-s.done:
			err := fmt.Errorf("%s exited before it was ready; its log (%s) ends with:\n%s", s.kind, s.log, tail(s.log))
			if b, _ := os.ReadFile(s.log); proc.AddrInUse(string(b)) {
				err = fmt.Errorf("%w: %w", errPortTaken, err)
			}
			return err
		default:
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if v, err := s.call(time.Second, "PING"); err == nil && v.Kind == '+' && s.answersItself() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer PING on %s within %v; log %s:\n%s", s.kind, s.addr, limit, s.log, tail(s.log))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// answersItself reports whether the redis-server answering on s.addr is the process s
// started: on a drawn port another one may answer while this one exits because it could not
// bind it. Other kinds bind ports of their own choosing, and answer true.
func (s *server) answersItself() bool {
	if s.kind != "redis" || s.pid == 0 {
		return true
	}
	v, err := s.call(time.Second, "INFO", "server")
	return err == nil && v.Kind == '$' && strings.Contains(string(v.Text), "process_id:"+strconv.Itoa(s.pid)+"\r\n")
}

// stop ends a started server: SIGTERM, then SIGKILL after 5 s. It does
// nothing for a server bench did not start.
func (s *server) stop() {
	if s.group != nil {
		s.group.stop()
		return
	}
	if s.cluster != nil {
		s.cluster.stop()
		return
	}
	if s.cmd == nil {
		return
	}
	s.forget()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
	os.Remove(s.log)
}

// kill ends a started server with SIGKILL, as a crash would, and waits for
// it to be gone. Its log is kept.
func (s *server) kill() {
	if s.cmd == nil {
		return
	}
	s.forget()
	s.cmd.Process.Kill()
	<-s.done
}

// forget takes s off the started list.
func (s *server) forget() {
	started.Lock()
	for i, o := range started.list {
		if o == s {
			started.list = append(started.list[:i], started.list[i+1:]...)
			break
		}
	}
	started.Unlock()
}

// call runs one command on a new connection and returns its reply.
func (s *server) call(timeout time.Duration, args ...string) (*resp.Value, error) {
	return s.send(timeout, resp.AppendCommand(nil, args...))
}

// send writes one encoded request on a new connection and returns the reply.
func (s *server) send(timeout time.Duration, req []byte) (*resp.Value, error) {
	return s.sendAs(timeout, req, false)
}

// sendAs is send on a connection authenticated as the load's user if
// asUser (security.go's dial).
func (s *server) sendAs(timeout time.Duration, req []byte, asUser bool) (*resp.Value, error) {
	conn, err := s.dial(timeout, asUser)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(timeout))
	if _, err := conn.Write(req); err != nil {
		return nil, err
	}
	v := new(resp.Value)
	if err := resp.Read(bufio.NewReader(conn), v); err != nil {
		return nil, err
	}
	return v, nil
}

// dbsize returns DBSIZE, or -1 if the server does not answer it.
func (s *server) dbsize() int64 {
	v, err := s.call(30*time.Second, "DBSIZE")
	if err != nil || !v.IsInt() {
		return -1
	}
	return v.Num
}

// version returns the server's version as INFO reports it.
func (s *server) version() string {
	v, err := s.call(5*time.Second, "INFO", "server")
	if err != nil || v.IsError() {
		return "unknown"
	}
	for _, field := range []string{"sluice_version:", "redis_version:"} {
		if val := infoField(v.Text, field); val != "" {
			return val
		}
	}
	return "unknown"
}

func infoField(info []byte, field string) string {
	for _, line := range bytes.Split(info, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte(field)); ok {
			return string(rest)
		}
	}
	return ""
}

// localPID finds the process behind a loopback address through INFO's
// process_id, so that CPU and memory can be read for a server bench did not
// start. It returns 0 when the server is elsewhere or /proc does not have it.
func localPID(addr string) int {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return 0
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return 0
	}
	s := &server{addr: addr}
	v, err := s.call(5*time.Second, "INFO", "server")
	if err != nil || v.IsError() {
		return 0
	}
	pid, err := strconv.Atoi(infoField(v.Text, "process_id:"))
	if err != nil {
		return 0
	}
	if _, err := proc.CPU(pid); err != nil {
		return 0
	}
	return pid
}

// tail returns the last lines of a log file.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	return strings.Join(lines, "\n")
}

// moduleRoot finds the sluice source tree: the nearest directory at or
// above dir whose go.mod declares the sluice module.
func moduleRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil &&
			bytes.Contains(b, []byte("module github.com/sluice-rl/sluice\n")) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no sluice source tree at or above %s (use -sluice host:port for a running server)", dir)
		}
	}
}

// buildSluice compiles ./cmd/sluice of the tree at root into dir.
func buildSluice(ctx context.Context, root, dir string) (string, error) {
	bin := filepath.Join(dir, "sluice")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/sluice")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/sluice: %v\n%s", err, out)
	}
	return bin, nil
}
