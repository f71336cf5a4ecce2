// Command keyspace measures sluice's key space at scale: the RSS each token
// bucket costs at N keys, the latency of RL.TOKEN at a moderate fixed load
// with N live keys, and the server's GC pauses meanwhile; and, for
// comparison, the RSS per bucket of Redis running the Lua token bucket of
// Spring Cloud Gateway (two string keys with TTLs per bucket). It starts
// each server on a free loopback port, fills it over pipelined RESP,
// reads the process's RSS from /proc, and stops it.
//
//	cd bench && go run ./keyspace -sluice ../bin/sluice -mem-keys 1000000,10000000 -lat-keys 10000,10000000
//
// It imports nothing of the project: it drives the binary over TCP.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

func main() {
	sluiceBin := flag.String("sluice", "../bin/sluice", "sluice binary to start (default: make build's, run from bench/; empty: skip sluice)")
	redisBin := flag.String("redis-server", "redis-server", "redis-server binary to start (empty: skip Redis)")
	memKeys := flag.String("mem-keys", "1000000", "key counts at which to measure sluice's RSS per bucket")
	latKeys := flag.String("lat-keys", "10000,1000000", "key counts at which to measure RL.TOKEN latency, one server each, all filled first")
	redisKeys := flag.String("redis-keys", "1000000", "key counts at which to measure Redis+Lua's RSS per bucket")
	rate := flag.Int("rate", 10000, "latency load: requests per second in all")
	conns := flag.Int("conns", 4, "latency load: connections, one request in flight on each")
	dur := flag.Duration("duration", 20*time.Second, "latency load: how long in all, per server")
	shards := flag.Int("shards", 0, "sluice --shards (0: its default)")
	capMem := flag.String("cap", "64mb", "memory-cap run: sluice --maxmemory (empty: skip the run)")
	capKeys := flag.Int("cap-keys", 3_000_000, "memory-cap run: new keys offered")
	expiryKeys := flag.Int("expiry-keys", 200_000, "active-expiry run: buckets that refill in 1 ms, never touched again (0: skip)")
	rounds := flag.Int("rounds", 10, "latency load: alternating windows per server, so that noise on a shared machine hits every key count alike")
	flag.Parse()

	fmt.Printf("# keyspace: %s, GOMAXPROCS %d, %s\n\n", runtime.Version(), runtime.GOMAXPROCS(0), time.Now().UTC().Format(time.RFC3339))
	if *sluiceBin != "" {
		var memRows []string
		for _, n := range counts(*memKeys) {
			m, err := runSluice(*sluiceBin, *shards, n)
			if err != nil {
				fmt.Fprintln(os.Stderr, "keyspace: sluice at", n, "keys:", err)
				os.Exit(1)
			}
			memRows = append(memRows, m)
		}
		printTable("sluice: RSS per token bucket (16-byte keys)", memHeader, memRows)
		if *capMem != "" {
			row, err := runCap(*sluiceBin, *capMem, *capKeys)
			if err != nil {
				fmt.Fprintln(os.Stderr, "keyspace: memory cap run:", err)
				os.Exit(1)
			}
			printTable("sluice: the memory cap", capHeader, []string{row})
		}
		if *expiryKeys > 0 {
			row, err := runExpiry(*sluiceBin, *shards, *expiryKeys)
			if err != nil {
				fmt.Fprintln(os.Stderr, "keyspace: expiry run:", err)
				os.Exit(1)
			}
			printTable("sluice: active expiry without access", expiryHeader, []string{row})
		}
		if lat := counts(*latKeys); len(lat) > 0 {
			rows, err := runLatency(*sluiceBin, *shards, lat, *rate, *conns, *dur, *rounds)
			if err != nil {
				fmt.Fprintln(os.Stderr, "keyspace: latency:", err)
				os.Exit(1)
			}
			printTable(fmt.Sprintf("sluice: RL.TOKEN latency at %d req/s on %d connections, %s per server in %d alternating windows, keys drawn uniformly from the live ones",
				*rate, *conns, *dur, *rounds), latHeader, rows)
		}
	}
	if *redisBin != "" {
		var rows []string
		for _, n := range counts(*redisKeys) {
			m, err := runRedis(*redisBin, n)
			if err != nil {
				fmt.Fprintln(os.Stderr, "keyspace: redis at", n, "keys:", err)
				os.Exit(1)
			}
			rows = append(rows, m)
		}
		printTable("Redis + Spring Cloud Gateway's Lua token bucket: RSS per bucket (two keys with TTLs)", memHeader, rows)
	}
}

