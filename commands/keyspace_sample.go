package commands

import (
	"math"
	"sync"

	"github.com/sluice-rl/sluice/algorithms"
)

// INFO keyspace's avg_ttl: Redis estimates it from the keys its active
// expiry samples; sluice samples up to ttlSample keys by SCAN at each INFO,
// from a cursor that moves on between calls, so that successive INFO
// calls cover the whole key space in turn.

const ttlSample = 128

// ttlSampler is the cursor the samples continue from, guarded by mu.
type ttlSampler struct {
	mu     sync.Mutex
	cursor uint64
}

// keyspaceLine returns INFO keyspace's db0 fields at now: keys, expires
// (the keys whose state expires, estimated from the sample) and avg_ttl
// (ms, the mean time to live of the sampled keys that expire; 0: none).
func (h *Handler) keyspaceLine(now int64, keys int64) string {
	h.ttls.mu.Lock()
	defer h.ttls.mu.Unlock()
	var sample [][]byte
	for pass := 0; pass < 2 && len(sample) < ttlSample; pass++ {
		next, err := h.ks.Scan(now, h.ttls.cursor, ttlSample, func(key []byte, _ algorithms.Algo) bool {
			sample = append(sample, append([]byte(nil), key...))
			return len(sample) < ttlSample
		})
		if err != nil {
			break
		}
		h.ttls.cursor = next
		if next != 0 {
			break // the sample came from the middle: the next INFO continues
		}
	}
	var sum, expiring, seen int64
	for _, k := range sample {
		ttl, err := h.ks.TTL(now, k)
		if err != nil || ttl < 0 {
			continue // gone since the scan
		}
		seen++
		if ttl == math.MaxInt64 {
			continue
		}
		expiring++
		sum += ttl / 1e6
	}
	avg, expires := int64(0), keys
	if expiring > 0 {
		avg = sum / expiring
	}
	if seen > 0 {
		expires = keys * expiring / seen
	}
	return "keys=" + fmtInt(keys) + ",expires=" + fmtInt(expires) + ",avg_ttl=" + fmtInt(avg)
}
