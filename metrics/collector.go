package metrics

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-rl/sluice/commands"
	"github.com/sluice-rl/sluice/internal/figure"
)

// Source is what the collector reads at each scrape: the commands'
// Handler.
type Source interface {
	Figures() commands.Figures
	CommandStats() []commands.CommandStat
	FamilyLatency() []commands.Histogram
	ErrorStats() []commands.ErrorStat
	TopKeys(denied bool, window, n int) []commands.TopEntry
	PolicyStats() []commands.PolicyStat
}

// Labels are bounded: command names (the registered commands), outcomes
// (two), families (commands.Families), error codes (at most 128, as INFO
// errorstats tracks them), Raft roles, policy names (at most 256 and
// "_other"), and the top keys' lists (two) and ranks (TopRanks). No key or subject is ever a
// label.
func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("sluice_"+name, help, labels, nil)
}

var (
	dCommands  = desc("commands_total", "Commands run, by command.", "command")
	dRejected  = desc("commands_rejected_total", "Commands refused before running (arity, authentication), by command.", "command")
	dFailed    = desc("commands_failed_total", "Commands that ran and answered an error, by command.", "command")
	dDecisions = desc("decisions_total", "Rate-limit decisions, by command and outcome (allowed, denied).", "command", "outcome")
	dCmdTime   = desc("command_duration_seconds_total", "Commands' share of their batches' time, by command.", "command")
	dLatency   = desc("request_duration_seconds", "Time a command's reply waited in the server (its batch's time, read to replies ready), by command family.", "family")
	dErrors    = desc("error_replies_total", "Error replies, by error code (the first word of the reply).", "code")

	dClients      = desc("connected_clients", "Connections being served.")
	dConnections  = desc("connections_total", "Connections accepted since start, refused ones included.")
	dRejectedConn = desc("rejected_connections_total", "Connections refused at maxclients.")
	dProtoErrors  = desc("protocol_errors_total", "Connections closed for a broken frame.")
	dPanics       = desc("recovered_panics_total", "Command panics recovered (the client was closed, the server kept serving).")
	dEvictedConns = desc("evicted_clients_total", "Connections closed for maxmemory-clients.")
	dNetIn        = desc("net_input_bytes_total", "Bytes read from clients.")
	dNetOut       = desc("net_output_bytes_total", "Bytes written to clients.")
	dClientMem    = desc("client_memory_bytes", "Memory held by clients' buffers and sessions.")

	dSnapInProgress = desc("snapshot_in_progress", "1 while a snapshot is being written.")
	dSnapLast       = desc("snapshot_last_success_timestamp_seconds", "Unix time of the last successful snapshot (the start-up load counts).")
	dSnapAge        = desc("snapshot_age_seconds", "Seconds since the last successful snapshot.")
	dSnapDuration   = desc("snapshot_last_duration_seconds", "How long the last snapshot took.")
	dSnapOK         = desc("snapshot_last_success", "1 if the last snapshot succeeded, 0 if it failed.")
	dSnaps          = desc("snapshots_total", "Snapshots written.")
	dAOFWriteOK     = desc("aof_last_write_success", "1 if the last write of the append-only log succeeded, 0 if it failed.")
	dAOFPending     = desc("aof_pending_bytes", "Bytes appended to the append-only log and not yet written.")
	dWritesRefused  = desc("writes_refused", "1 while changes are refused with MISCONF (the log or the periodic save cannot write).")

	dRaftRole    = desc("raft_role", "1 for this node's Raft role (leader, follower, candidate, shutdown).", "role")
	dRaftTerm    = desc("raft_term", "The node's Raft term.")
	dRaftCommit  = desc("raft_commit_index", "The Raft log's commit index as this node knows it.")
	dRaftApplied = desc("raft_applied_index", "The last Raft log index this node applied.")
	dRaftLast    = desc("raft_last_log_index", "The last index in this node's Raft log.")
	dRaftEntries = desc("raft_log_entries_written_total", "Raft log entries this node wrote as leader.")
	dRaftPerEnt  = desc("raft_decisions_per_entry", "Average operations per Raft log entry this node wrote.")
	dRaftContact = desc("raft_last_contact_seconds", "Seconds since a follower last heard from the leader (0 on the leader).")

	dInfo = desc("build_info", "1, labelled with the version.", "version")

	dPolicyDecisions = desc("policy_decisions_total", "RL.CHECK's decisions by policy and outcome (allowed, denied) as replied: "+
		"a shadow policy admits. Policies past the first 256 count as policy=\"_other\".", "policy", "outcome")
	dPolicyShadow = desc("policy_shadow_would_deny_total", "Decisions a shadow policy admitted that its limit denied, by policy.", "policy")

	dTopCount = desc("top_keys", "Approximate: decisions (list=decisions) or denials (list=denied) of the rank-th key "+
		"over the minute in progress and the one before (RL.TOP WINDOW 1m); the true count is within "+
		"sluice_top_keys_error below. Keys are never labels: RL.TOP names them.", "list", "rank")
	dTopErr = desc("top_keys_error", "The most sluice_top_keys overstates the rank-th key's true count.", "list", "rank")
)

var raftRoles = []string{"leader", "follower", "candidate", "shutdown"}

// TopRanks is how many of the top keys the endpoint exports per list.
const TopRanks = 10

// rankLabels are the values of the rank label.
var rankLabels = func() (out [TopRanks]string) {
	for i := range out {
		out[i] = strconv.Itoa(i + 1)
	}
	return out
}()

// Collector is a prometheus.Collector of a Source's figures, read at each
// scrape: nothing is counted on the command path for it.
type Collector struct {
	src Source

	mu    sync.Mutex
	descs map[string]*prometheus.Desc // the figures' descriptions, by metric name
}

// NewCollector returns a Collector of src.
func NewCollector(src Source) *Collector {
	return &Collector{src: src, descs: map[string]*prometheus.Desc{}}
}

// descOf returns the description of a figure's metric, made once.
func (c *Collector) descOf(d figure.Desc) *prometheus.Desc {
	c.mu.Lock()
	defer c.mu.Unlock()
	pd, ok := c.descs[d.Metric]
	if !ok {
		pd = desc(d.Metric, d.Help)
		c.descs[d.Metric] = pd
	}
	return pd
}

// collectFigures sends the figures of fs that have a metric, as their
// Kind says.
func (c *Collector) collectFigures(ch chan<- prometheus.Metric, fs []figure.Figure) {
	for _, f := range fs {
		var t prometheus.ValueType
		switch f.Kind {
		case figure.Counter:
			t = prometheus.CounterValue
		case figure.Gauge:
			t = prometheus.GaugeValue
		default:
			continue
		}
		if f.Metric != "" {
			ch <- prometheus.MustNewConstMetric(c.descOf(f.Desc), t, f.Num)
		}
	}
}

// Describe sends every metric's description: the fixed ones, and those
// of the figures the source has now (none without a source).
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{dCommands, dRejected, dFailed, dDecisions, dCmdTime, dLatency, dErrors,
		dClients, dConnections, dRejectedConn, dProtoErrors, dPanics, dEvictedConns, dNetIn, dNetOut, dClientMem,
		dSnapInProgress, dSnapLast, dSnapAge, dSnapDuration, dSnapOK, dSnaps, dAOFWriteOK, dAOFPending, dWritesRefused,
		dRaftRole, dRaftTerm, dRaftCommit, dRaftApplied, dRaftLast, dRaftEntries, dRaftPerEnt, dRaftContact, dInfo,
		dTopCount, dTopErr, dPolicyDecisions, dPolicyShadow} {
		ch <- d
	}
	if c.src == nil {
		return
	}
	f := c.src.Figures()
	for _, fs := range [][]figure.Figure{f.Keyspace, f.Server, f.Leases} {
		for _, f := range fs {
			if f.Metric != "" {
				ch <- c.descOf(f.Desc)
			}
		}
	}
}

