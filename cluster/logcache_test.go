package cluster

import (
	"strconv"
	"sync"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/sluice-rl/sluice/commands"
)

// readCounter is a log store that counts the entries read back from it
// above an index.
type readCounter struct {
	raft.LogStore
	mu    sync.Mutex
	above uint64
	reads int
}

func (r *readCounter) GetLog(idx uint64, l *raft.Log) error {
	r.mu.Lock()
	if r.above != 0 && idx > r.above {
		r.reads++
	}
	r.mu.Unlock()
	return r.LogStore.GetLog(idx, l)
}

func (r *readCounter) from(idx uint64) {
	r.mu.Lock()
	r.above, r.reads = idx, 0
	r.mu.Unlock()
}

func (r *readCounter) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reads
}

// A leader sends, and every node applies, the entries it has just appended
// from memory: none of them is read back from the log store. (Fewer
// entries than the cache holds: a follower that lags by more reads the
// older ones back, as it must.)
func TestRecentEntriesAreNotReadBackFromTheLog(t *testing.T) {
	counters := map[string]*readCounter{}
	g := &group{t: t, setup: func(m *member, cfg *Config, _ *commands.Config) {
		c := &readCounter{LogStore: cfg.Logs}
		counters[m.id] = c
		cfg.Logs = c
	}}
	newGroupOf(t, g, 3)
	leader := g.leader()
	last := leader.node.raft.LastIndex()
	for _, c := range counters {
		c.from(last)
	}
	rdb := leader.client(t)
	for i := 0; i < logCacheEntries/2; i++ {
		if _, err := take(rdb, "k"+strconv.Itoa(i), 1000); err != nil {
			t.Fatal(err)
		}
	}
	g.converged() // every FSM has applied every entry
	for id, c := range counters {
		if n := c.count(); n != 0 {
			t.Errorf("%s read %d entries above index %d back from its log store; want 0", id, n, last)
		}
	}
}
