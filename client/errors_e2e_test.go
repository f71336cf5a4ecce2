package client

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-rl/sluice/client/sluicetest"
)

// The server's error replies come back as typed errors that errors.Is matches, from real
// servers in the states that produce them.

func TestServerErrorsMatchTheirSentinels(t *testing.T) {
	srv := debugServer(t)
	protocols(t, srv, func(t *testing.T, c *Client, rdb *redis.Client) {
		ctx := context.Background()
		key := fmt.Sprintf("typed:%d", rdb.Options().Protocol)
		if _, err := c.Token(ctx, key, PerSecond(10), 20, 1); err != nil {
			t.Fatal(err)
		}
		_, err := c.Fixed(ctx, key, 10, time.Minute, 1)
		var se *ServerError
		var re redis.Error
		if !errors.Is(err, ErrWrongType) || !errors.As(err, &se) || !errors.As(err, &re) ||
			err.Error() != "WRONGTYPE Operation against a key holding the wrong kind of value" {
			t.Fatalf("Fixed on a token bucket: err = %v; want ErrWrongType as a *ServerError over a redis.Error", err)
		}
		_, err = c.Log(ctx, key+":log", 20000, time.Second, 1)
		if !errors.Is(err, ErrServer) || errors.Is(err, ErrWrongType) || err.Error() != "ERR limit is above log-max-limit (10000)" {
			t.Fatalf("Log above log-max-limit: err = %v; want ErrServer", err)
		}
	})
}

func TestAuthErrorsMatchTheirSentinels(t *testing.T) {
	srv := sluicetest.Start(t, "--requirepass", "secret")
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, Protocol: 2, MaxRetries: -1, DisableIndentity: true})
	defer rdb.Close()
	if _, err := New(rdb).Token(ctx, "k", PerSecond(1), 1, 1); !errors.Is(err, ErrNoAuth) {
		t.Fatalf("without a password: err = %v; want ErrNoAuth", err)
	}
	wrong := redis.NewClient(&redis.Options{Addr: srv.Addr, Protocol: 2, Password: "nope", MaxRetries: -1, DisableIndentity: true})
	defer wrong.Close()
	if _, err := New(wrong).Token(ctx, "k", PerSecond(1), 1, 1); !errors.Is(err, ErrWrongPass) {
		t.Fatalf("with a wrong password: err = %v; want ErrWrongPass", err)
	}
	right := redis.NewClient(&redis.Options{Addr: srv.Addr, Password: "secret", MaxRetries: -1, DisableIndentity: true})
	defer right.Close()
	if r, err := New(right).Token(ctx, "k", PerSecond(1), 1, 1); err != nil || !r.Allowed {
		t.Fatalf("with the password: %+v, %v", r, err)
	}
}

func TestOutOfMemoryMatchesErrOOM(t *testing.T) {
	srv := sluicetest.Start(t, "--maxmemory", "1mb")
	rdb := srv.Client(3)
	ctx := context.Background()
	// Fill the key space: a token bucket takes about 50 bytes, so 1 MB holds some 20,000.
	pipe := rdb.Pipeline()
	for i := 0; i < 40000; i++ {
		pipe.Do(ctx, "RL.TOKEN", fmt.Sprintf("fill:%d", i), "1/h", 2)
	}
	pipe.Exec(ctx)
	if _, err := New(rdb).Token(ctx, "one-more", PerHour(1), 2, 1); !errors.Is(err, ErrOOM) {
		t.Fatalf("a new key past --maxmemory: err = %v; want ErrOOM", err)
	}
}

// A node of a replicated group with no leader answers CLUSTERDOWN (nothing applied). With
// WithRetry the call keeps asking, with backoff, and is answered once a leader adds the node;
// without it the error comes back at once, typed.
func TestRetryOutlastsClusterDownUntilALeaderExists(t *testing.T) {
	a := sluicetest.Start(t, "--node-id", "na", "--raft-bind", "127.0.0.1:0")
	b := sluicetest.Start(t, "--node-id", "nb", "--raft-bind", "127.0.0.1:0", "--bootstrap", "force")
	raftA := a.Listening("raft")
	ctx := context.Background()
	rdbA, rdbB := a.Client(2), b.Client(2)

	if _, err := New(rdbA).Token(ctx, "k", PerSecond(1), 1, 1); !errors.Is(err, ErrClusterDown) {
		t.Fatalf("without a leader: err = %v; want ErrClusterDown", err)
	}

	var sleeps atomic.Int32
	c := New(rdbA, WithRetry(Retry{For: 30 * time.Second, Base: 50 * time.Millisecond, Max: 200 * time.Millisecond}),
		WithSleep(func(ctx context.Context, d time.Duration) error {
			sleeps.Add(1)
			return sleepContext(ctx, d)
		}))
	joined := make(chan error, 1)
	go func() {
		// After the first CLUSTERDOWN (about 3 s, the server's wait for a leader), nb, a
		// one-node group, adds na.
		for sleeps.Load() == 0 {
			time.Sleep(20 * time.Millisecond)
		}
		var err error
		for i := 0; i < 100; i++ {
			if err = rdbB.Do(ctx, "RAFT.JOIN", "na", raftA, a.Addr).Err(); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		joined <- err
	}()
	r, err := c.Token(ctx, "k", PerSecond(1), 1, 1)
	if jerr := <-joined; jerr != nil {
		t.Fatalf("RAFT.JOIN: %v", jerr)
	}
	if err != nil || !r.Allowed {
		t.Fatalf("Token with retries = %+v, %v; want admitted once the node has a leader\nna:\n%s\nnb:\n%s", r, err, a.Log(), b.Log())
	}
	if sleeps.Load() == 0 {
		t.Fatal("admitted without a retry: the test did not see CLUSTERDOWN")
	}
	t.Logf("admitted after %d backoffs", sleeps.Load())
}

func TestUnknownPolicyMatchesErrNoSuchPolicy(t *testing.T) {
	srv := debugServer(t)
	protocols(t, srv, func(t *testing.T, c *Client, rdb *redis.Client) {
		_, err := c.Check(context.Background(), "no-such-policy", "u1", 1)
		if !errors.Is(err, ErrNoSuchPolicy) || err.Error() != "ERR no such policy 'no-such-policy'" {
			t.Fatalf("Check of an unknown policy: err = %v; want ErrNoSuchPolicy", err)
		}
		_, err = c.CheckAll(context.Background(), 1, Policy("no-such-policy", "u1"), Policy("other", "u1"))
		if !errors.Is(err, ErrNoSuchPolicy) {
			t.Fatalf("CheckAll naming unknown policies: err = %v; want ErrNoSuchPolicy", err)
		}
	})
}