// Collect reads the figures and sends them.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(dInfo, 1, commands.Version)
	for _, cs := range c.src.CommandStats() {
		counter(dCommands, float64(cs.Calls), cs.Name)
		counter(dRejected, float64(cs.Rejected), cs.Name)
		counter(dFailed, float64(cs.Failed), cs.Name)
		counter(dCmdTime, cs.Time.Seconds(), cs.Name)
		if cs.Allowed+cs.Denied > 0 {
			counter(dDecisions, float64(cs.Allowed), cs.Name, "allowed")
			counter(dDecisions, float64(cs.Denied), cs.Name, "denied")
		}
	}
	for i, h := range c.src.FamilyLatency() {
		ch <- prometheus.MustNewConstHistogram(dLatency, uint64(h.Count()), h.Sum.Seconds(), buckets(&h),
			commands.Families()[i])
	}
	for _, e := range c.src.ErrorStats() {
		counter(dErrors, float64(e.Count), e.Code)
	}
	for _, p := range c.src.PolicyStats() {
		counter(dPolicyDecisions, float64(p.Allowed), p.Name, "allowed")
		counter(dPolicyDecisions, float64(p.Denied), p.Name, "denied")
		counter(dPolicyShadow, float64(p.ShadowWouldDeny), p.Name)
	}
	for _, list := range []string{"denied", "decisions"} {
		for _, e := range c.src.TopKeys(list == "denied", 0, TopRanks) {
			gauge(dTopCount, float64(e.Count), list, rankLabels[e.Rank-1])
			gauge(dTopErr, float64(e.Err), list, rankLabels[e.Rank-1])
		}
	}
	f := c.src.Figures()
	t := f.Transport
	gauge(dClients, float64(t.Clients))
	counter(dConnections, float64(t.Connections))
	counter(dRejectedConn, float64(t.Rejected))
	counter(dProtoErrors, float64(t.ProtocolErrors))
	counter(dPanics, float64(t.Panics))
	counter(dEvictedConns, float64(t.EvictedClients))
	counter(dNetIn, float64(t.NetIn))
	counter(dNetOut, float64(t.NetOut))
	gauge(dClientMem, float64(t.ClientMemory))
	c.collectFigures(ch, f.Keyspace)
	c.collectFigures(ch, f.Server)
	c.collectFigures(ch, f.Leases)
	if p := f.Persistence; p != nil {
		gauge(dSnapInProgress, b2f(p.BackgroundSaveRunning))
		gauge(dSnapLast, float64(p.LastSave))
		if p.LastSave > 0 {
			gauge(dSnapAge, time.Since(time.Unix(p.LastSave, 0)).Seconds())
		}
		gauge(dSnapDuration, p.LastSaveTook.Seconds())
		gauge(dSnapOK, b2f(p.LastSaveOK))
		counter(dSnaps, float64(p.Saves))
	}
	if a := f.AppendOnly; a != nil {
		gauge(dAOFWriteOK, b2f(a.LastWriteOK))
		gauge(dAOFPending, float64(a.PendingBytes))
	}
	gauge(dWritesRefused, b2f(f.WritesRefused))
	if r := f.Replication; r != nil {
		c.collectRaft(r, gauge, counter)
	}
}

// collectRaft sends the Raft figures of INFO replication's fields.
func (c *Collector) collectRaft(fields [][2]string, gauge, counter func(*prometheus.Desc, float64, ...string)) {
	num := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
	for _, kv := range fields {
		switch kv[0] {
		case "role":
			for _, r := range raftRoles {
				gauge(dRaftRole, b2f(r == kv[1]), r)
			}
		case "term":
			gauge(dRaftTerm, num(kv[1]))
		case "commit_index":
			gauge(dRaftCommit, num(kv[1]))
		case "applied_index":
			gauge(dRaftApplied, num(kv[1]))
		case "last_log_index":
			gauge(dRaftLast, num(kv[1]))
		case "log_entries_written":
			counter(dRaftEntries, num(kv[1]))
		case "batch_ops_avg":
			gauge(dRaftPerEnt, num(kv[1]))
		case "last_contact_ms":
			if v := num(kv[1]); v >= 0 {
				gauge(dRaftContact, v/1000)
			}
		}
	}
}

// buckets returns a histogram's cumulative counts at every doubling of its
// bounds (1µs, 2µs … 2.1s): Prometheus's series stay few, and the finer
// buckets serve INFO latencystats.
func buckets(h *commands.Histogram) map[float64]uint64 {
	out := map[float64]uint64{}
	var cum int64
	for k := 0; k < commands.LatencyBuckets; k++ {
		cum += h.Counts[k]
		if k%commands.LatencyPerDoubling == 0 {
			out[commands.LatencyBound(k).Seconds()] = uint64(cum)
		}
	}
	return out
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
