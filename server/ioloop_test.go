package server

import (
	"bufio"
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/testutil"
)

// What the two ways of serving clients (event loops, a goroutine per
// client) must do alike, over real sockets.

// TestClientKill: CLIENT KILL ID closes the other client once its batch is
// done, answers 1, and leaves everyone else served; killing oneself answers
// first and then closes.
func TestClientKill(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		_, addr := startServer(t, Config{EventLoops: loops}, nil)
		killer, victim := testutil.Dial(t, addr), testutil.Dial(t, addr)
		id := strings.TrimPrefix(victim.Do("CLIENT ID\r\n"), ":")
		if got := killer.Do("CLIENT KILL ID " + id + "\r\n"); got != ":1" {
			t.Fatalf("CLIENT KILL ID %s = %q; want :1", id, got)
		}
		victim.Closed()
		if got := killer.Do("CLIENT KILL ID 999999\r\n"); got != ":0" {
			t.Errorf("CLIENT KILL of an unknown id = %q; want :0", got)
		}
		own := strings.TrimPrefix(killer.Do("CLIENT ID\r\n"), ":")
		if got := killer.Do("CLIENT KILL ID " + own + "\r\n"); got != ":1" {
			t.Errorf("CLIENT KILL of oneself = %q; want :1", got)
		}
		killer.Closed()
		testutil.PingsOnNewConn(t, addr)
	})
}

// TestSlowReaderGetsEveryReplyInOrder: replies far larger than the socket's
// buffers reach a client that reads them slowly, complete and in order,
// while other clients are answered promptly all along: the server never
// blocks on one client.
func TestSlowReaderGetsEveryReplyInOrder(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		_, addr := startServer(t, Config{EventLoops: loops}, nil)
		slow := testutil.Dial(t, addr)
		slow.NC.(*net.TCPConn).SetReadBuffer(64 << 10)
		const n = 8000
		payload := strings.Repeat("p", 2000) // 16 MB of replies in all
		var req strings.Builder
		for i := range n {
			s := strconv.Itoa(i) + payload
			req.WriteString("*2\r\n$4\r\nECHO\r\n$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n")
		}
		go func() { // the requests are larger than the socket buffers too
			slow.NC.SetWriteDeadline(time.Now().Add(20 * time.Second))
			slow.NC.Write([]byte(req.String()))
		}()

		stop := make(chan struct{})
		var wg sync.WaitGroup
		var worst time.Duration
		var pingErr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				pingErr = err
				return
			}
			defer nc.Close()
			r := bufio.NewReader(nc)
			for {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				nc.SetDeadline(time.Now().Add(5 * time.Second))
				nc.Write([]byte("PING\r\n"))
				if line, err := r.ReadString('\n'); err != nil || line != "+PONG\r\n" {
					pingErr = err
					return
				}
				worst = max(worst, time.Since(start))
				time.Sleep(5 * time.Millisecond)
			}
		}()

		r := bufio.NewReaderSize(slow.NC, 1024)
		for i := range n {
			if i%200 == 0 {
				time.Sleep(10 * time.Millisecond) // a slow reader
			}
			slow.NC.SetReadDeadline(time.Now().Add(10 * time.Second))
			got, err := testutil.ReadReply(r)
			if err != nil {
				t.Fatalf("reply %d: %v", i, err)
			}
			if want := "$" + strconv.Itoa(i) + payload; got != want {
				t.Fatalf("reply %d = %q…; want %q…", i, testutil.Clip(got), testutil.Clip(want))
			}
		}
		close(stop)
		wg.Wait()
		if pingErr != nil {
			t.Fatalf("another client while the slow one read: %v", pingErr)
		}
		if worst > time.Second {
			t.Errorf("another client waited %v for a PONG while the slow one read", worst)
		}
		t.Logf("slowest PONG meanwhile: %v", worst)
	})
}

// TestShutdownClosesEveryClient: Shutdown returns promptly with clients
// connected, idle or in the middle of a pipeline, and closes them all.
func TestShutdownClosesEveryClient(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv, err := New(testConfig(Config{EventLoops: loops}), &fakeHandler{})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ln) }()
		addr := ln.Addr().String()
		conns := testutil.DialAnswering(t, addr, 6)
		conns[0].Send(strings.Repeat("DEFER 10/s\r\n", 500)) // replies nobody reads
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		if err := srv.Shutdown(ctx); err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		if err := <-done; err != nil {
			t.Fatalf("Serve after Shutdown: %v", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("Shutdown took %v", d)
		}
		for i, c := range conns {
			c.NC.SetReadDeadline(time.Now().Add(3 * time.Second))
			buf := make([]byte, 64<<10)
			for {
				if _, err := c.NC.Read(buf); err != nil {
					if ne, ok := err.(net.Error); ok && ne.Timeout() {
						t.Errorf("client %d still open after Shutdown", i)
					}
					break
				}
			}
		}
		if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			t.Errorf("the listener still accepts after Shutdown")
		}
	})
}
