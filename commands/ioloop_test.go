package commands

import (
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/internal/testutil"
)

// Commands whose effect the two ways of serving clients (event loops, a
// goroutine per client) carry out differently, over real sockets.

// TestClientKill: CLIENT KILL ID closes the other client once its batch is
// done, answers 1, and leaves everyone else served; killing oneself answers
// first and then closes.
func TestClientKill(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		addr := startServer(t, testConfig{EventLoops: loops}).addr
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
		// SKIPME yes is the default: as redis-server 7.0 does, the caller is spared
		if got := killer.Do("CLIENT KILL ID " + own + "\r\n"); got != ":0" {
			t.Errorf("CLIENT KILL ID of oneself = %q; want :0 (SKIPME yes)", got)
		}
		if got := killer.Do("CLIENT KILL ID " + own + " SKIPME no\r\n"); got != ":1" {
			t.Errorf("CLIENT KILL ID of oneself SKIPME no = %q; want :1", got)
		}
		killer.Closed()
		testutil.PingsOnNewConn(t, addr)
	})
}

// TestInfoSaysHowClientsAreServed: INFO server reports the event loops in
// force, 0 for a goroutine per client.
func TestInfoSaysHowClientsAreServed(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		addr := startServer(t, testConfig{EventLoops: loops}).addr
		info := testutil.Dial(t, addr).Do("INFO server\r\n")
		want := "event_loops:" + strconv.Itoa(max(loops, 0)) + "\r\n"
		if !strings.Contains(info, want) {
			t.Fatalf("INFO server lacks %q:\n%s", want, info)
		}
	})
}
