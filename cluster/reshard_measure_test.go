package cluster

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/keyslot"
)

// TestMigrateMeasure measures a migration of 1000 slots holding the share
// of 1M keys that falls in them (about 61k): its duration, the longest
// call a client sees on the moving range, and the decisions per second on
// other slots before and during it. It asserts nothing about time; it
// runs only with SLUICE_RESHARD_MEASURE=1.
func TestMigrateMeasure(t *testing.T) {
	if os.Getenv("SLUICE_RESHARD_MEASURE") == "" {
		t.Skip("set SLUICE_RESHARD_MEASURE=1 to measure a migration")
	}
	procs := newShardedCluster(t)
	cc := newLoadClient(procs)
	defer cc.Close()
	ctx := context.Background()
	const keysTotal = 1_000_000
	var moving []string
	for i := 0; i < keysTotal; i++ {
		k := fmt.Sprintf("m:%d", i)
		if keyslot.Of([]byte(k)) < 1000 {
			moving = append(moving, k)
		}
	}
	start := time.Now()
	for i := 0; i < len(moving); i += 2000 {
		pipe := cc.Pipeline()
		for _, k := range moving[i:min(i+2000, len(moving))] {
			pipe.Do(ctx, "RL.TOKEN", k, "1/h", 100)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d keys in slots 0-999 loaded in %v", len(moving), time.Since(start).Round(time.Millisecond))

	// Steady load: 2 clients on a moving key, 4 on group 2's slots.
	var stop atomic.Bool
	var other atomic.Int64
	var maxPause atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				t0 := time.Now()
				if err := cc.Do(ctx, "RL.TOKEN", moving[(w*7919+i)%len(moving)], "1/h", 100).Err(); err != nil {
					t.Errorf("moving key: %v", err)
					return
				}
				if d := int64(time.Since(t0)); d > maxPause.Load() {
					maxPause.Store(d)
				}
			}
		}(w)
	}
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				k := fmt.Sprintf("{o%d}:%d", w, i%100)
				if err := cc.Do(ctx, "RL.TOKEN", k, "1000/s", 1000).Err(); err != nil {
					t.Errorf("other key: %v", err)
					return
				}
				other.Add(1)
			}
		}(w)
	}
	time.Sleep(time.Second)
	before, t0 := other.Load(), time.Now()
	time.Sleep(2 * time.Second)
	rateBefore := float64(other.Load()-before) / time.Since(t0).Seconds()
	maxPause.Store(0)

	during, t1 := other.Load(), time.Now()
	e := migrate(t, cc, "0-999", 2, "TIMEOUT", 60000)
	if st := waitMigration(t, procs, e, 120*time.Second); st != MigrationCommitted {
		t.Fatalf("migration: %v", st)
	}
	wall := time.Since(t1)
	rateDuring := float64(other.Load()-during) / wall.Seconds()
	time.Sleep(500 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	m, _ := procs[0].meta.migration(e)
	t.Logf("migration of 1000 slots, %d keys: %v recorded to committed (%v from SLUICE.MIGRATE to every replica's record); "+
		"longest call on a moving key %v; other slots %.0f decisions/s before, %.0f during",
		len(moving), time.Duration(m.Finished-m.Started).Round(time.Millisecond), wall.Round(time.Millisecond),
		time.Duration(maxPause.Load()).Round(time.Millisecond), rateBefore, rateDuring)
}
