package commands

import (
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-rl/sluice/glob"
	"github.com/sluice-rl/sluice/internal/figure"
)

// INFO and CONFIG GET.

func init() {
	register(
		&command{name: "info", arity: -1, flags: flagLoading, run: cmdInfo, categories: []string{"dangerous"}, group: "server", since: "0.1.0",
			summary: "Reports the server's state: server, clients, memory, stats, keyspace.", complexity: "O(1), keyspace O(N)",
			arguments: []argDoc{{name: "section", typ: "string", optional: true, multiple: true}}},
		&command{name: "config", arity: -2, flags: flagAdmin, run: cmdConfig, group: "server", since: "0.1.0",
			summary: "CONFIG GET parameter [parameter …]: reads the running configuration; CONFIG SET changes it, " +
				"CONFIG REWRITE writes it to the config file; CONFIG RESETSTAT zeroes the statistics.", complexity: "O(N)",
			subs: []string{"get", "set", "rewrite", "resetstat", "help"}},
	)
}

// cmdInfo: INFO [section …]
func cmdInfo(s *session, args [][]byte) {
	want := map[string]bool{}
	for _, a := range args[1:] {
		name := strings.ToLower(string(a))
		switch name {
		case "all", "everything":
			for _, name := range infoAll {
				want[name] = true
			}
		case "default":
			for _, name := range infoDefault {
				want[name] = true
			}
		default:
			want[name] = true
		}
	}
	if len(want) == 0 {
		for _, name := range infoDefault {
			want[name] = true
		}
	}
	var b strings.Builder
	for _, name := range infoAll {
		if !want[name] {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		title := strings.ToUpper(name[:1]) + name[1:]
		if name == "cpu" {
			title = "CPU"
		}
		b.WriteString("# " + title + "\r\n")
		for _, kv := range infoSections[name](s.h, s) {
			b.WriteString(kv.Name + ":" + kv.Value + "\r\n")
		}
	}
	s.writeVerbatim(b.String())
}

// infoSections are INFO's sections, by name (infoAll orders them): each
// returns its lines, read from the transport, the sessions, the key space,
// the persister and the cluster.
var infoSections = map[string]func(h *Handler, s *session) []Param{
	"server":       (*Handler).serverInfo,
	"clients":      (*Handler).clientsInfo,
	"memory":       (*Handler).memoryInfo,
	"persistence":  (*Handler).persistenceInfo,
	"stats":        (*Handler).statsInfo,
	"replication":  (*Handler).replicationInfo,
	"cpu":          func(h *Handler, _ *session) []Param { return cpuInfo() },
	"commandstats": func(h *Handler, _ *session) []Param { return h.commandstatsInfo() },
	"errorstats":   func(h *Handler, _ *session) []Param { return h.errorstatsInfo() },
	"latencystats": func(h *Handler, _ *session) []Param { return h.latencystatsInfo() },
	"policies":     func(h *Handler, _ *session) []Param { return h.policiesInfo() },
	"leases":       func(h *Handler, _ *session) []Param { return h.leasesInfo() },
	"keyspace":     (*Handler).keyspaceInfo,
	"cluster":      func(h *Handler, _ *session) []Param { return []Param{h.clusterEnabled()} },
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// keyspaceFigures returns the key space's figures that print in section,
// none without a StatsReporter.
func (h *Handler) keyspaceFigures(section figure.Section) []Param {
	r := h.cfg.Stats
	if r == nil {
		return nil
	}
	return params(r.KeyspaceFigures(), section)
}

func (h *Handler) serverInfo(_ *session) []Param {
	exe, _ := os.Executable()
	up := time.Since(h.start)
	ts := h.transportStats()
	port := ts.Port
	if port == "" {
		port = "0"
	}
	out := []Param{
		{"sluice_version", Version},
		{"redis_version", "7.0.0"}, // what clients that gate features on INFO expect of the commands sluice has
		{"redis_mode", "standalone"},
		{"os", runtime.GOOS + " " + runtime.GOARCH},
		{"arch_bits", strconv.Itoa(strconv.IntSize)},
		{"go_version", runtime.Version()},
		{"gomaxprocs", strconv.Itoa(runtime.GOMAXPROCS(0))},
		{"event_loops", strconv.Itoa(ts.EventLoops)},
		{"process_id", strconv.Itoa(os.Getpid())},
		{"tcp_port", port},
		{"uptime_in_seconds", itoa(int64(up / time.Second))},
		{"uptime_in_days", itoa(int64(up / (24 * time.Hour)))},
		{"hz", "10"},
		{"clock", h.clockMode()},
		{"executable", exe},
	}
	return append(out, h.cfg.Info...)
}

func (h *Handler) clientsInfo(_ *session) []Param {
	ts := h.transportStats()
	return []Param{
		{"connected_clients", strconv.Itoa(ts.Clients)},
		{"maxclients", strconv.Itoa(ts.MaxClients)},
		{"client_recent_max_input_buffer", itoa(ts.MaxQueryBuffer)},
		{"client_recent_max_output_buffer", itoa(ts.MaxOutputBuffer)},
		{"blocked_clients", "0"},
	}
}

func (h *Handler) memoryInfo(_ *session) []Param {
	ts := h.transportStats()
	out := memoryInfo()
	if used, err := strconv.ParseInt(out[0].Value, 10, 64); err == nil {
		h.notePeak(used) // used_memory_peak is never below the used_memory beside it
	}
	out = append(out, Param{"mem_clients_normal", itoa(ts.ClientMemory)},
		Param{"maxmemory_clients", itoa(ts.MaxMemoryClients)})
	out = append(out, h.serverSection(figure.Memory)...)
	return append(out, h.keyspaceFigures(figure.Memory)...)
}

func (h *Handler) persistenceInfo(_ *session) []Param {
	p := h.cfg.Persister
	if p == nil {
		return nil
	}
	st := p.PersistenceStats()
	status := "ok"
	if !st.LastSaveOK {
		status = "err"
	}
	running := "0"
	if st.BackgroundSaveRunning {
		running = "1"
	}
	out := []Param{
		{"rdb_bgsave_in_progress", running},
		{"rdb_last_save_time", itoa(st.LastSave)},
		{"rdb_last_bgsave_status", status},
		{"rdb_last_save_time_ms", itoa(st.LastSaveTook.Milliseconds())},
		{"rdb_saves", itoa(st.Saves)},
	}
	out = append(out, params(p.Figures(), figure.Persistence)...)
	out = append(out, h.keyspaceFigures(figure.Persistence)...)
	out = append(out, Param{"snapshot_file", st.Path})
	return append(out, h.appendOnlyInfo()...)
}

func (h *Handler) statsInfo(s *session) []Param {
	ts := h.transportStats()
	t := h.totals(s)
	out := []Param{
		{"total_connections_received", itoa(ts.Connections)},
		{"total_commands_processed", itoa(t.cmds)},
		{"total_error_replies", itoa(t.errors + ts.ProtocolErrors)},
		{"total_decisions", itoa(t.allowed + t.denied)},
		{"decisions_allowed", itoa(t.allowed)},
		{"decisions_denied", itoa(t.denied)},
		{"rejected_connections", itoa(ts.Rejected)},
		{"protocol_errors", itoa(ts.ProtocolErrors)},
		{"evicted_clients", itoa(ts.EvictedClients)},
		{"recovered_panics", itoa(ts.Panics)},
		{"total_net_input_bytes", itoa(ts.NetIn)},
		{"total_net_output_bytes", itoa(ts.NetOut)},
	}
	out = append(out, h.serverSection(figure.Stats)...)
	return append(out, h.keyspaceFigures(figure.Stats)...)
}

func (h *Handler) replicationInfo(_ *session) []Param {
	if h.cfg.Cluster == nil {
		return []Param{{"role", "master"}, {"connected_slaves", "0"}, h.clusterEnabled()}
	}
	var out []Param
	for _, kv := range h.cfg.Cluster.InfoReplication() {
		out = append(out, Param{kv[0], kv[1]})
	}
	return append(out, Param{"cluster_enabled", "1"})
}

func (h *Handler) keyspaceInfo(s *session) []Param {
	n, err := h.ks.DBSize(s.conn.Now())
	if err != nil || n == 0 {
		return nil
	}
	return []Param{{"db0", h.keyspaceLine(s.conn.Now(), n)}}
}

type sums struct{ cmds, errors, allowed, denied int64 }

// totals adds the live sessions' counters to those of sessions that ended.
func (h *Handler) totals(self *session) sums {
	t := sums{
		cmds:    h.ended.cmds.Load(),
		errors:  h.ended.errors.Load(),
		allowed: h.ended.allowed.Load(),
		denied:  h.ended.denied.Load(),
	}
	h.conns(self, func(s *session) {
		t.cmds += s.totals.cmds.Load()
		t.errors += s.totals.errors.Load()
		t.allowed += s.totals.allowed.Load()
		t.denied += s.totals.denied.Load()
	})
	return t
}

func (h *Handler) clockMode() string {
	if h.clock.Frozen() {
		return "debug"
	}
	return "real"
}

// memoryInfo reads the Go runtime's memory figures without stopping the
// world (runtime/metrics rather than ReadMemStats).
func memoryInfo() []Param {
	samples := []metrics.Sample{
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/gc/heap/goal:bytes"},
		{Name: "/gc/cycles/total:gc-cycles"},
	}
	metrics.Read(samples)
	val := func(i int) string {
		if samples[i].Value.Kind() != metrics.KindUint64 {
			return "0"
		}
		return strconv.FormatUint(samples[i].Value.Uint64(), 10)
	}
	out := []Param{
		{"used_memory", val(1)},
		{"used_memory_runtime", val(0)},
		{"used_memory_rss", strconv.FormatInt(rss(), 10)},
		{"gc_heap_goal", val(2)},
		{"gc_cycles", val(3)},
		{"mem_allocator", "go"},
	}
	return out
}

// rss reads the process's resident set size from /proc, 0 where there is
// no /proc.
func rss() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// cmdConfig: CONFIG GET parameter [parameter …] | CONFIG HELP
func cmdConfig(s *session, args [][]byte) {
	switch {
	case equalFold(args[1], "get") && len(args) >= 3:
		var pairs []Param
		seen := map[string]bool{}
		steps := glob.StepLimit
		for _, pat := range args[2:] {
			for _, p := range s.h.params() {
				if seen[p.Name] {
					continue
				}
				m, decided, used := glob.Match(pat, []byte(p.Name), true, glob.MaxStars, steps)
				if !decided {
					s.writeError(errPatternTooComplex)
					return
				}
				if steps -= used; m {
					seen[p.Name] = true
					pairs = append(pairs, p)
				}
			}
		}
		s.writeMap(len(pairs))
		for _, p := range pairs {
			s.writeBulkString(p.Name)
			s.writeBulkString(p.Value)
		}
	case equalFold(args[1], "get"):
		s.writeError(errWrongArgs("config|get"))
	case equalFold(args[1], "set"):
		s.configSet(args[2:])
	case equalFold(args[1], "rewrite") && len(args) == 2:
		s.configRewrite()
	case equalFold(args[1], "rewrite"):
		s.writeError(errWrongArgs("config|rewrite"))
	case equalFold(args[1], "resetstat") && len(args) == 2:
		s.h.resetStats()
		s.writeOK()
	case equalFold(args[1], "resetstat"):
		s.writeError(errWrongArgs("config|resetstat"))
	case equalFold(args[1], "help") && len(args) == 2:
		help := []string{
			"CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"GET <pattern>",
			"    Return parameters matching the glob-like <pattern> and their values.",
			"SET <directive> <value> [<directive> <value> ...]",
			"    Set the configuration <directive> to <value>.",
			"RESETSTAT",
			"    Reset statistics reported by the INFO command.",
			"REWRITE",
			"    Rewrite the configuration file.",
			"HELP",
			"    Print this help.",
		}
		s.writeArray(len(help))
		for _, l := range help {
			s.writeSimple(l)
		}
	default:
		s.writeError(errUnknownSubcommand(args[1], "CONFIG"))
	}
}

// clusterEnabled is INFO's cluster_enabled: 1 where the CLUSTER commands
// answer (docs/cluster.md).
func (h *Handler) clusterEnabled() Param {
	if h.cfg.Topology == nil && h.cfg.Cluster == nil {
		return Param{"cluster_enabled", "0"}
	}
	return Param{"cluster_enabled", "1"}
}
