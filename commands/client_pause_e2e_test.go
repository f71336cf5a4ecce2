package commands

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// CLIENT PAUSE and UNPAUSE over real sockets, with both ways of serving
// clients. Bounds are lower bounds (a paused command cannot come back
// early, whatever the load) or generous upper ones.

func TestClientPauseWriteHoldsDecisionsAndLetsReadsThrough(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		srv := startServer(t, testConfig{EventLoops: loops, RealClock: true})
		admin := srv.client(t, proto(2))
		rdb := srv.client(t, &redis.Options{Protocol: 2, DisableIndentity: true, ReadTimeout: 10 * time.Second})
		do(t, rdb, "RL.TOKEN", "k", "1/s", 10)
		if got := do(t, admin, "CLIENT", "PAUSE", 400, "WRITE"); got != "OK" {
			t.Fatalf("CLIENT PAUSE = %v", got)
		}
		start := time.Now()
		if got := do(t, rdb, "PING"); got != "PONG" { // not a write: runs at once
			t.Fatalf("PING = %v", got)
		}
		do(t, rdb, "RL.INFO", "k")
		if d := time.Since(start); d > 300*time.Millisecond {
			t.Errorf("PING and RL.INFO took %v during a WRITE pause; want them at once", d)
		}
		ctx := context.Background()
		pipe := rdb.Pipeline()
		ping := pipe.Ping(ctx)
		dec := pipe.Do(ctx, "RL.TOKEN", "k", "1/s", 10)
		echo := pipe.Echo(ctx, "after")
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < 350*time.Millisecond {
			t.Errorf("a decision during a 400 ms WRITE pause came back after %v", d)
		}
		if ping.Val() != "PONG" || echo.Val() != "after" || len(dec.Val().([]any)) != 5 {
			t.Errorf("the pipeline's replies: %v %v %v", ping.Val(), dec.Val(), echo.Val())
		}
	})
}

func TestClientUnpauseReleasesTheWaitingClients(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		srv := startServer(t, testConfig{EventLoops: loops, RealClock: true})
		admin := srv.client(t, proto(2))
		rdb := srv.client(t, &redis.Options{Protocol: 2, DisableIndentity: true, ReadTimeout: 20 * time.Second})
		if got := do(t, admin, "CLIENT", "PAUSE", 15000, "ALL"); got != "OK" {
			t.Fatalf("CLIENT PAUSE = %v", got)
		}
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- rdb.Ping(context.Background()).Err() }()
		select {
		case err := <-done:
			t.Fatalf("PING answered during an ALL pause: %v", err)
		case <-time.After(300 * time.Millisecond):
		}
		// CLIENT itself is not paused: LIST and UNPAUSE run
		do(t, admin, "CLIENT", "LIST")
		if got := do(t, admin, "CLIENT", "UNPAUSE"); got != "OK" {
			t.Fatalf("CLIENT UNPAUSE = %v", got)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second): // the pause had 14 s to go
			t.Fatalf("PING still waiting 5 s after CLIENT UNPAUSE (%v since the pause)", time.Since(start))
		}
	})
}

func TestClientPauseErrors(t *testing.T) {
	srv := startServer(t, testConfig{})
	rdb := srv.client(t, proto(2))
	for _, c := range []struct {
		args []any
		want string
	}{
		{[]any{"CLIENT", "PAUSE", "soon"}, "ERR timeout is not an integer or out of range"},
		{[]any{"CLIENT", "PAUSE", -1}, "ERR timeout is negative"},
		{[]any{"CLIENT", "PAUSE", 10, "READ"}, "ERR syntax error"},
		{[]any{"CLIENT", "PAUSE"}, "ERR wrong number of arguments for 'client|pause' command"},
		{[]any{"CLIENT", "UNPAUSE", "now"}, "ERR wrong number of arguments for 'client|unpause' command"},
	} {
		if got := doErr(t, rdb, c.args...); got != c.want {
			t.Errorf("%v = %q; want %q", c.args, got, c.want)
		}
	}
}
