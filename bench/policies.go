package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sluice-rl/sluice/internal/resp"
)

// benchPolicy is the policy the sluice-check scenario decides under: a
// token bucket of the workload's rate and capacity, read by the server
// from a rules file (--policies) that bench writes.
const benchPolicy = "bench"

// preloadOverrides returns a scenario setup that gives every every-th of
// the run's keys (with prefix) an override of benchPolicy with the
// workload's own parameters, sent in pipelined batches on one connection;
// every reply must be OK.
func preloadOverrides(prefix string, every int) func(srv *server, w workload, keys int) error {
	return func(srv *server, w workload, keys int) error {
		conn, err := srv.dial(10*time.Second, false)
		if err != nil {
			return err
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(5 * time.Minute))
		r := bufio.NewReaderSize(conn, 64<<10)
		var req []byte
		var key []byte
		pending := 0
		flush := func() error {
			if _, err := conn.Write(req); err != nil {
				return err
			}
			for ; pending > 0; pending-- {
				var v resp.Value
				if err := resp.Read(r, &v); err != nil {
					return err
				}
				if v.Kind != '+' || string(v.Text) != "OK" {
					return fmt.Errorf("RL.OVERRIDE SET: %s", v.String())
				}
			}
			req = req[:0]
			return nil
		}
		for k := 0; k < keys; k += every {
			key = appendKey(key[:0], prefix, uint64(k))
			req = resp.AppendCommand(req, "RL.OVERRIDE", "SET", benchPolicy, string(key), "TOKEN", w.rate+"/s", itoa(w.capacity))
			if pending++; pending == 1000 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		return flush()
	}
}

// policyTable is how many policies sluice-check-100k loads, at least.
const policyTable = 100_000

// preloadPolicies returns a scenario setup that defines a token policy of
// the workload's rate and capacity for each of the run's keys (with
// prefix) and at least least of them, named as the key, through one
// connection in pipelined batches; every reply must be OK. It reports the
// time the load took.
func preloadPolicies(prefix string, least int) func(srv *server, w workload, keys int) error {
	return func(srv *server, w workload, keys int) error {
		n := max(keys, least)
		d, err := loadPolicies(srv, prefix, n, w.rate+"/s", itoa(w.capacity))
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "\nbench: %d policies defined by RL.POLICY SET through one pipelined connection in %v (%.0f a second)\n",
			n, d.Round(time.Millisecond), float64(n)/d.Seconds())
		return nil
	}
}

// loadPolicies defines n token policies prefix+key (rate, capacity) by
// RL.POLICY SET, 1000 a batch on one connection, and returns the time from
// the first write to the last reply.
func loadPolicies(srv *server, prefix string, n int, rate, capacity string) (time.Duration, error) {
	conn, err := srv.dial(10*time.Second, false)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Minute))
	r := bufio.NewReaderSize(conn, 64<<10)
	var req, name []byte
	pending := 0
	flush := func() error {
		if _, err := conn.Write(req); err != nil {
			return err
		}
		for ; pending > 0; pending-- {
			var v resp.Value
			if err := resp.Read(r, &v); err != nil {
				return err
			}
			if v.Kind != '+' || string(v.Text) != "OK" {
				return fmt.Errorf("RL.POLICY SET: %s", v.String())
			}
		}
		req = req[:0]
		return nil
	}
	start := time.Now()
	for k := 0; k < n; k++ {
		name = appendKey(name[:0], prefix, uint64(k))
		req = resp.AppendCommand(req, "RL.POLICY", "SET", string(name), "TOKEN", rate, capacity)
		if pending++; pending == 1000 {
			if err := flush(); err != nil {
				return 0, err
			}
		}
	}
	if err := flush(); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// writeBenchPolicy writes the rules file of benchPolicy into dir, with the
// workload's rate (tokens per second, a plain number as -rate takes it)
// and capacity, and returns its path. A rate the rules file cannot take
// (not a whole number per second) makes the server refuse to start, and
// the sluice-check runs report that.
func writeBenchPolicy(dir, rate string, capacity int64) (string, error) {
	path := filepath.Join(dir, "bench-policies.yaml")
	text := fmt.Sprintf("policies:\n  - name: %s\n    algorithm: token\n    rate: %s/s\n    capacity: %d\n",
		benchPolicy, rate, capacity)
	return path, os.WriteFile(path, []byte(text), 0o644)
}
