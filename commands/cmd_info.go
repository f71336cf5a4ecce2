package commands

import (
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"
)

// INFO and CONFIG GET.

func init() {
	register(
		&command{name: "info", arity: -1, flags: flagLoading, run: cmdInfo, group: "server", since: "0.1.0",
			summary: "Reports the server's state: server, clients, memory, stats, keyspace.", complexity: "O(1), keyspace O(N)",
			arguments: []argDoc{{name: "section", typ: "string", optional: true, multiple: true}}},
		&command{name: "config", arity: -2, flags: flagAdmin, run: cmdConfig, group: "server", since: "0.1.0",
			summary: "CONFIG GET parameter [parameter …]: reads the running configuration.", complexity: "O(N)",
			subs: []string{"get", "help"}},
	)
}

var infoSections = []string{"server", "clients", "memory", "persistence", "stats", "replication", "keyspace"}

// cmdInfo: INFO [section …]
func cmdInfo(c *Client, args [][]byte) {
	want := map[string]bool{}
	for _, a := range args[1:] {
		s := strings.ToLower(string(a))
		switch s {
		case "all", "everything", "default":
			for _, name := range infoSections {
				want[name] = true
			}
		default:
			want[s] = true
		}
	}
	if len(want) == 0 {
		for _, name := range infoSections {
			want[name] = true
		}
	}
	var b strings.Builder
	for _, name := range infoSections {
		if !want[name] {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + strings.ToUpper(name[:1]) + name[1:] + "\r\n")
		for _, kv := range c.srv.infoSection(name, c.now) {
			b.WriteString(kv.Name + ":" + kv.Value + "\r\n")
		}
	}
	c.writeVerbatim(b.String())
}

func (s *Server) infoSection(name string, now int64) []Param {
	itoa := func(v int64) string { return strconv.FormatInt(v, 10) }
	switch name {
	case "server":
		exe, _ := os.Executable()
		up := time.Since(s.start)
		out := []Param{
			{"sluice_version", Version},
			{"redis_version", "7.0.0"}, // what clients that gate features on INFO expect of the commands sluice has
			{"redis_mode", "standalone"},
			{"os", runtime.GOOS + " " + runtime.GOARCH},
			{"arch_bits", strconv.Itoa(strconv.IntSize)},
			{"go_version", runtime.Version()},
			{"gomaxprocs", strconv.Itoa(runtime.GOMAXPROCS(0))},
			{"event_loops", strconv.Itoa(s.cfg.EventLoops)},
			{"process_id", strconv.Itoa(os.Getpid())},
			{"tcp_port", s.port()},
			{"uptime_in_seconds", itoa(int64(up / time.Second))},
			{"uptime_in_days", itoa(int64(up / (24 * time.Hour)))},
			{"hz", "10"},
			{"clock", s.clockMode()},
			{"executable", exe},
		}
		return append(out, s.cfg.Info...)
	case "clients":
		s.mu.Lock()
		n := len(s.clients)
		s.mu.Unlock()
		in, out := s.clientBuffers()
		return []Param{
			{"connected_clients", strconv.Itoa(n)},
			{"maxclients", strconv.Itoa(s.cfg.MaxClients)},
			{"client_recent_max_input_buffer", itoa(in)},
			{"client_recent_max_output_buffer", itoa(out)},
			{"blocked_clients", "0"},
		}
	case "memory":
		out := memoryInfo()
		out = append(out, Param{"mem_clients_normal", itoa(s.clientMem.Load())},
			Param{"maxmemory_clients", itoa(max(s.cfg.MaxMemoryClients, 0))})
		if m, ok := s.ks.(interface{ InfoMemory() [][2]string }); ok {
			for _, kv := range m.InfoMemory() {
				out = append(out, Param{kv[0], kv[1]})
			}
		}
		return out
	case "persistence":
		var out []Param
		if p, ok := s.cfg.Persister.(interface{ Info() [][2]string }); ok {
			for _, kv := range p.Info() {
				out = append(out, Param{kv[0], kv[1]})
			}
		}
		return out
	case "stats":
		t := s.totals()
		out := []Param{
			{"total_connections_received", itoa(s.stats.connections.Load())},
			{"total_commands_processed", itoa(t.cmds)},
			{"total_error_replies", itoa(t.errors)},
			{"total_decisions", itoa(t.allowed + t.denied)},
			{"decisions_allowed", itoa(t.allowed)},
			{"decisions_denied", itoa(t.denied)},
			{"rejected_connections", itoa(s.stats.rejected.Load())},
			{"protocol_errors", itoa(s.stats.protoErrors.Load())},
			{"evicted_clients", itoa(s.stats.evictedClients.Load())},
			{"recovered_panics", itoa(s.stats.panics.Load())},
			{"total_net_input_bytes", itoa(t.netIn)},
			{"total_net_output_bytes", itoa(t.netOut)},
		}
		if st, ok := s.ks.(interface{ InfoStats() [][2]string }); ok {
			for _, kv := range st.InfoStats() {
				out = append(out, Param{kv[0], kv[1]})
			}
		}
		return out
	case "replication":
		return s.replicationInfo()
	case "keyspace":
		n, err := s.ks.DBSize(now)
		if err != nil || n == 0 {
			return nil
		}
		return []Param{{"db0", "keys=" + itoa(n) + ",expires=" + itoa(n) + ",avg_ttl=0"}}
	}
	return nil
}

