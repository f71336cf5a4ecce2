package main

import (
	"math"
	"sort"
	"time"
)

// What a run measured, and the figures the report shows: of one round, or
// the median over rounds, so that a burst of other work on a shared machine
// moves one round rather than the result.

// result is a run: one round as measured, or several combined.
type result struct {
	spec    runSpec
	skipped string // why the run did not happen
	t       *tally
	elapsed time.Duration

	srvCPU, genCPU time.Duration
	cpuKnown       bool
	rssGrowth      int64
	rssKnown       bool
	touched        int64 // distinct logical keys the run used
	dbsize         int64 // server keys at the end, -1 unknown
	version        string
	repl           *replStats // a group's leader during the measured part
	shares         *shares    // the CPU of a group's or cluster's processes by role

	rounds   int       // how many rounds were combined; 0 or 1: one
	combined *figures  // the medians, when rounds were combined
	each     []figures // the combined rounds' own figures, in round order
}

// figures are the numbers of a row. Unknown values are NaN.
type figures struct {
	ops                 float64
	p50, p99, p999, max time.Duration
	srvPerM, genPerM    float64 // CPU seconds per million successful requests
	rssPerKey           float64 // VmRSS growth per distinct key used
	// leaderPerM and followerPerM are the CPU seconds of one leader and of
	// one follower per million decisions of its group (shares.perM).
	leaderPerM, followerPerM float64
}

func (r *result) figs() figures {
	if r.combined != nil {
		return *r.combined
	}
	f := figures{srvPerM: math.NaN(), genPerM: math.NaN(), rssPerKey: math.NaN(), leaderPerM: math.NaN(), followerPerM: math.NaN()}
	if r.t == nil || r.t.ok == 0 || r.elapsed <= 0 {
		f.ops = 0
		return f
	}
	million := float64(r.t.ok) / 1e6
	f.ops = float64(r.t.ok) / r.elapsed.Seconds()
	f.p50 = time.Duration(r.t.hist.ValueAtQuantile(50))
	f.p99 = time.Duration(r.t.hist.ValueAtQuantile(99))
	f.p999 = time.Duration(r.t.hist.ValueAtQuantile(99.9))
	f.max = time.Duration(r.t.hist.Max())
	f.genPerM = r.genCPU.Seconds() / million
	if r.cpuKnown {
		f.srvPerM = r.srvCPU.Seconds() / million
	}
	if r.shares != nil {
		f.leaderPerM, f.followerPerM = r.shares.perM(r.t.ok)
	}
	if r.rssKnown && r.spec.sc.keysPer > 0 && r.touched > 0 {
		f.rssPerKey = float64(r.rssGrowth) / float64(r.touched)
	}
	return f
}

func (r *result) opsPerSec() float64 { return r.figs().ops }

// quantile returns the latency at 50, 99, 99.9 or 100 (the maximum) percent.
func (r *result) quantile(q float64) time.Duration {
	f := r.figs()
	switch {
	case q >= 100:
		return f.max
	case q >= 99.9:
		return f.p999
	case q >= 99:
		return f.p99
	default:
		return f.p50
	}
}

// combine merges the rounds of one run: counts add up, and every figure is
// the median of the rounds' figures, except the maximum latency, which is
// the largest.
func combine(rs []*result) *result {
	for _, r := range rs {
		if r.skipped != "" {
			return r
		}
	}
	if len(rs) == 1 {
		return rs[0]
	}
	out := &result{spec: rs[0].spec, rounds: len(rs), version: rs[0].version, dbsize: rs[len(rs)-1].dbsize,
		t: &tally{hist: newHistogram(), problems: map[string]*problem{}}}
	var fs []figures
	for _, r := range rs {
		out.t.merge(r.t)
		out.elapsed += r.elapsed
		out.touched = max(out.touched, r.touched)
		fs = append(fs, r.figs())
	}
	pick := func(get func(f figures) float64) float64 {
		var v []float64
		for _, f := range fs {
			v = append(v, get(f))
		}
		return median(v)
	}
	c := &figures{
		ops:          pick(func(f figures) float64 { return f.ops }),
		p50:          time.Duration(pick(func(f figures) float64 { return float64(f.p50) })),
		p99:          time.Duration(pick(func(f figures) float64 { return float64(f.p99) })),
		p999:         time.Duration(pick(func(f figures) float64 { return float64(f.p999) })),
		srvPerM:      pick(func(f figures) float64 { return f.srvPerM }),
		genPerM:      pick(func(f figures) float64 { return f.genPerM }),
		rssPerKey:    pick(func(f figures) float64 { return f.rssPerKey }),
		leaderPerM:   pick(func(f figures) float64 { return f.leaderPerM }),
		followerPerM: pick(func(f figures) float64 { return f.followerPerM }),
	}
	for _, f := range fs {
		c.max = max(c.max, f.max)
	}
	out.combined = c
	out.each = fs
	out.repl = combineRepl(rs)
	return out
}

// pairedRatio returns figure get of x over that of y: the median of the
// rounds' own ratios when both ran the same rounds (round k of every run
// in one interleaved sweep), else the ratio of their figures; NaN when
// either run is missing (nil) or y's figure is zero. A slow
// stretch of a shared machine slows neighbouring runs alike, and the
// runs a ratio compares are mostly neighbours in a sweep, so a ratio taken
// within each round and then the median is steadier than a ratio of two
// medians taken from different rounds.
func pairedRatio(x, y *result, get func(f figures) float64) float64 {
	if x == nil || y == nil || get(y.figs()) == 0 {
		return math.NaN()
	}
	if len(x.each) > 1 && len(x.each) == len(y.each) {
		v := make([]float64, len(x.each))
		for k := range x.each {
			v[k] = get(x.each[k]) / get(y.each[k])
		}
		return median(v)
	}
	return get(x.figs()) / get(y.figs())
}

// The figures a ratio compares.
func opsOf(f figures) float64     { return f.ops }
func srvPerMOf(f figures) float64 { return f.srvPerM }
func p99Of(f figures) float64     { return float64(f.p99) }

// median of values; NaN if any is NaN (a figure unknown in one round is not
// reported).
func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), v...)
	for _, x := range s {
		if math.IsNaN(x) {
			return math.NaN()
		}
	}
	sort.Float64s(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}
