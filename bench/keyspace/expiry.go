package main

import (
	"fmt"
	"strconv"
	"time"
)

// runExpiry creates n buckets that are full again 1 ms later, touches none
// of them again, and polls INFO until they are gone (at most 10 s); then
// creates n new long-lived buckets, which should take the freed room: the
// arena's free bytes fall and it grows little. It returns a table row.
func runExpiry(bin string, shards, n int) (string, error) {
	srv, cleanup, err := startSluice(bin, shards)
	if err != nil {
		return "", err
	}
	defer cleanup()
	short := func(c *conn, i int) { c.add("RL.TOKEN", key(i), "1000/s", "1", "1") }
	t0 := time.Now()
	if err := fill(srv.addr, n, short); err != nil {
		return "", err
	}
	filled := time.Since(t0)
	c, err := dial(srv.addr)
	if err != nil {
		return "", err
	}
	defer c.close()
	start := time.Now()
	var left int64 = -1
	for time.Since(start) < 10*time.Second {
		st, err := c.info("memory")
		if err != nil {
			return "", err
		}
		left, _ = strconv.ParseInt(st["keyspace_keys"], 10, 64)
		if left == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	gone := time.Since(start) + filled // from the middle of the fill, roughly
	stats, err := c.info("stats")
	if err != nil {
		return "", err
	}
	emptied, err := c.info("memory")
	if err != nil {
		return "", err
	}
	long := func(c *conn, i int) { c.add("RL.TOKEN", "new:"+key(i)[4:], rlRate, rlCapacity, "1") }
	if err := fill(srv.addr, n, long); err != nil {
		return "", err
	}
	info, err := c.info("memory")
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("| %d | %d | %.1f s | %s | %s | %s µs | %s µs | %s of %s | %s of %s |", n, left, gone.Seconds(),
		stats["sweep_removed"], stats["sweep_runs"], stats["sweep_time_us"], stats["sweep_max_us"],
		emptied["keyspace_free_bytes"], emptied["keyspace_arena_bytes"], info["keyspace_free_bytes"], info["keyspace_arena_bytes"]), nil
}

const expiryHeader = "| buckets refilling in 1 ms | left after | gone within (from the fill's start) | removed by the sweep | sweep calls | sweep time in all | longest sweep call | arena free bytes once emptied | arena free bytes after as many new keys |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