const (
	memHeader = "| server | buckets | RSS before | RSS after | RSS per bucket | server's own count | fill rate |\n|---|---:|---:|---:|---:|---:|---:|"
	latHeader = "| live keys | requests | errors | p50 µs | p99 µs | p99.9 µs | max µs | GCs | longest GC stop µs | longest GC cycle ms |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)

func runSluice(bin string, shards, n int) (string, error) {
	srv, cleanup, err := startSluice(bin, shards)
	if err != nil {
		return "", err
	}
	defer cleanup()
	before := srv.rss()
	t0 := time.Now()
	if err := fill(srv.addr, n, sluiceFill); err != nil {
		return "", err
	}
	took := time.Since(t0)
	time.Sleep(500 * time.Millisecond)
	after := srv.rss()
	c, err := dial(srv.addr)
	if err != nil {
		return "", err
	}
	defer c.close()
	own := "-"
	if info, err := c.info("memory"); err == nil {
		if used, err := strconv.ParseInt(info["keyspace_used_memory"], 10, 64); err == nil {
			own = fmt.Sprintf("%.1f B", float64(used)/float64(n))
		}
	}
	return fmt.Sprintf("| sluice | %d | %s | %s | **%.1f B** | %s | %.0f k/s |", n, mib(before), mib(after),
		float64(after-before)/float64(n), own, float64(n)/took.Seconds()/1000), nil
}

// startSluice starts sluice with no snapshots and GODEBUG=gctrace=1, so
// that its GC cycles can be read.
func startSluice(bin string, shards int) (*server, func(), error) {
	dir, _ := os.MkdirTemp("", "keyspace-sluice-")
	args := []string{"--save", "0", "--dir", dir, "--loglevel", "warning"}
	if shards > 0 {
		args = append(args, "--shards", strconv.Itoa(shards))
	}
	portsFile := filepath.Join(dir, "sluice.ports")
	srv, err := startServer(bin, func(port string) []string {
		return append([]string{"--port", port, "--bind", "127.0.0.1", "--ports-file", portsFile}, args...)
	}, []string{"GODEBUG=gctrace=1"}, portsFile)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return srv, func() { srv.stop(); os.RemoveAll(dir) }, nil
}

// runLatency starts one sluice per key count, fills each, then loads them
// in turn, rounds times dur/rounds each, and reports each one's latency
// and GC cycles over all its windows.
func runLatency(bin string, shards int, ns []int, rate, conns int, dur time.Duration, rounds int) ([]string, error) {
	srvs := make([]*server, len(ns))
	for i, n := range ns {
		srv, cleanup, err := startSluice(bin, shards)
		if err != nil {
			return nil, err
		}
		defer cleanup()
		if err := fill(srv.addr, n, sluiceFill); err != nil {
			return nil, err
		}
		srvs[i] = srv
	}
	results := make([]loadResult, len(ns))
	gcs := make([][]gc, len(ns))
	for r := 0; r < rounds; r++ {
		for i, srv := range srvs {
			seen := len(srv.gcs())
			res, err := load(srv.addr, ns[i], rate, conns, dur/time.Duration(rounds))
			if err != nil {
				return nil, err
			}
			if results[i].hist == nil {
				results[i] = res
			} else {
				results[i].hist.Merge(res.hist)
				results[i].errors += res.errors
			}
			gcs[i] = append(gcs[i], srv.gcs()[seen:]...)
		}
	}
	var rows []string
	for i, n := range ns {
		var stop, cycle float64
		for _, g := range gcs[i] {
			stop, cycle = max(stop, g.stopUS), max(cycle, g.wallMS)
		}
		h := results[i].hist
		rows = append(rows, fmt.Sprintf("| %d | %d | %d | %d | %d | %d | %d | %d | %.0f | %.1f |", n, h.TotalCount(), results[i].errors,
			h.ValueAtQuantile(50)/1000, h.ValueAtQuantile(99)/1000, h.ValueAtQuantile(99.9)/1000, h.Max()/1000,
			len(gcs[i]), stop, cycle))
	}
	return rows, nil
}

func runRedis(bin string, n int) (string, error) {
	dir, _ := os.MkdirTemp("", "keyspace-redis-")
	defer os.RemoveAll(dir)
	srv, err := startServer(bin, func(port string) []string {
		return []string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", dir, "--daemonize", "no", "--loglevel", "warning"}
	}, nil, "")
	if err != nil {
		return "", err
	}
	defer srv.stop()
	c, err := dial(srv.addr)
	if err != nil {
		return "", err
	}
	defer c.close()
	v, err := c.do("SCRIPT", "LOAD", gatewayScript)
	if err != nil {
		return "", err
	}
	redisSHA = v.(string)
	before := srv.rss()
	t0 := time.Now()
	if err := fill(srv.addr, n, redisFill); err != nil {
		return "", err
	}
	took := time.Since(t0)
	after := srv.rss()
	own := "-"
	if info, err := c.info("memory"); err == nil {
		own = info["used_memory_human"] + " used_memory"
	}
	keys, _ := c.do("DBSIZE")
	if k, ok := keys.(int64); !ok || k != int64(2*n) {
		return "", fmt.Errorf("DBSIZE %v after %d buckets; want %d keys", keys, n, 2*n)
	}
	return fmt.Sprintf("| redis %s | %d | %s | %s | **%.1f B** | %s | %.0f k/s |", redisVersion(bin), n, mib(before), mib(after),
		float64(after-before)/float64(n), own, float64(n)/took.Seconds()/1000), nil
}

func redisVersion(bin string) string {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "?"
	}
	for _, f := range strings.Fields(string(out)) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return v
		}
	}
	return "?"
}

func counts(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "keyspace: bad key count %q\n", f)
			os.Exit(2)
		}
		out = append(out, n)
	}
	return out
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func printTable(title, header string, rows []string) {
	fmt.Printf("### %s\n\n%s\n%s\n\n", title, header, strings.Join(rows, "\n"))
}
