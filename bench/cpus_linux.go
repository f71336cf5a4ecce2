package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// setupCPUs decides the placement for mode ("auto", "on" or "off"), gen
// CPUs for the load generator (the first ones bench may use; less than 1
// means 1) and the rest for the servers, and moves bench itself onto the
// generator's CPUs.
func setupCPUs(mode string, gen int) error {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		cpus = cpuPlan{why: "cannot read the CPU affinity: " + err.Error()}
		return nil
	}
	var all []int
	for i := 0; i < 1024; i++ {
		if set.IsSet(i) {
			all = append(all, i)
		}
	}
	cpus = cpuPlan{all: all}
	switch {
	case mode == "off":
		cpus.why = "-pin off"
		return nil
	case len(all) < 2:
		cpus.why = "one CPU: the generator and the servers share it"
	case max(gen, 1) >= len(all):
		cpus.why = fmt.Sprintf("%d CPUs: none left for the servers after the generator's %d", len(all), max(gen, 1))
	default:
		ts, err := exec.LookPath("taskset")
		if err != nil {
			cpus.why = "taskset (util-linux) is not on PATH"
			break
		}
		cpus.pinned, cpus.taskset = true, ts
		cpus.gen, cpus.servers = all[:max(gen, 1)], all[max(gen, 1):]
	}
	if !cpus.pinned {
		if mode == "on" {
			return fmt.Errorf("-pin on: %s", cpus.why)
		}
		return nil
	}
	if err := pinSelf(cpus.gen); err != nil {
		return fmt.Errorf("pinning the load generator to CPU %v: %w", cpus.gen, err)
	}
	runtime.GOMAXPROCS(len(cpus.gen))
	return nil
}

// pinSelf moves every thread of bench onto list; threads made later
// inherit it from the thread that makes them.
func pinSelf(list []int) error {
	var set unix.CPUSet
	for _, c := range list {
		set.Set(c)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
			return err
		}
	}
	return nil
}

// deathSignal makes the kernel kill a server bench started if bench itself
// is killed outright.
func deathSignal() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }

// dataSync makes f's written data durable without its metadata
// (fdatasync), as sluice's log does.
func dataSync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }
