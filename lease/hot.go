package lease

import (
	"sync"
	"sync/atomic"

	"github.com/sluice-rl/sluice/topk"
)

// hotKeys chooses the leased keys by traffic (--upstream-lease-hot N): the
// N keys with the most requests over the period in progress and the one
// before, counted by the heavy-hitters sketch RL.TOP uses (package topk).
// The others are forwarded. A key that leaves the set is forwarded from
// then on; its lease ends unused after the TTL and its stock goes back.
//
// note is safe for concurrent use; update is called by the tier's loop
// only.
type hotKeys struct {
	n int

	mu        sync.Mutex
	cur, prev *topk.Sketch
	started   int64 // when the period in progress began

	set atomic.Pointer[map[uint64]struct{}] // the hot keys' hashes
}

// hotPeriod is the length of a counting period: a key is hot for its
// requests over the last one to two periods.
const hotPeriod = int64(1e9)

func newHotKeys(n int) *hotKeys {
	k := max(8*n, 64)
	h := &hotKeys{n: n, cur: topk.New(k), prev: topk.New(k)}
	h.set.Store(&map[uint64]struct{}{})
	return h
}

// note counts one request on key and reports whether key is hot now.
func (h *hotKeys) note(key []byte) bool {
	hash := topk.Hash(key)
	h.mu.Lock()
	h.cur.Add(key, hash, 1)
	h.mu.Unlock()
	_, hot := (*h.set.Load())[hash]
	return hot
}

// update starts a new period once the one in progress is hotPeriod old,
// and makes the set the top n keys of both periods' counts.
func (h *hotKeys) update(now int64) {
	var t topk.Tally
	h.mu.Lock()
	if h.started == 0 {
		h.started = now
	}
	if now-h.started >= hotPeriod {
		h.prev, h.cur = h.cur, h.prev
		h.cur.Reset()
		h.started = now
	}
	t.Add(h.cur)
	t.Add(h.prev)
	h.mu.Unlock()
	top := t.Top(h.n)
	set := make(map[uint64]struct{}, len(top))
	for i := range top {
		set[top[i].Hash()] = struct{}{}
	}
	h.set.Store(&set)
}

// size is the number of hot keys now.
func (h *hotKeys) size() int { return len(*h.set.Load()) }
