//go:build !linux

package main

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
)

// setupCPUs: placing the generator and the servers on CPUs of their own
// needs Linux's affinity calls and taskset; elsewhere they share the CPUs.
func setupCPUs(mode string, _ int) error {
	cpus = cpuPlan{why: "CPU placement needs Linux"}
	for i := 0; i < runtime.NumCPU(); i++ {
		cpus.all = append(cpus.all, i)
	}
	if mode == "on" {
		return fmt.Errorf("-pin on: %s", cpus.why)
	}
	return nil
}

// deathSignal: only Linux can tie a child's life to bench's; elsewhere the
// servers are stopped by bench's own exit paths.
func deathSignal() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

// dataSync makes f's written data durable; fdatasync is Linux's.
func dataSync(f *os.File) error { return f.Sync() }
