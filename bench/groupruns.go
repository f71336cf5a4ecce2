package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluice-rl/sluice/bench/internal/proc"
)

// Load runs against a replicated group: every round starts a fresh group of
// -cluster nodes, drives its leader or one of its followers, counts the CPU
// of all its nodes, and reads the leader's group-commit counters (INFO
// replication) around the measured part.

// groupTarget is how a group scenario's group is started and reached.
type groupTarget struct {
	size     int
	fsync    bool
	follower bool   // drive a follower (it forwards to the leader) instead of the leader
	logStore string // --raft-log-store; "": the server's default
}

// groupTargets returns the group scenarios' targets, for a built binary.
func groupTargets(bin, dir string, size int) map[string]*target {
	out := map[string]*target{}
	for _, fsync := range []bool{true, false} {
		for _, follower := range []bool{false, true} {
			name := "group"
			if follower {
				name += "-follower"
			}
			if !fsync {
				name += "-nofsync"
			}
			out[name] = &target{kind: "group", bin: bin, dir: dir, grp: groupTarget{size: size, fsync: fsync, follower: follower}}
		}
	}
	out["group-bolt"] = &target{kind: "group", bin: bin, dir: dir, grp: groupTarget{size: size, fsync: true, logStore: "bolt"}}
	return out
}

// openGroup starts a fresh group and returns its leader or a follower.
func (t *target) openGroup(ctx context.Context) (*server, error) {
	g, m, err := startGroup(ctx, groupConfig{bin: t.bin, dir: t.dir, size: t.grp.size, fsync: t.grp.fsync, logStore: t.grp.logStore})
	if err != nil {
		return nil, err
	}
	leader := m
	if t.grp.follower {
		fs := g.followers(m)
		if len(fs) == 0 {
			g.stop()
			return nil, fmt.Errorf("a group of %d has no follower to drive", t.grp.size)
		}
		m = fs[0]
	}
	return &server{kind: "sluice", addr: m.resp, pid: m.srv.pid, group: g, leader: leader}, nil
}

// cpu returns the user+system CPU time of the server, or of every node of
// its group or cluster.
func (s *server) cpu() (time.Duration, error) {
	var sum time.Duration
	for _, r := range s.roles() {
		c, err := proc.CPU(r.pid)
		if err != nil {
			return 0, err
		}
		sum += c
	}
	return sum, nil
}

// replStats is what the leader's counters say about the measured part.
type replStats struct {
	entries   float64 // log entries the leader wrote
	ops       float64 // operations in them
	maxBatch  int64   // the largest entry since the leader started, in operations (warmup included)
	secs      float64
	elections int64  // term changes seen during the part
	problem   string // why the counters do not describe the part, if they do not
}

func (r *replStats) opsPerEntry() float64 {
	if r.entries == 0 {
		return math.NaN()
	}
	return r.ops / r.entries
}

func (r *replStats) entriesPerSec() float64 {
	if r.secs == 0 {
		return math.NaN()
	}
	return r.entries / r.secs
}

// replWatch holds the leader's counters at the start of the measured part.
type replWatch struct {
	g      *group
	leader *member
	start  replInfo
	terms  map[string]int64
}

func watchRepl(g *group) *replWatch {
	w := &replWatch{g: g, leader: g.leader(), terms: map[string]int64{}}
	if w.leader != nil {
		w.start, _ = w.leader.info(2 * time.Second)
	}
	for _, m := range g.members {
		if m.srv != nil {
			if r, err := m.info(2 * time.Second); err == nil {
				w.terms[m.id] = r.int("term")
			}
		}
	}
	return w
}

// finish reads the counters again and returns the part's statistics.
func (w *replWatch) finish(elapsed time.Duration) *replStats {
	st := &replStats{secs: elapsed.Seconds()}
	for _, m := range w.g.members {
		if m.srv == nil {
			continue
		}
		if r, err := m.info(2 * time.Second); err == nil {
			st.elections = max(st.elections, r.int("term")-w.terms[m.id])
		}
	}
	if w.leader == nil || w.start == nil {
		st.problem = "no ready leader at the start of the measured part"
		return st
	}
	end, err := w.leader.info(2 * time.Second)
	switch {
	case err != nil:
		st.problem = "INFO replication on the leader: " + err.Error()
		return st
	case end["role"] != "leader":
		st.problem = w.leader.id + " was no longer the leader at the end"
		return st
	}
	st.entries = float64(end.int("log_entries_written") - w.start.int("log_entries_written"))
	st.ops = end.float("batch_ops_avg")*float64(end.int("log_entries_written")) -
		w.start.float("batch_ops_avg")*float64(w.start.int("log_entries_written"))
	st.maxBatch = end.int("batch_ops_max")
	return st
}

