package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-rl/sluice/process"
)

// inproc is a sluice server run inside the test binary through
// process.Open, the same type the binary runs, for the tests that need no
// process of their own: no signals, exit codes, kill -9 or resident size.
type inproc struct {
	p    *process.Process
	addr string // the first RESP address
	log  *lockedBuffer
}

// startIn runs a server on a free loopback port (--port auto) with args,
// as start does, inside the test binary; it is stopped when the test ends.
func startIn(t *testing.T, args ...string) *inproc {
	t.Helper()
	return startInArgv(t, append([]string{"--port", "auto", "--bind", "127.0.0.1"}, args...))
}

// startInArgv runs a server with exactly argv (a config file first, then
// flags), as startArgv does, inside the test binary.
func startInArgv(t *testing.T, argv []string) *inproc {
	t.Helper()
	opts, err := process.ParseArgs(argv)
	if err != nil {
		t.Fatal(err)
	}
	s := &inproc{log: &lockedBuffer{}}
	opts.LogOutput = s.log
	if s.p, err = process.Open(opts); err != nil {
		t.Fatalf("the server did not start: %v\n%s", err, s.log)
	}
	if s.addr = s.p.Addr(); s.addr == "" {
		t.Fatalf("the server reports no RESP address: %v", s.p.Addrs())
	}
	go s.p.Serve()
	t.Cleanup(s.stop)
	return s
}

// stop shuts the server down as SIGTERM does and waits for the end (at
// most 10 s).
func (s *inproc) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.p.Shutdown(ctx)
}

// port is the server's RESP port.
func (s *inproc) port() string { return s.addr[strings.LastIndexByte(s.addr, ':')+1:] }

// clientOf is a RESP2 client of s, closed when the test ends.
func clientOf(t *testing.T, s *inproc) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: s.addr, Protocol: 2, DisableIndentity: true})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}
