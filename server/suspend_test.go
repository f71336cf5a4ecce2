package server

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/testutil"
)

// Suspended batches (Conn.Suspend) and batches handed to a goroutine
// (Conn.HandOff), over real sockets.

// TestSuspendedBatchesAnswerInCommandOrder: pipelines that mix work done
// on another goroutine (LATER), a command handed off (BLOCK), deferred
// work (DEFER) and plain replies, from several clients at once, get every
// reply in command order, and no command of a connection runs while its
// earlier work is out.
func TestSuspendedBatchesAnswerInCommandOrder(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		h := &fakeHandler{}
		_, addr := startServer(t, Config{EventLoops: loops}, h)
		pipeline := "LATER a\r\nLATER b\r\nPING\r\nDEFER d\r\nLATER c\r\nBLOCK\r\n" +
			"*2\r\n$5\r\nLATER\r\n$1\r\nf\r\n*2\r\n$4\r\nECHO\r\n$1\r\ne\r\nLATER g\r\n"
		want := []string{"$later:a", "$later:b", "+PONG", "[:1 $d]", "$later:c", "+blocked lane=-1",
			"$later:f", "$e", "$later:g"}
		var wg sync.WaitGroup
		for range 6 {
			cl := testutil.Dial(t, addr)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 40 {
					cl.NC.Write([]byte(pipeline))
					for i, w := range want {
						got, err := testutil.ReadReply(cl.R)
						if err != nil || got != w {
							t.Errorf("reply %d = %q, %v; want %q", i, got, err, w)
							return
						}
					}
				}
			}()
		}
		wg.Wait()
		if n := h.interleaved.Load(); n != 0 {
			t.Errorf("%d commands ran while their connection's earlier work was out; want 0", n)
		}
	})
}

// TestSuspendedClientLeavesItsLoopServing: while one client's batch waits
// for its work (and another's runs on a goroutine), the one event loop
// they share answers a third client; the waiting client gets its reply
// once the work is done, and is served as before afterwards.
func TestSuspendedClientLeavesItsLoopServing(t *testing.T) {
	h := &fakeHandler{gate: make(chan struct{})}
	_, addr := startServer(t, Config{EventLoops: 1}, h)
	waiting, other := testutil.Dial(t, addr), testutil.Dial(t, addr)
	waiting.Send("LATER x\r\nPING\r\n")
	if got := other.Do("PING\r\n"); got != "+PONG" {
		t.Fatalf("PING while another client's batch waits = %q; want +PONG", got)
	}
	if got := other.Do("BLOCK\r\n"); got != "+blocked lane=-1" {
		t.Fatalf("BLOCK while another client's batch waits = %q; want +blocked lane=-1", got)
	}
	h.gate <- struct{}{}
	for _, w := range []string{"$later:x", "+PONG"} {
		if got := waiting.Reply(); got != w {
			t.Fatalf("reply of the resumed batch = %q; want %q", got, w)
		}
	}
	if got := waiting.Do("ECHO again\r\n"); got != "$again" {
		t.Fatalf("ECHO after the resumed batch = %q; want $again", got)
	}
}

// TestKillWaitsForTheSuspendedBatch: CLIENT KILL of a client whose batch
// waits closes it once the batch is done, after its replies.
func TestKillWaitsForTheSuspendedBatch(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		h := &fakeHandler{gate: make(chan struct{}), suspended: make(chan struct{}, 1)}
		_, addr := startServer(t, Config{EventLoops: loops}, h)
		victim, killer := testutil.Dial(t, addr), testutil.Dial(t, addr)
		id := strings.TrimPrefix(victim.Do("CLIENT ID\r\n"), ":")
		victim.Send("LATER x\r\n")
		select { // the kill must find the batch waiting, not still unread
		case <-h.suspended:
		case <-time.After(10 * time.Second):
			t.Fatal("the LATER batch was not suspended within 10 s")
		}
		if got := killer.Do("CLIENT KILL ID " + id + "\r\n"); got != ":1" {
			t.Fatalf("CLIENT KILL ID %s = %q; want :1", id, got)
		}
		close(h.gate)
		if got := victim.Reply(); got != "$later:x" {
			t.Fatalf("reply of the killed client's batch = %q; want $later:x", got)
		}
		victim.Closed()
		testutil.PingsOnNewConn(t, addr)
	})
}