// add returns the statistics of r's leaders and o's together: a cluster's
// groups over the same part. A nil r is none.
func (r *replStats) add(o *replStats) *replStats {
	if r == nil {
		return o
	}
	out := *r
	if out.problem == "" {
		out.problem = o.problem
	}
	out.entries += o.entries
	out.ops += o.ops
	out.maxBatch = max(out.maxBatch, o.maxBatch)
	out.elections += o.elections
	return &out
}

// combineRepl takes the median of the rounds' rates and the largest batch.
func combineRepl(rs []*result) *replStats {
	var per, eps []float64
	out := &replStats{}
	for _, r := range rs {
		if r.repl == nil {
			return nil
		}
		if r.repl.problem != "" && out.problem == "" {
			out.problem = r.repl.problem
		}
		out.elections += r.repl.elections
		out.maxBatch = max(out.maxBatch, r.repl.maxBatch)
		per = append(per, r.repl.opsPerEntry())
		eps = append(eps, r.repl.entriesPerSec())
	}
	// A synthetic part with the median rates over one second.
	out.secs = 1
	out.entries = median(eps)
	out.ops = median(per) * out.entries
	return out
}

// Replication target: decisions per second through a group with fsync.
const replTarget = 100_000

var replColumns = []string{"scenario", "P", "decisions/s", "log entries/s", "ops/entry", "largest entry",
	"elections", "target ≥ 100k/s"}

func (r *result) replRow() []string {
	s := r.repl
	head := []string{r.spec.sc.label, fmt.Sprint(r.spec.depth), groupDigits(r.opsPerSec())}
	if s.problem != "" {
		return append(head, "-", "-", "-", fmt.Sprint(s.elections), s.problem)
	}
	verdict := "-"
	if strings.HasPrefix(r.spec.sc.server, "group") && !strings.HasSuffix(r.spec.sc.server, "nofsync") {
		verdict = "not met"
		if r.opsPerSec() >= replTarget {
			verdict = "met"
		}
	}
	return append(head, groupDigits(s.entriesPerSec()), fmt.Sprintf("%.1f", s.opsPerEntry()),
		fmt.Sprint(s.maxBatch), fmt.Sprint(s.elections), verdict)
}

// replResults are the runs that read a leader's counters.
func (rep *report) replResults() []*result {
	var out []*result
	for _, r := range rep.results {
		if r.repl != nil && r.skipped == "" {
			out = append(out, r)
		}
	}
	return out
}

const replTitle = "Group commit on the leader (measured part; median round)"

const replNote = "`decisions/s` is what the clients got; `log entries/s` and `ops/entry` come from the leader's " +
	"`INFO replication` counters (log_entries_written, batch_ops_avg) read at the start and the end of the measured part; " +
	"`largest entry` is batch_ops_max since the leader started (warmup included); `elections` counts term changes " +
	"during the measured parts of all rounds (0: no leader change under load). `srv CPU s/M` of a group run is the " +
	"CPU of all its nodes. A cluster's row sums its groups' leaders: `log entries/s` of all, `ops/entry` over all."

func (rep *report) printRepl(w io.Writer) {
	rs := rep.replResults()
	if len(rs) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s\n", replTitle)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(replColumns, "\t")+"\t")
	for _, r := range rs {
		fmt.Fprintln(tw, strings.Join(r.replRow(), "\t")+"\t")
	}
	tw.Flush()
}

func (rep *report) markdownRepl(b *strings.Builder) {
	rs := rep.replResults()
	if len(rs) == 0 {
		return
	}
	fmt.Fprintf(b, "### %s\n\n%s\n\n", replTitle, replNote)
	b.WriteString("| " + strings.Join(replColumns, " | ") + " |\n|")
	for range replColumns {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, r := range rs {
		fmt.Fprintf(b, "| %s |\n", strings.Join(r.replRow(), " | "))
	}
	b.WriteString("\n")
}
