package main

import (
	"fmt"
	"strconv"
	"strings"
)

// Where the load generator and the servers run. On a machine of a few
// cores the generator competes with the server it measures: a server that
// keeps two threads busy takes the generator's core, and the generator's
// own waits for a core show up as the server's latency (at pipeline 1 on
// two cores: p99 about 2 ms for any multi-threaded server, 0.7 ms for
// Redis's single thread). So by default bench keeps to the first CPU it may
// use and starts every server on the others: each server gets cores of its
// own and the generator one of its own. A run that asks for more server
// cores than that (-gomaxprocs) shares all of them with the generator, and
// says so.

// cpuPlan is the placement of one bench invocation.
type cpuPlan struct {
	pinned  bool
	gen     []int  // the generator's CPUs, when pinned
	servers []int  // the servers' CPUs, when pinned
	all     []int  // every CPU bench may use
	taskset string // the taskset binary that places a server
	why     string // why not pinned
}

// cpus is the placement in force, set by setupCPUs.
var cpus cpuPlan

// serverCPUs returns the CPUs a server started with GOMAXPROCS procs (0:
// the default) runs on, and whether they are its own.
func (p cpuPlan) serverCPUs(procs int) (list []int, own bool) {
	if !p.pinned {
		return p.all, false
	}
	if procs == 0 {
		return p.servers, true
	}
	if procs <= len(p.servers) {
		return p.servers[:procs], true
	}
	return p.all, false
}

// command returns how to start bin with args on the CPUs for procs.
func (p cpuPlan) command(bin string, args []string, procs int) (string, []string) {
	if !p.pinned {
		return bin, args
	}
	list, _ := p.serverCPUs(procs)
	return p.taskset, append([]string{"-c", cpuList(list), bin}, args...)
}

// label says where a server of kind ran, for the run tables: "1 own" (one
// core the generator does not use), "2 shared" (both cores, the
// generator's too), "1 (redis)" (one thread, shared cores).
func (p cpuPlan) label(kind string, procs int) string {
	list, own := p.serverCPUs(procs)
	n := len(list)
	if procs > 0 && procs < n {
		n = procs
	}
	if kind == "redis" {
		n = 1 // one thread serves the clients (--io-threads 1)
	}
	switch {
	case own:
		return strconv.Itoa(n) + " own"
	case kind == "redis":
		return "1 (redis)"
	}
	return strconv.Itoa(n) + " shared"
}

// describe is the placement in a sentence, for the report.
func (p cpuPlan) describe() string {
	if !p.pinned {
		return "not pinned (" + p.why + "): the load generator and the servers share CPUs " + cpuList(p.all)
	}
	return fmt.Sprintf("load generator on CPU %s (GOMAXPROCS %d), servers on CPU %s (taskset); "+
		"runs marked shared use CPUs %s, the generator's too", cpuList(p.gen), len(p.gen), cpuList(p.servers), cpuList(p.all))
}

func cpuList(list []int) string {
	parts := make([]string, len(list))
	for i, c := range list {
		parts[i] = strconv.Itoa(c)
	}
	return strings.Join(parts, ",")
}
