package commands

import (
	"math"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/internal/figure"
	"github.com/sluice-rl/sluice/internal/parse"
)

// MEMORY, as Redis has it, for the key space sluice keeps: USAGE estimates
// one key's record (docs/keyspace.md's layout), STATS reports the
// server's memory with Redis's field names, DOCTOR says what looks wrong.
// OBJECT answers FREQ with Redis's error for a server that tracks no
// access frequency (redis-cli --hotkeys prints it and stops), pointing to
// RL.TOP, which does.

func init() {
	register(
		&command{name: "memory", arity: -2, flags: flagReadOnly, run: cmdMemory, group: "server", since: "0.2.0",
			summary:    "MEMORY USAGE key [SAMPLES count] | STATS | DOCTOR | MALLOC-STATS | PURGE | HELP: the memory of a key and of the server.",
			complexity: "O(1)", keySpecs: []keySpec{keyRange(keyRO, 2, 0, 1)},
			subs: []string{"usage", "stats", "doctor", "malloc-stats", "purge", "help"}},
		&command{name: "object", arity: -2, flags: flagReadOnly, run: cmdObject, group: "generic", since: "0.2.0",
			summary:    "OBJECT FREQ | ENCODING | IDLETIME | REFCOUNT key | HELP: a key's internals, as far as sluice keeps them.",
			complexity: "O(1)", keySpecs: []keySpec{keyRange(keyRO, 2, 0, 1)},
			subs: []string{"freq", "encoding", "idletime", "refcount", "help"}},
	)
}

// indexBytesPerKey is the index's share of a key, on average (docs/keyspace.md:
// 10.7 to 21.3 bytes, 16.8 at a million keys).
const indexBytesPerKey = 16

// usageOf estimates the bytes key's record takes from its state: a header
// word, the expiry (unless it is the state's first word or there is none), the state words
// up to the last non-zero one, the variable part's length word and its
// words, and the key padded to a word; plus the index's share.
func usageOf(key []byte, ki algorithms.KeyInfo) int64 {
	words := int64(1) // header
	switch ki.Algo {
	case algorithms.Token, algorithms.Leaky, algorithms.Throttle: // the expiry is the first state word
	case algorithms.Override: // one word for UNLIMITED and DENY, two for a limit; the expiry if any
		words++
		if ki.Expire != math.MaxInt64 {
			words++
		}
		for _, f := range ki.Fields {
			if f.Name == "period_ns" && f.Value != 0 {
				words++
			}
		}
		return (words+(int64(len(key))+7)/8)*8 + indexBytesPerKey
	default:
		if ki.Expire != math.MaxInt64 { // a record that never expires keeps no expiry word
			words++
		}
	}
	var state, ext int64
	for _, f := range ki.Fields {
		switch {
		case ki.Algo == algorithms.Log: // a ring of capacity words, its count in its header
			if f.Name == "capacity" {
				ext = f.Value
			}
		case f.List != nil:
			ext += int64(len(f.List))
		default:
			state++
		}
	}
	words += state
	if ext > 0 {
		words += 1 + ext
	}
	words += (int64(len(key)) + 7) / 8
	return words*8 + indexBytesPerKey
}

var memoryHelp = []string{
	"MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"DOCTOR",
	"    Return memory problems reports.",
	"MALLOC-STATS",
	"    Return internal statistics report from the memory allocator.",
	"PURGE",
	"    Attempt to purge dirty pages for reclamation by the allocator.",
	"STATS",
	"    Return information about the memory usage of the server.",
	"USAGE <key> [SAMPLES <count>]",
	"    Return memory in bytes used by <key> and its value (an estimate from its record's layout).",
	"HELP",
	"    Print this help.",
}

