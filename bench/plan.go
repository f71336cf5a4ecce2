package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The plans: which runs make up a quick, a full and a custom benchmark.

// Groups of runs; each is one table of the report.
const (
	groupDepth   = "depth"    // the base settings at several pipeline depths: ratios and the chart
	groupKeys    = "keys"     // key cardinality at pipeline 16
	groupZipf    = "zipf"     // skewed keys at pipeline 16
	groupCores   = "cores"    // sluice with GOMAXPROCS 1 and 2
	groupAOF     = "aof"      // RL.TOKEN with the append-only log off, everysec, always
	groupCheck   = "check"    // RL.CHECK under a TOKEN policy beside RL.TOKEN with its parameters
	groupScrape  = "metrics"  // RL.TOKEN with /metrics scraped every second beside without the endpoint
	groupSec     = "security" // RL.TOKEN in plaintext as the default user, over TLS, and as a restricted ACL user
	groupSharded = "sharded"  // one node, one group, a sharded cluster: -plan cluster, its own section
	groupOwn     = "custom"
)

var groupTitles = map[string]string{
	groupDepth:   "Pipeline depth",
	groupKeys:    "Key cardinality (pipeline 16)",
	groupZipf:    "Zipfian keys (pipeline 16)",
	groupCores:   "sluice on 1 and 2 cores (GOMAXPROCS of the server, one event loop per core; `own`: cores the generator does not use, `shared`: every core, the generator's too; Redis is single-threaded)",
	groupOwn:     "Runs",
	groupCheck:   "sluice RL.CHECK under a TOKEN policy (from a `--policies` file) beside RL.TOKEN with the same parameters",
	groupScrape:  "sluice RL.TOKEN with `--metrics-bind` and /metrics fetched every second beside without the endpoint (the per-command figures are counted in both: INFO commandstats needs them)",
	groupSec:     "sluice RL.TOKEN in plaintext as the default user, over TLS (`--port 0 --tls-port`, P-256, `--tls-auth-clients no`), and as an ACL user held to `~ac:*` with `+@limiter` (plaintext)",
	groupSharded: "sluice RL.TOKEN on one node, through a group's leader, and through a sharded cluster's leaders (a fresh group and cluster every round)",
	groupAOF:     "sluice RL.TOKEN with the append-only log off, `--appendonly yes --appendfsync everysec`, and `always` (a fresh --dir on the machine's disk per run)",
}

// The scenarios the ratios and the chart compare.
var (
	decisionPairs = []string{"sluice-token", "redis-lua-token", "sluice-fixed", "redis-lua-fixed"}
	references    = []string{"sluice-ping", "redis-incr"}
	chartSet      = []string{"sluice-token", "redis-lua-token", "redis-incr", "sluice-ping"}
)

// base is the settings every run of a plan starts from.
type base struct {
	conns  int
	keys   uint64
	zipf   float64
	procs  int
	dur    time.Duration
	warmup time.Duration
	count  int64
	w      workload
	algo   string // "all", "token" or "fixed"
	nodes  int    // -cluster: nodes of every group
	groups int    // -cluster-groups: data groups of the cluster scenario
}

// spec makes a run of the base settings.
func (b base) spec(group, name string, depth int) runSpec {
	return runSpec{group: group, sc: findScenario(name), conns: b.conns, depth: depth, keys: b.keys,
		zipf: b.zipf, procs: b.procs, duration: b.dur, count: b.count, warmup: b.warmup, w: b.w}
}

// wants reports whether the -algo filter keeps a scenario.
func (b base) wants(name string) bool {
	sc := findScenario(name)
	return sc != nil && (b.algo == "all" || sc.algo == "" || sc.algo == b.algo)
}

// quickPlan: every scenario at pipeline 1 and 16 (the libraries' scripts too) (the ratios; Redis PING
// too, so that Redis INCR ÷ Redis PING shows in the same run what the
// cheapest Redis write costs against Redis's own no-op), the chart's
// scenarios at 4 and 64 as well, and RL.TOKEN at 16 on one and two cores.
func quickPlan(b base) []runSpec {
	all := append(append(append([]string{"redis-ping"}, references...), decisionPairs...), libraryPairs...)
	runs := depthRuns(b, []int{1, 16}, all, []int{4, 64}, chartSet)
	runs = append(runs, coreRuns(b, []int{16}, []string{"sluice-token"})...)
	runs = append(runs, aofRuns(b)...)
	runs = append(runs, securityRuns(b)...)
	runs = append(runs, scrapeRuns(b)...)
	runs = append(runs, checkRuns(b)...)
	return append(runs, sidecarRuns(b)...)
}

// securityRuns runs RL.TOKEN in plaintext as the default user, over TLS,
// and as a restricted ACL user, at pipeline 1 and 16, one after the other
// so that they are close in time.
func securityRuns(b base) []runSpec {
	var runs []runSpec
	for _, depth := range []int{1, 16} {
		for _, name := range []string{"sluice-token", "sluice-token-tls", "sluice-token-acl"} {
			if b.wants(name) {
				runs = append(runs, b.spec(groupSec, name, depth))
			}
		}
	}
	return runs
}

// scrapeRuns runs RL.TOKEN at pipeline 1 and 16 without the Prometheus
// endpoint and with it scraped every second, one after the other so that
// they are close in time.
func scrapeRuns(b base) []runSpec {
	var runs []runSpec
	for _, depth := range []int{1, 16} {
		for _, name := range []string{"sluice-token", "sluice-token-metrics"} {
			if b.wants(name) {
				runs = append(runs, b.spec(groupScrape, name, depth))
			}
		}
	}
	return runs
}

