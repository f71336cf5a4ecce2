package testutil

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// A sluice started by Start serves RESP on the address it reported, and Restart brings it
// back on that address.
func TestStartServesAndRestartsOnItsAddress(t *testing.T) {
	s := Start(t, "--save", "0")
	if got := Dial(t, s.Addr).Do("PING\r\n"); got != "+PONG" {
		t.Fatalf("PING = %q; want +PONG", got)
	}
	addr := s.Addr
	s.Restart()
	if s.Addr != addr {
		t.Fatalf("restarted on %s; want %s", s.Addr, addr)
	}
	PingsOnNewConn(t, s.Addr)
}

// A sluice that exits before it serves fails the test with its log (here: an unknown flag).
func TestStartReportsAnEarlyExitWithTheLog(t *testing.T) {
	Binary(t)
	ft := &fatalT{TB: t}
	done := make(chan struct{})
	go func() { defer close(done); Start(ft, "--no-such-flag") }()
	<-done
	if !strings.Contains(ft.msg, "exited before it was serving") || !strings.Contains(ft.msg, `unknown option "no-such-flag"`) {
		t.Fatalf("failure = %q; want the early exit and the log naming the flag", ft.msg)
	}
}

// fatalT records a Fatalf and ends its goroutine, as testing.T does.
type fatalT struct {
	testing.TB
	msg string
}

func (f *fatalT) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// Binary builds once per process: a second call returns the same path.
func TestBinaryIsBuiltOnce(t *testing.T) {
	if a, b := Binary(t), Binary(t); a != b {
		t.Fatalf("Binary = %s, then %s", a, b)
	}
}

// StartRedis serves on its socket and reports its version.
func TestStartRedisOnASocket(t *testing.T) {
	r := StartRedis(t)
	if r.Network != "unix" || r.Major == 0 {
		t.Fatalf("redis %s %s, version %q", r.Network, r.Addr, r.Version)
	}
	if got := Dial(t, r.Addr).Do("PING\r\n"); got != "+PONG" {
		t.Fatalf("PING = %q", got)
	}
}

// StartRedisTCP, drawing a port another redis-server holds, draws again: the second server
// has a port of its own, and the first still answers on its own.
func TestStartRedisTCPDrawsAgainWhenThePortIsTaken(t *testing.T) {
	first := StartRedisTCP(t)
	_, taken, _ := strings.Cut(first.Addr, ":")
	draws := 0
	orig := drawPort
	t.Cleanup(func() { drawPort = orig })
	drawPort = func() int {
		draws++
		if draws == 1 {
			p, _ := strconv.Atoi(taken)
			return p
		}
		return orig()
	}
	second := StartRedisTCP(t)
	if second.Addr == first.Addr || draws < 2 {
		t.Fatalf("second redis-server on %s after %d draws; the first is on %s", second.Addr, draws, first.Addr)
	}
	for _, r := range []*Redis{first, second} {
		if got := Dial(t, r.Addr).Do("PING\r\n"); got != "+PONG" {
			t.Fatalf("PING %s = %q", r.Addr, got)
		}
	}
}
