package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// Fault trials on a replicated group: how long a group takes to decide
// again after its leader is killed (-failover), and how long a restarted
// node takes to catch up (-recovery). Every trial starts a fresh group of
// -cluster nodes with fsync on, as sluice's defaults are, and stops it.

const (
	maxTrials     = 50
	trialBound    = 2 * time.Minute // one trial, start to stop
	maxRecovery   = 10_000_000      // keys
	maxRecoveryDn = 10 * time.Minute
)

type trialOptions struct {
	failover int
	recovery int
	keys     int
	down     time.Duration
}

func (t *trialOptions) flags(fs *flag.FlagSet) {
	fs.IntVar(&t.failover, "failover", 0, "instead of load runs: this many failover trials (kill -9 the leader of a fresh group, time the first admitted decision through a survivor)")
	fs.IntVar(&t.recovery, "recovery", 0, "instead of load runs: this many recovery trials, each with and without a snapshot (kill -9 a follower of a loaded group, restart it, time its catch-up)")
	fs.IntVar(&t.keys, "recovery-keys", 100_000, "keys a recovery trial loads before it restarts a follower")
	fs.DurationVar(&t.down, "recovery-down", 0, "how long the killed follower stays down before its restart")
}

func (t *trialOptions) wanted() bool { return t.failover > 0 || t.recovery > 0 }

func (t *trialOptions) check(size int) error {
	switch {
	case t.failover < 0 || t.failover > maxTrials || t.recovery < 0 || t.recovery > maxTrials:
		return fmt.Errorf("-failover and -recovery: want 0 to %d trials", maxTrials)
	case t.keys < 1 || t.keys > maxRecovery:
		return fmt.Errorf("-recovery-keys %d: want 1 to %d", t.keys, maxRecovery)
	case t.down < 0 || t.down > maxRecoveryDn:
		return fmt.Errorf("-recovery-down %v: want 0 to %v", t.down, maxRecoveryDn)
	case t.wanted() && size < 3:
		return fmt.Errorf("-cluster %d: a fault trial needs a group of at least 3 nodes (a majority must survive)", size)
	}
	return nil
}

// runTrials builds sluice and performs the trials, printing each as it
// finishes and then the medians.
func runTrials(ctx context.Context, o *options, stdout, log io.Writer) error {
	tmp, err := os.MkdirTemp("", "sluice-trials-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin, err := sluiceBinary(ctx, o, tmp, log)
	if err != nil {
		return err
	}
	cfg := groupConfig{bin: bin, dir: tmp, size: o.cluster, fsync: true}
	fmt.Fprintf(stdout, "fault trials on a %d-node group (fsync on, default timeouts); %s\n", o.cluster, commandLine(o))
	fmt.Fprintf(stdout, "load average before: %s\n", loadAverage())
	if o.trials.failover > 0 {
		var fs []*failoverResult
		for i := 1; i <= o.trials.failover; i++ {
			tctx, cancel := context.WithTimeout(ctx, trialBound)
			r, err := failoverTrial(tctx, cfg)
			cancel()
			if err != nil {
				return fmt.Errorf("failover trial %d: %w", i, err)
			}
			fmt.Fprintf(stdout, "failover %d/%d: %s\n", i, o.trials.failover, r)
			fs = append(fs, r)
		}
		printFailoverSummary(stdout, fs)
	}
	if o.trials.recovery > 0 {
		var rs []*recoveryResult
		for i := 1; i <= o.trials.recovery; i++ {
			for _, snap := range []bool{true, false} { // interleaved, so that other work hits both alike
				tctx, cancel := context.WithTimeout(ctx, trialBound+o.trials.down)
				r, err := recoveryTrial(tctx, cfg, o.trials.keys, snap, o.trials.down)
				cancel()
				if err != nil {
					return fmt.Errorf("recovery trial %d: %w", i, err)
				}
				fmt.Fprintf(stdout, "recovery %d/%d: %s\n", i, o.trials.recovery, r)
				rs = append(rs, r)
			}
		}
		printRecoverySummary(stdout, rs)
	}
	fmt.Fprintf(stdout, "load average after: %s\n", loadAverage())
	return nil
}

// medianDur is the median of ds (the mean of the middle two for an even
// count); min and max are returned too.
func medianDur(ds []time.Duration) (med, lo, hi time.Duration) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	n := len(s)
	med = s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return med, s[0], s[n-1]
}

func fmtDur(d time.Duration) string { return fmtLatency(d) }

// countSummary prints a count map as "n × what" items, most frequent first.
func countSummary(m map[string]int) string {
	type kv struct {
		k string
		n int
	}
	var items []kv
	for k, n := range m {
		items = append(items, kv{k, n})
	}
	sort.Slice(items, func(i, j int) bool {
		return items[i].n > items[j].n || items[i].n == items[j].n && items[i].k < items[j].k
	})
	var parts []string
	for _, it := range items {
		parts = append(parts, fmt.Sprintf("%d × %s", it.n, it.k))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}