// cmdMemory: MEMORY USAGE key [SAMPLES n] | STATS | DOCTOR | MALLOC-STATS | PURGE | HELP
func cmdMemory(s *session, args [][]byte) {
	sub, n := args[1], len(args)
	switch {
	case equalFold(sub, "usage") && (n == 3 || n == 5 && equalFold(args[3], "samples")):
		if n == 5 {
			if _, ok := parse.Int(args[4]); !ok {
				s.writeError(errNotInteger)
				return
			}
		}
		ki, err := s.h.ks.Info(s.conn.Now(), args[2])
		switch {
		case err != nil:
			s.writeError(err)
		case ki.Algo == algorithms.None:
			s.writeNull()
		default:
			s.writeInt(usageOf(args[2], ki))
		}
	case equalFold(sub, "usage") && n > 3:
		s.writeError(errSyntax)
	case equalFold(sub, "stats") && n == 2:
		s.memoryStats()
	case equalFold(sub, "doctor") && n == 2:
		s.writeVerbatim(s.h.memoryDoctor())
	case equalFold(sub, "malloc-stats") && n == 2:
		s.writeVerbatim("Stats not supported for the current allocator\n")
	case equalFold(sub, "purge") && n == 2:
		debug.FreeOSMemory()
		s.writeOK()
	case equalFold(sub, "help") && n == 2:
		s.writeArray(len(memoryHelp))
		for _, l := range memoryHelp {
			s.writeSimple(l)
		}
	case isSub("memory", sub):
		s.writeError(errWrongArgs("memory|" + strings.ToLower(string(sub))))
	default:
		s.writeError(errUnknownSubcommand(sub, "MEMORY"))
	}
}

// isSub reports whether sub is a subcommand of the command named cmd.
func isSub(cmd string, sub []byte) bool {
	for _, name := range commandTable[cmd].subs {
		if equalFold(sub, name) {
			return true
		}
	}
	return false
}

// memoryStats writes MEMORY STATS: Redis's fields that sluice has, in
// Redis's order, then the key space's own.
func (s *session) memoryStats() {
	h := s.h
	ts := h.transportStats()
	var k keyspaceFigures
	if r := h.cfg.Stats; r != nil {
		k = keyspaceFiguresOf(r.KeyspaceFigures())
	} else if n, err := h.ks.DBSize(s.conn.Now()); err == nil {
		k.Keys = n // a keyspace without figures (a test's): its keys at least
	}
	heap := int64(0)
	for _, p := range memoryInfo() {
		if p.Name == "used_memory" {
			heap, _ = strconv.ParseInt(p.Value, 10, 64)
		}
	}
	total := heap + k.UsedMemory
	perKey := int64(0)
	if k.Keys > 0 {
		perKey = k.UsedMemory / k.Keys
	}
	fields := []struct {
		name string
		v    int64
	}{
		{"total.allocated", total}, {"startup.allocated", 0}, {"replication.backlog", 0},
		{"clients.slaves", 0}, {"clients.normal", ts.ClientMemory}, {"aof.buffer", 0}, {"lua.caches", 0},
		{"overhead.total", heap}, {"keys.count", k.Keys}, {"keys.bytes-per-key", perKey},
		{"dataset.bytes", k.UsedMemory}, {"keyspace.arena.bytes", k.ArenaBytes},
		{"keyspace.index.bytes", k.IndexBytes}, {"keyspace.free.bytes", k.FreeBytes},
		{"maxmemory", k.MaxMemory}, {"rss", rss()}, {"topkeys.bytes", h.top.bytes.Load()},
	}
	s.writeMap(len(fields))
	for _, f := range fields {
		s.writeBulkString(f.name)
		s.writeInt(f.v)
	}
}

