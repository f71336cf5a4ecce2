// Command goredis is the client matrix's cluster script for the newest
// go-redis (go.mod here pins it; the repository's own go.mod pins the
// version the product builds with): a ClusterClient seeded with
// 127.0.0.1:$SLUICE_PORT takes each key of $SLUICE_KEYS (comma-separated)
// of capacity 5 seven times, decides RL.CHECK $SLUICE_POLICY on each key
// (its subject) seven times if the policy is named (a TOKEN policy of
// capacity 5), and prints "RESULT admitted=<n> slots=<ranges>", then
// "MOVED <n>", the MOVED replies its node clients received. It exits
// non-zero with a message on the first wrong result.
package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

type movedHook struct{ n atomic.Int64 }

func (h *movedHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *movedHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err != nil && strings.HasPrefix(err.Error(), "MOVED ") {
			h.n.Add(1)
		}
		return err
	}
}

func (h *movedHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

// sevenTakes runs args seven times and returns how many were admitted,
// failing on a wrong remaining count.
func sevenTakes(ctx context.Context, cc *redis.ClusterClient, args ...any) int64 {
	var admitted int64
	for i := range 7 {
		v, err := cc.Do(ctx, args...).Int64Slice()
		if err != nil {
			fail("%v take %d: %v", args, i+1, err)
		}
		if want := int64(max(0, 4-i)); len(v) != 5 || v[2] != want {
			fail("%v take %d = %v; want %d remaining", args, i+1, v, want)
		}
		admitted += v[0]
	}
	if admitted != 5 {
		fail("%v: a limit of capacity 5 taken 7 times admitted %d", args, admitted)
	}
	return admitted
}

func main() {
	ctx := context.Background()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:" + os.Getenv("SLUICE_PORT")}})
	defer cc.Close()
	h := &movedHook{}
	cc.OnNewNode(func(rdb *redis.Client) { rdb.AddHook(h) })
	// Warm the command table, whose key positions route the RL.*
	// commands whose key is not argument 1.
	if err := cc.Ping(ctx).Err(); err != nil {
		fail("PING: %v", err)
	}
	if _, err := cc.Command(ctx).Result(); err != nil {
		fail("COMMAND: %v", err)
	}
	var admitted int64
	keys := strings.Split(os.Getenv("SLUICE_KEYS"), ",")
	for _, k := range keys {
		admitted += sevenTakes(ctx, cc, "RL.TOKEN", k, "1/h", 5)
	}
	if pol := os.Getenv("SLUICE_POLICY"); pol != "" {
		for _, k := range keys {
			admitted += sevenTakes(ctx, cc, "RL.CHECK", pol, k)
		}
	}
	slots, err := cc.ClusterSlots(ctx).Result()
	if err != nil {
		fail("CLUSTER SLOTS: %v", err)
	}
	sort.Slice(slots, func(i, j int) bool { return slots[i].Start < slots[j].Start })
	var ranges []string
	for _, s := range slots {
		ranges = append(ranges, fmt.Sprintf("%d-%d:%d", s.Start, s.End, len(s.Nodes)))
	}
	fmt.Printf("RESULT admitted=%d slots=%s\n", admitted, strings.Join(ranges, ","))
	fmt.Printf("MOVED %d\n", h.n.Load())
}
