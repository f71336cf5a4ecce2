package commands

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
)

// namedReplies is a go-redis OnConnect hook that asks for named decision
// replies, as the Go client's does.
func namedReplies(ctx context.Context, cn *redis.Conn) error {
	cmd := redis.NewStatusCmd(ctx, "CLIENT", "NAMED-REPLY", "ON")
	_ = cn.Process(ctx, cmd)
	return cmd.Err()
}

func TestNamedRepliesInRESP2AreAFlatArray(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, &redis.Options{Protocol: 2, OnConnect: namedReplies})
	got := fmt.Sprint(do(t, rdb, "RL.FIXED", "f", 2, "1m"))
	if want := "[allowed 1 limit 2 remaining 1 retry_after_ms 0 reset_after_ms 60000]"; got != want {
		t.Fatalf("RESP2 named RL.FIXED = %s; want %s", got, want)
	}
	got = fmt.Sprint(do(t, rdb, "RL.ALL", 1, "FIXED", "f", 2, "1m", "FIXED", "g", 1, "1m"))
	if want := "[allowed 1 denied_index -1 results [[allowed 1 limit 2 remaining 0 retry_after_ms 0 reset_after_ms 60000] " +
		"[allowed 1 limit 1 remaining 0 retry_after_ms 0 reset_after_ms 60000]]]"; got != want {
		t.Fatalf("RESP2 named RL.ALL = %s; want %s", got, want)
	}
	// CL.THROTTLE keeps redis-cell's five integers whatever the setting.
	if got := fmt.Sprint(do(t, rdb, "CL.THROTTLE", "c", 1, 1, 60)); got != "[0 2 1 -1 60]" {
		t.Fatalf("CL.THROTTLE with named replies = %s; want redis-cell's integers", got)
	}
}
