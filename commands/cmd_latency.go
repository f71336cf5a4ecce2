package commands

import (
	"strings"
)

// LATENCY: Redis's latency monitor, as far as sluice has one. sluice
// keeps no latency events (Redis's latency-monitor-threshold is 0, off, by
// default, and then Redis has none either): LATEST and HISTORY answer
// empty, RESET resets nothing. HISTOGRAM answers from the per-command
// latency histograms (cmdstats.go).

func init() {
	register(&command{name: "latency", arity: -2, flags: flagAdmin | flagLoading, run: cmdLatency, group: "server",
		since: "0.2.0", summary: "LATENCY HISTOGRAM [command …]: per-command latency distribution; LATEST, HISTORY, RESET, DOCTOR, HELP.",
		complexity: "O(N) where N is the number of commands", subs: []string{"latest", "history", "reset", "histogram", "doctor", "help"}})
}

var latencyHelp = []string{
	"LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"DOCTOR",
	"    Return a human readable latency analysis report.",
	"HISTORY <event>",
	"    Return time-latency samples for the <event> class (sluice keeps none).",
	"LATEST",
	"    Return the latest latency samples for all events (sluice keeps none).",
	"RESET [<event> ...]",
	"    Reset latency data of one or more <event> classes.",
	"HISTOGRAM [COMMAND ...]",
	"    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
	"    If no commands are specified then all histograms are replied.",
	"HELP",
	"    Prints this help.",
}

// cmdLatency: LATENCY LATEST | HISTORY event | RESET [event …] |
// HISTOGRAM [command …] | DOCTOR | HELP
func cmdLatency(s *session, args [][]byte) {
	sub, n := args[1], len(args)
	switch {
	case equalFold(sub, "latest") && n == 2:
		s.writeArray(0)
	case equalFold(sub, "history") && n == 3:
		s.writeArray(0)
	case equalFold(sub, "reset"):
		s.writeInt(0)
	case equalFold(sub, "histogram"):
		s.latencyHistogram(args[2:])
	case equalFold(sub, "doctor") && n == 2:
		s.writeVerbatim("Dave, no latency spike was observed during the lifetime of this sluice instance, not in the " +
			"slightest bit. sluice keeps no latency events; see LATENCY HISTOGRAM and INFO latencystats.\n")
	case equalFold(sub, "help") && n == 2:
		s.writeArray(len(latencyHelp))
		for _, l := range latencyHelp {
			s.writeSimple(l)
		}
	case equalFold(sub, "latest"), equalFold(sub, "history"), equalFold(sub, "doctor"), equalFold(sub, "help"):
		s.writeError(errWrongArgs("latency|" + strings.ToLower(string(sub))))
	default:
		s.writeError(errUnknownSubcommand(sub, "LATENCY"))
	}
}

// latencyHistogram writes Redis 7's LATENCY HISTOGRAM reply: for each
// command called (those named, or all), its calls and its cumulative
// counts at each power of two of microseconds where the count grows.
// Unknown names are left out, as Redis does.
func (s *session) latencyHistogram(names [][]byte) {
	var stats []CommandStat
	for _, cs := range sortedStats(s.h.CommandStats()) {
		if cs.Calls == 0 {
			continue
		}
		if len(names) > 0 {
			found := false
			for _, n := range names {
				found = found || equalFold(n, cs.Name)
			}
			if !found {
				continue
			}
		}
		stats = append(stats, cs)
	}
	s.writeMap(len(stats))
	for _, cs := range stats {
		type bucket struct{ us, cum int64 }
		var bs []bucket
		var cum int64
		for k := 0; k <= latBuckets; k++ {
			cum += cs.Latency.Counts[k]
			last := k == latBuckets
			if (k%latPerDoubling == 0 || last) && cum > 0 && (len(bs) == 0 || bs[len(bs)-1].cum < cum) {
				b := latBounds[min(k, latBuckets-1)]
				bs = append(bs, bucket{b / 1000, cum})
			}
		}
		s.writeBulkString(cs.Name)
		s.writeMap(2)
		s.writeBulkString("calls")
		s.writeInt(cs.Calls)
		s.writeBulkString("histogram_usec")
		s.writeMap(len(bs))
		for _, b := range bs {
			s.writeInt(b.us)
			s.writeInt(b.cum)
		}
	}
}