// memoryDoctor returns MEMORY DOCTOR's report: the key space near its
// cap, clients holding more than the key space, or nothing to report.
func (h *Handler) memoryDoctor() string {
	r := h.cfg.Stats
	if r == nil {
		return "Hi Sam, this instance keeps no key space figures, my issues detector can't be used in these conditions.\n"
	}
	k := keyspaceFiguresOf(r.KeyspaceFigures())
	ts := h.transportStats()
	if k.Keys == 0 && ts.ClientMemory < 1<<20 {
		return "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these " +
			"conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be " +
			"back to our programming as soon as I finished rebooting.\n"
	}
	var issues []string
	if k.MaxMemory > 0 && k.UsedMemory*10 > k.MaxMemory*9 {
		issues = append(issues, " * Key space near maxmemory: "+fmtInt(k.UsedMemory)+" of "+fmtInt(k.MaxMemory)+
			" bytes. New keys will be refused (OOM) or entries evicted under volatile-ttl; raise maxmemory "+
			"(CONFIG SET maxmemory) or give the server more shards' worth of room.")
	}
	if k.RefusedKeys > 0 {
		issues = append(issues, " * "+fmtInt(k.RefusedKeys)+" new keys were refused at maxmemory since the start.")
	}
	if ts.ClientMemory > 0 && ts.ClientMemory > 2*k.UsedMemory && ts.ClientMemory > 32<<20 {
		issues = append(issues, " * Clients hold "+fmtInt(ts.ClientMemory)+" bytes, more than twice the key space: "+
			"look for clients with large buffers in CLIENT LIST (tot-mem), and maxmemory-clients.")
	}
	if len(issues) == 0 {
		return "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n"
	}
	return "Sam, I detected a few issues in this sluice instance memory implants:\n\n" + strings.Join(issues, "\n\n") +
		"\n\nI'm here to keep you safe, Sam. I want to help you.\n"
}

// cmdObject: OBJECT FREQ|ENCODING|IDLETIME|REFCOUNT key | HELP
func cmdObject(s *session, args [][]byte) {
	sub, n := args[1], len(args)
	if equalFold(sub, "help") && n == 2 {
		help := []string{
			"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"ENCODING <key>",
			"    Return the kind of internal representation used in order to store the value associated with a <key>.",
			"FREQ <key>",
			"    sluice tracks no access frequency: RL.TOP DECISIONS lists the keys decided most often.",
			"IDLETIME <key>",
			"    Return the idle time of the <key> (sluice keeps none: 0).",
			"REFCOUNT <key>",
			"    Return the reference count of the object stored at <key>.",
			"HELP",
			"    Print this help.",
		}
		s.writeArray(len(help))
		for _, l := range help {
			s.writeSimple(l)
		}
		return
	}
	if !isSub("object", sub) {
		s.writeError(errUnknownSubcommand(sub, "OBJECT"))
		return
	}
	if n != 3 {
		s.writeError(errWrongArgs("object|" + strings.ToLower(string(sub))))
		return
	}
	ki, err := s.h.ks.Info(s.conn.Now(), args[2])
	if err != nil {
		s.writeError(err)
		return
	}
	if ki.Algo == algorithms.None {
		s.writeNull()
		return
	}
	switch {
	case equalFold(sub, "freq"):
		s.writeError(errNoLFU)
	case equalFold(sub, "encoding"):
		s.writeBulkString("raw")
	case equalFold(sub, "idletime"):
		s.writeInt(0)
	default: // refcount
		s.writeInt(1)
	}
}

func fmtInt(n int64) string { return strconv.FormatInt(n, 10) }

// keyspaceFigures are the key space's figures MEMORY STATS and MEMORY
// DOCTOR reason about.
type keyspaceFigures struct {
	UsedMemory, ArenaBytes, IndexBytes, FreeBytes, Keys, MaxMemory, RefusedKeys int64
}

func keyspaceFiguresOf(fs []figure.Figure) keyspaceFigures {
	return keyspaceFigures{
		UsedMemory:  figure.Find(fs, "keyspace_used_memory"),
		ArenaBytes:  figure.Find(fs, "keyspace_arena_bytes"),
		IndexBytes:  figure.Find(fs, "keyspace_index_bytes"),
		FreeBytes:   figure.Find(fs, "keyspace_free_bytes"),
		Keys:        figure.Find(fs, "keyspace_keys"),
		MaxMemory:   figure.Find(fs, "maxmemory"),
		RefusedKeys: figure.Find(fs, "oom_refused_keys"),
	}
}
