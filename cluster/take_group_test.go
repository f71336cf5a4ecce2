package cluster

import (
	"context"
	"sync"
	"testing"
)

// TestTakeThroughEveryNodeGrantsExactlyCapacity: RL.TAKE is one decision
// through the log. Takes through the leader and through followers (whose
// submissions are forwarded, and whose results come back encoded with
// what was granted) together grant exactly the bucket's capacity, and
// every replica holds the same state.
func TestTakeThroughEveryNodeGrantsExactlyCapacity(t *testing.T) {
	g := newGroup(t, 3)
	const capacity = 200
	var mu sync.Mutex
	var granted int64
	var wg sync.WaitGroup
	for _, m := range g.members {
		rdb := m.client(t)
		for w := 0; w < 2; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 15; i++ {
					v, err := rdb.Do(context.Background(), "RL.TAKE", "hot", "TOKEN", "1/h", capacity, 7, "MIN", 1).Slice()
					if err != nil {
						t.Error(err)
						return
					}
					if len(v) != 6 {
						t.Errorf("RL.TAKE replied %v; want six integers", v)
						return
					}
					g := v[5].(int64)
					if (v[0] == int64(1)) != (g > 0) || g > 7 {
						t.Errorf("RL.TAKE replied %v: allowed and granted disagree", v)
					}
					mu.Lock()
					granted += g
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if granted != capacity {
		t.Fatalf("3 nodes × 2 clients × 15 takes of up to 7 granted %d; want exactly %d", granted, capacity)
	}
	g.assertSameState()
}
