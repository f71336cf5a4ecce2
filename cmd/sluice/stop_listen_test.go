package main

import (
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

// TestStoppedServerRefusesAClientThatReconnectsAtOnce: when a stopping
// server closes a client's connection, the client's immediate reconnect
// must be refused. Before the listener was closed ahead of the exit, the
// kernel could close the client's socket before the dying process's
// listener: the reconnect landed in that listener's backlog and was reset
// mid-handshake, and node-redis 5.9.0 then reported ready on the reset
// socket and never answered again.
func TestStoppedServerRefusesAClientThatReconnectsAtOnce(t *testing.T) {
	rounds := 30
	if testing.Short() {
		rounds = 5
	}
	for i := 0; i < rounds; i++ {
		p := start(t, "--dir", t.TempDir())
		nc, err := net.DialTimeout("tcp", p.addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 64)
		if _, err := nc.Write([]byte("PING\r\n")); err != nil {
			t.Fatal(err)
		}
		if _, err := nc.Read(buf); err != nil {
			t.Fatal(err)
		}
		p.cmd.Process.Signal(syscall.SIGTERM)
		nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := nc.Read(buf); err != io.EOF && !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("round %d: read while stopping: %v, want the connection closed", i, err)
		}
		nc.Close()
		again, err := net.DialTimeout("tcp", p.addr, 5*time.Second)
		if err == nil {
			// Accepted: by the dying listener (then reset) or by nothing at all.
			again.SetReadDeadline(time.Now().Add(5 * time.Second))
			again.Write([]byte("PING\r\n"))
			_, rerr := again.Read(buf)
			again.Close()
			t.Fatalf("round %d: a connection opened after the server closed its clients was accepted (then %v)", i, rerr)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("round %d: dial after the clients were closed: %v, want connection refused", i, err)
		}
		if code := p.exitCode(t); code != 0 {
			t.Fatalf("round %d: exit code %d\n%s", i, code, p.logText())
		}
	}
}
