package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// runCap starts sluice with --maxmemory max, creates 1,000 buckets, then
// offers n new keys, counting the OOM refusals, and checks that the first
// buckets still count down. It returns a table row.
func runCap(bin, maxmem string, n int) (string, error) {
	dir, _ := os.MkdirTemp("", "keyspace-cap-")
	defer os.RemoveAll(dir)
	portsFile := filepath.Join(dir, "sluice.ports")
	srv, err := startServer(bin, func(port string) []string {
		return []string{"--port", port, "--bind", "127.0.0.1", "--save", "0", "--dir", dir,
			"--loglevel", "warning", "--maxmemory", maxmem, "--ports-file", portsFile}
	}, nil, portsFile)
	if err != nil {
		return "", err
	}
	defer srv.stop()
	c, err := dial(srv.addr)
	if err != nil {
		return "", err
	}
	defer c.close()
	early := func(i int) string { return fmt.Sprintf("early:%010d", i) }
	for i := 0; i < 1000; i++ {
		if _, err := c.do("RL.TOKEN", early(i), rlRate, rlCapacity, "1"); err != nil {
			return "", err
		}
	}
	const depth = 1000
	var admitted, refused int
	var peak int64
	t0 := time.Now()
	for i := 0; i < n; i += depth {
		m := min(depth, n-i)
		for j := 0; j < m; j++ {
			c.add("RL.TOKEN", key(i+j), rlRate, rlCapacity, "1")
		}
		if err := c.flush(); err != nil {
			return "", err
		}
		for j := 0; j < m; j++ {
			v, err := c.reply()
			if err != nil {
				return "", err
			}
			switch v := v.(type) {
			case errReply:
				if string(v) != "OOM command not allowed when used memory > 'maxmemory'." {
					return "", v
				}
				refused++
			default:
				admitted++
			}
		}
		if i%(100*depth) == 0 {
			peak = max(peak, srv.rss())
		}
	}
	took := time.Since(t0)
	peak = max(peak, srv.rss())
	// The buckets made before the cap still count down: one more token each.
	countsDown := 0
	for i := 0; i < 1000; i++ {
		v, err := c.do("RL.TOKEN", early(i), rlRate, rlCapacity, "1")
		if a, ok := v.([]any); err == nil && ok && len(a) == 5 && a[2] == int64(99998) {
			countsDown++
		}
	}
	info, err := c.info("memory")
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("| %s | %d | %d | %d | %s | %s | %s | %d / 1000 | %.1f s |", maxmem, n, admitted, refused,
		info["keyspace_used_memory"], mib(peak), mib(srv.rss()), countsDown, took.Seconds()), nil
}

const capHeader = "| --maxmemory | new keys offered | admitted | refused (OOM) | keyspace_used_memory | peak RSS | RSS after | early buckets still counting down | took |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|"