// checkRuns runs RL.TOKEN and RL.CHECK under a policy of the same
// parameters (one, and one per key of 100,000), and RL.TOKEN on the keys
// RL.CHECK derives at 100,000, at pipeline 1 and 16, one after the other
// so that they are close in time.
func checkRuns(b base) []runSpec {
	var runs []runSpec
	for _, depth := range []int{1, 16} {
		for _, name := range []string{"sluice-token", "sluice-check", "sluice-check-ovr", "sluice-token-derived", "sluice-check-100k"} {
			if b.wants(name) {
				runs = append(runs, b.spec(groupCheck, name, depth))
			}
		}
	}
	return runs
}

// aofRuns runs RL.TOKEN at pipeline 1 and 16 with the append-only log
// off, everysec and always, one after the other so that they are close in
// time.
func aofRuns(b base) []runSpec {
	var runs []runSpec
	for _, depth := range []int{1, 16} {
		for _, name := range []string{"sluice-token", "sluice-token-aof-everysec", "sluice-token-aof-always"} {
			if b.wants(name) {
				runs = append(runs, b.spec(groupAOF, name, depth))
			}
		}
	}
	return runs
}

// coreRuns runs names at depths with sluice on one core, then two.
func coreRuns(b base, depths []int, names []string) []runSpec {
	var runs []runSpec
	for _, depth := range depths {
		for _, procs := range []int{1, 2} {
			for _, name := range names {
				if b.wants(name) {
					s := b.spec(groupCores, name, depth)
					s.procs = procs
					runs = append(runs, s)
				}
			}
		}
	}
	return runs
}

// clusterDepths are the pipeline depths of the cluster plan.
var clusterDepths = []int{1, 16, 64}

// clusterRuns: RL.TOKEN on one node, through a group's leader and through
// a sharded cluster, at each of clusterDepths, one after the other so that
// they are close in time.
func clusterRuns(b base) []runSpec {
	var runs []runSpec
	for _, depth := range clusterDepths {
		for _, name := range []string{"sluice-token", "group-token", "cluster-token"} {
			runs = append(runs, b.spec(groupSharded, name, depth))
		}
	}
	return runs
}

// fullPlan: more depths, key cardinalities up to 10M, zipfian keys, and
// sluice on one and two cores.
func fullPlan(b base) []runSpec {
	all := append(append(append([]string{"redis-ping"}, references...), decisionPairs...), libraryPairs...)
	runs := depthRuns(b, []int{1, 16, 64}, all, []int{2, 4, 8, 32, 128}, chartSet)
	compared := []string{"sluice-token", "redis-lua-token", "redis-incr", "sluice-fixed", "redis-lua-fixed"}
	for _, keys := range []uint64{1, 1000, 1_000_000, 10_000_000} {
		for _, name := range compared {
			if b.wants(name) {
				s := b.spec(groupKeys, name, 16)
				s.keys, s.zipf = keys, 0
				runs = append(runs, s)
			}
		}
	}
	for _, keys := range []uint64{100_000, 10_000_000} {
		for _, name := range compared {
			if b.wants(name) {
				s := b.spec(groupZipf, name, 16)
				s.keys, s.zipf = keys, 1.1
				runs = append(runs, s)
			}
		}
	}
	runs = append(runs, coreRuns(b, []int{1, 16}, []string{"sluice-ping", "sluice-token"})...)
	runs = append(runs, aofRuns(b)...)
	runs = append(runs, securityRuns(b)...)
	runs = append(runs, checkRuns(b)...)
	return append(runs, sidecarRuns(b)...)
}

// depthRuns runs every one of names at depths, and chart at more depths, in
// order of depth so that the runs a ratio compares are close in time.
func depthRuns(b base, depths []int, names []string, more []int, chart []string) []runSpec {
	type set struct {
		depth int
		names []string
	}
	var sets []set
	for _, d := range depths {
		sets = append(sets, set{d, names})
	}
	for _, d := range more {
		sets = append(sets, set{d, chart})
	}
	// sort by depth, stable
	for i := 1; i < len(sets); i++ {
		for j := i; j > 0 && sets[j].depth < sets[j-1].depth; j-- {
			sets[j], sets[j-1] = sets[j-1], sets[j]
		}
	}
	var runs []runSpec
	for _, st := range sets {
		for _, name := range st.names {
			if b.wants(name) {
				runs = append(runs, b.spec(groupDepth, name, st.depth))
			}
		}
	}
	return runs
}

// customPlan: the named scenarios at the given depths.
func customPlan(b base, names []string, depths []int) []runSpec {
	var runs []runSpec
	for _, d := range depths {
		for _, name := range names {
			if b.wants(name) {
				runs = append(runs, b.spec(groupOwn, name, d))
			}
		}
	}
	return runs
}

// parseScenarios reads a comma-separated list of scenario names.
func parseScenarios(s string) ([]string, error) {
	var out []string
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if findScenario(name) == nil {
			return nil, fmt.Errorf("unknown scenario %q (have %s)", name, scenarioNames())
		}
		out = append(out, name)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no scenarios (have %s)", scenarioNames())
	}
	return out, nil
}

// parseDepths reads a comma-separated list of pipeline depths.
func parseDepths(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		d, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || d < 1 || d > maxDepthFlag {
			return nil, fmt.Errorf("pipeline depth %q: want an integer from 1 to %d", f, maxDepthFlag)
		}
		out = append(out, d)
	}
	return out, nil
}
