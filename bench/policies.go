package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// benchPolicy is the policy the sluice-check scenario decides under: a
// token bucket of the workload's rate and capacity, read by the server
// from a rules file (--policies) that bench writes.
const benchPolicy = "bench"

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