type totals struct{ cmds, errors, allowed, denied, netIn, netOut int64 }

// totals adds the live clients' counters to those of clients that left.
func (s *Server) totals() totals {
	t := totals{
		cmds:    s.stats.commands.Load(),
		errors:  s.stats.errors.Load(),
		allowed: s.stats.allowed.Load(),
		denied:  s.stats.denied.Load(),
		netIn:   s.stats.netIn.Load(),
		netOut:  s.stats.netOut.Load(),
	}
	s.forEachClient(func(c *Client) {
		t.cmds += c.totals.cmds.Load()
		t.errors += c.totals.errors.Load()
		t.allowed += c.totals.allowed.Load()
		t.denied += c.totals.denied.Load()
		t.netIn += c.totals.netIn.Load()
		t.netOut += c.totals.netOut.Load()
	})
	return t
}

func (s *Server) port() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.lns) == 0 {
		return "0"
	}
	addr := s.lns[0].Addr().String()
	return addr[strings.LastIndexByte(addr, ':')+1:]
}

func (s *Server) clockMode() string {
	if s.clock.Frozen() {
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
func cmdConfig(c *Client, args [][]byte) {
	switch {
	case equalFold(args[1], "get") && len(args) >= 3:
		var pairs []Param
		seen := map[string]bool{}
		steps := globStepLimit
		for _, pat := range args[2:] {
			for _, p := range c.srv.cfg.Params {
				if seen[p.Name] {
					continue
				}
				m, decided, used := matchGlob(pat, []byte(p.Name), true, globMaxStars, steps)
				if !decided {
					c.writeError(errPatternTooComplex)
					return
				}
				if steps -= used; m {
					seen[p.Name] = true
					pairs = append(pairs, p)
				}
			}
		}
		c.writeMap(len(pairs))
		for _, p := range pairs {
			c.writeBulkString(p.Name)
			c.writeBulkString(p.Value)
		}
	case equalFold(args[1], "get"):
		c.writeError(errWrongArgs("config|get"))
	case equalFold(args[1], "help") && len(args) == 2:
		help := []string{
			"CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"GET <pattern>",
			"    Return parameters matching the glob-like <pattern> and their values.",
			"HELP",
			"    Print this help.",
		}
		c.writeArray(len(help))
		for _, l := range help {
			c.writeSimple(l)
		}
	default:
		c.writeError(errUnknownSubcommand(args[1], "CONFIG"))
	}
}
