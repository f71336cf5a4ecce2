package commands

import (
	"sort"
	"strconv"
	"syscall"
	"time"
)

// INFO's sections of per-command figures (commandstats, errorstats,
// latencystats) and cpu, in Redis 7's field names and formats.

// The sections INFO prints with no argument (or "default"), and with "all"
// or "everything", in Redis's order.
var (
	infoDefault = []string{"server", "clients", "memory", "persistence", "stats", "replication", "cpu",
		"errorstats", "cluster", "policies", "keyspace"}
	infoAll = []string{"server", "clients", "memory", "persistence", "stats", "replication", "cpu",
		"commandstats", "errorstats", "latencystats", "cluster", "policies", "leases", "keyspace"}
)

func (h *Handler) commandstatsInfo() (out []Param) {
	for _, cs := range sortedStats(h.CommandStats()) {
		us := cs.Time.Microseconds()
		per := 0.0
		if cs.Calls > 0 {
			per = float64(cs.Time) / float64(time.Microsecond) / float64(cs.Calls)
		}
		out = append(out, Param{"cmdstat_" + cs.Name, "calls=" + strconv.FormatInt(cs.Calls, 10) +
			",usec=" + strconv.FormatInt(us, 10) + ",usec_per_call=" + strconv.FormatFloat(per, 'f', 2, 64) +
			",rejected_calls=" + strconv.FormatInt(cs.Rejected, 10) +
			",failed_calls=" + strconv.FormatInt(cs.Failed, 10)})
	}
	return out
}

func (h *Handler) errorstatsInfo() (out []Param) {
	for _, e := range h.ErrorStats() {
		out = append(out, Param{"errorstat_" + e.Code, "count=" + strconv.FormatInt(e.Count, 10)})
	}
	return out
}

func (h *Handler) latencystatsInfo() (out []Param) {
	for _, cs := range sortedStats(h.CommandStats()) {
		if cs.Calls == 0 {
			continue
		}
		p := func(q float64) string {
			return strconv.FormatFloat(float64(cs.Latency.Quantile(q))/float64(time.Microsecond), 'f', 3, 64)
		}
		out = append(out, Param{"latency_percentiles_usec_" + cs.Name,
			"p50=" + p(0.5) + ",p99=" + p(0.99) + ",p99.9=" + p(0.999)})
	}
	return out
}

func cpuInfo() []Param {
	sec := func(tv syscall.Timeval) string {
		return strconv.FormatFloat(float64(tv.Sec)+float64(tv.Usec)/1e6, 'f', 6, 64)
	}
	var self, children syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	return []Param{
		{"used_cpu_sys", sec(self.Stime)},
		{"used_cpu_user", sec(self.Utime)},
		{"used_cpu_sys_children", sec(children.Stime)},
		{"used_cpu_user_children", sec(children.Utime)},
	}
}

// sortedStats orders command figures by name, as one reads them.
func sortedStats(cs []CommandStat) []CommandStat {
	sort.Slice(cs, func(i, j int) bool { return cs[i].Name < cs[j].Name })
	return cs
}
