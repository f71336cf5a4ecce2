package main

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// key returns the i-th bucket's 16-byte key.
func key(i int) string { return fmt.Sprintf("k:%014d", i) }

// Every bucket gets one token taken from a bucket of 100,000 that refills at
// one an hour: it stays live (TTL one hour) for the whole run, and every
// later request is admitted and writes.
const rlRate, rlCapacity = "1/h", "100000"

func sluiceFill(c *conn, i int) { c.add("RL.TOKEN", key(i), rlRate, rlCapacity, "1") }

// gatewayScript is Spring Cloud Gateway's request_rate_limiter.lua (Apache
// License 2.0), the Redis token bucket most deployments run: per bucket a
// tokens key and a timestamp key, both SETEX with a TTL of twice the fill
// time.
const gatewayScript = `
local tokens_key = KEYS[1]
local timestamp_key = KEYS[2]
local rate = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local requested = tonumber(ARGV[4])
local fill_time = capacity/rate
local ttl = math.floor(fill_time*2)
local last_tokens = tonumber(redis.call("get", tokens_key))
if last_tokens == nil then
  last_tokens = capacity
end
local last_refreshed = tonumber(redis.call("get", timestamp_key))
if last_refreshed == nil then
  last_refreshed = 0
end
local delta = math.max(0, now-last_refreshed)
local filled_tokens = math.min(capacity, last_tokens+(delta*rate))
local allowed = filled_tokens >= requested
local new_tokens = filled_tokens
local allowed_num = 0
if allowed then
  new_tokens = filled_tokens - requested
  allowed_num = 1
end
if ttl > 0 then
  redis.call("setex", tokens_key, ttl, new_tokens)
  redis.call("setex", timestamp_key, ttl, now)
end
return { allowed_num, new_tokens }
`

var redisSHA string

// redisFill runs the script as Spring Cloud Gateway calls it, with its key
// names around the same 16-byte id: replenish rate 1/s, burst 100,000.
func redisFill(c *conn, i int) {
	id := key(i)
	c.add("EVALSHA", redisSHA, "2", "request_rate_limiter.{"+id+"}.tokens", "request_rate_limiter.{"+id+"}.timestamp",
		"1", "100000", strconv.FormatInt(time.Now().Unix(), 10), "1")
}

// onConns runs work on conns connections to addr at once, w numbering
// them from 0, and returns the first error.
func onConns(addr string, conns int, work func(w int, c *conn) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for w := 0; w < conns; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c, err := dial(addr)
			if err != nil {
				errs <- err
				return
			}
			defer c.close()
			if err := work(w, c); err != nil {
				errs <- err
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// fill creates buckets 0..n-1 over two connections, 1000 commands a
// pipeline, and fails on the first error reply.
func fill(addr string, n int, add func(c *conn, i int)) error {
	const conns, depth = 2, 1000
	return onConns(addr, conns, func(w int, c *conn) error {
		lo, hi := n*w/conns, n*(w+1)/conns
		for i := lo; i < hi; i += depth {
			m := min(depth, hi-i)
			for j := 0; j < m; j++ {
				add(c, i+j)
			}
			if err := c.flush(); err != nil {
				return err
			}
			for j := 0; j < m; j++ {
				v, err := c.reply()
				if err == nil {
					if e, ok := v.(errReply); ok {
						err = e
					}
				}
				if err != nil {
					return fmt.Errorf("bucket %d: %w", i+j, err)
				}
			}
		}
		return nil
	})
}

type loadResult struct {
	hist   *hdrhistogram.Histogram
	errors int64
}

// load sends RL.TOKEN to keys drawn uniformly from the n live ones, at
// rate requests per second spread over conns connections with one request
// in flight on each, for dur. Latency runs from the send, or, when the
// connection fell behind its schedule waiting for earlier replies, from the
// instant the request was due, so a stall counts against the requests it
// delayed too (no coordinated omission).
func load(addr string, n, rate, conns int, dur time.Duration) (loadResult, error) {
	var mu sync.Mutex
	total := loadResult{hist: hdrhistogram.New(1_000, 10_000_000_000, 3)}
	interval := time.Duration(int64(time.Second) * int64(conns) / int64(rate))
	err := onConns(addr, conns, func(w int, c *conn) error {
		h := hdrhistogram.New(1_000, 10_000_000_000, 3)
		var bad int64
		rng := rand.New(rand.NewPCG(uint64(w), 7))
		start := time.Now().Add(time.Duration(w) * interval / time.Duration(conns))
		for due := start; due.Sub(start) < dur; due = due.Add(interval) {
			begin := due // behind schedule: the wait for earlier replies counts
			if d := time.Until(due); d > 0 {
				time.Sleep(d)
				begin = time.Now() // on schedule: a late wake-up of this tool does not
			}
			c.add("RL.TOKEN", key(rng.IntN(n)), rlRate, rlCapacity, "1")
			if err := c.flush(); err != nil {
				return err
			}
			v, err := c.reply()
			if err != nil {
				return err
			}
			h.RecordValue(int64(time.Since(begin)))
			if a, ok := v.([]any); !ok || len(a) != 5 || a[0] != int64(1) {
				bad++ // an error reply, or a denial where every request must be admitted
			}
		}
		mu.Lock()
		total.hist.Merge(h)
		total.errors += bad
		mu.Unlock()
		return nil
	})
	return total, err
}
