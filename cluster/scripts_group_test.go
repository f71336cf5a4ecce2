package cluster

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/sluice-rl/sluice/compat"
)

// TestScriptsRunThroughTheLog: ulule/limiter's incr script sent to every
// node of a 3-node group (followers forward it) counts every call exactly
// once, the string commands read the counter from any node, and every
// replica ends with the same state.
func TestScriptsRunThroughTheLog(t *testing.T) {
	g := newGroup(t, 3)
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[int64]bool{}
	for _, m := range g.members {
		rdb := m.client(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				v, err := rdb.EvalSha(context.Background(), compat.UluleIncrSHA1, []string{"lim:x"}, 1, 3_600_000).Slice()
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				seen[v[0].(int64)] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for n := int64(1); n <= 30; n++ {
		if !seen[n] {
			t.Fatalf("no call got the count %d; the 30 calls got %v", n, seen)
		}
	}
	for _, m := range g.members {
		rdb := m.client(t)
		if got, err := rdb.Get(context.Background(), "lim:x").Result(); err != nil || got != "30" {
			t.Fatalf("GET through %s = %q, %v; want 30", m.id, got, err)
		}
		if got, err := rdb.Do(context.Background(), "TYPE", "lim:x").Result(); err != nil || got != "string" {
			t.Fatalf("TYPE through %s = %v, %v; want string", m.id, got, err)
		}
	}
	rdb := g.members[1].client(t)
	if err := rdb.Set(context.Background(), "plain", 5, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(rdb.Do(context.Background(), "EVALSHA", "0000000000000000000000000000000000000000", 0).Err()); got != "NOSCRIPT No matching script. Please use EVAL." {
		t.Fatalf("EVALSHA of an unknown SHA1 through a follower: %s", got)
	}
	g.assertSameState()
}
