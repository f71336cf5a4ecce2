package clients

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestGoRedis runs go-redis v9 at RESP2 and RESP3 through the same
// script as the other clients.
func TestGoRedis(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			s := startServer(t)
			ctx := context.Background()
			rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + s.port, Protocol: proto,
				DisableIndentity: true, MaxRetries: 20, MinRetryBackoff: 20 * time.Millisecond})
			defer rdb.Close()
			tag := fmt.Sprintf("go-redis:%d", proto)

			// Decisions.
			first, err := rdb.Do(ctx, "RL.TOKEN", tag+":dec", "10/s", 20).Int64Slice()
			if err != nil || fmt.Sprint(first) != "[1 20 19 0 100]" {
				t.Fatalf("RL.TOKEN = %v, %v", first, err)
			}
			raw, _ := rdb.Do(ctx, "RL.TOKEN", tag+":dec", "10/s", 20, 0).Result()
			if _, ok := raw.([]any); !ok {
				t.Fatalf("the raw reply is %T; want []any", raw)
			}
			rdb.Do(ctx, "RL.TOKEN", tag+":deny", "1/h", 1)
			denied, err := rdb.Do(ctx, "RL.TOKEN", tag+":deny", "1/h", 1).Int64Slice()
			if err != nil || fmt.Sprint(denied[:3]) != "[0 1 0]" || denied[3] <= 3590000 || denied[3] > 3600000 {
				t.Fatalf("a denial = %v, %v", denied, err)
			}

			// A pipeline.
			cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				for i := 0; i < 5; i++ {
					p.Do(ctx, "RL.FIXED", tag+":pipe", 3, "1h")
				}
				return nil
			})
			if got := firstThree(cmds); err != nil || got != "[[1 3 2] [1 3 1] [1 3 0] [0 3 0] [0 3 0]]" {
				t.Fatalf("pipeline = %s, %v", got, err)
			}

			// Transactions.
			cmds, err = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
				for i := 0; i < 3; i++ {
					p.Do(ctx, "RL.FIXED", tag+":tx", 2, "1h")
				}
				return nil
			})
			if got := firstThree(cmds); err != nil || got != "[[1 2 1] [1 2 0] [0 2 0]]" {
				t.Fatalf("MULTI/EXEC = %s, %v", got, err)
			}
			_, err = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Do(ctx, "RL.FIXED", tag+":abort", 2, "1h")
				p.Do(ctx, "RL.TOKEN", tag+":abort2", "ten/s", 2)
				return nil
			})
			if err == nil || !strings.HasPrefix(err.Error(), "EXECABORT") {
				t.Fatalf("a transaction with a queueing error = %v; want EXECABORT", err)
			}
			if n := rdb.Exists(ctx, tag+":abort", tag+":abort2").Val(); n != 0 {
				t.Fatalf("EXISTS after EXECABORT = %d", n)
			}

			// Errors.
			if err := rdb.Do(ctx, "RL.TOKEN", tag+":dec", "10/s").Err(); err == nil ||
				err.Error() != "ERR wrong number of arguments for 'rl.token' command" {
				t.Fatalf("arity: %v", err)
			}
			if err := rdb.Do(ctx, "RL.TOKEN", tag+":tx", "10/s", 20).Err(); err == nil ||
				err.Error() != "WRONGTYPE Operation against a key holding the wrong kind of value" {
				t.Fatalf("WRONGTYPE: %v", err)
			}

			// A reconnect after the server restarts.
			s.restart()
			var after []int64
			for i := 0; i < 100; i++ {
				after, err = rdb.Do(ctx, "RL.TOKEN", tag+":after", "10/s", 20).Int64Slice()
				if err == nil || !isConnErr(err) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if err != nil || fmt.Sprint(after) != "[1 20 19 0 100]" {
				t.Fatalf("RL.TOKEN after the restart = %v, %v", after, err)
			}
			t.Logf("proto=%d decision=%v denial=%v", proto, first, denied[:3])
		})
	}
}

func firstThree(cmds []redis.Cmder) string {
	var out [][]int64
	for _, c := range cmds {
		v, err := c.(*redis.Cmd).Int64Slice()
		if err != nil || len(v) < 3 {
			return fmt.Sprint("error: ", err)
		}
		out = append(out, v[:3])
	}
	return fmt.Sprint(out)
}

func isConnErr(err error) bool {
	var re redis.Error
	return !errors.As(err, &re)
}
