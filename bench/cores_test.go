package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestCoresPlan: on a machine whose servers have one CPU, the comparison
// runs sluice on one core and Redis on one thread, and says that 2, 4 and 8
// cores were skipped; with eight, every count runs and Redis runs with
// io-threads from two cores on, each scenario's runs side by side.
func TestCoresPlan(t *testing.T) {
	b := base{conns: 50, keys: 100_000, dur: time.Second}
	names := coresScenarios()
	runs, skipped := coresPlan(b, []int{1, 2, 4, 8}, 1, names)
	var got []string
	for _, r := range runs {
		if r.depth != 16 || r.group != "cores" {
			t.Errorf("%s on %d: P%d group %q; want P16 group cores", r.sc.name, r.procs, r.depth, r.group)
		}
		got = append(got, fmt.Sprintf("%s@%d", r.sc.name, r.procs))
	}
	want := "sluice-token@1 redis-incr@1 sluice-script-spring@1 redis-script-spring@1 sluice-script-redisrate@1 " +
		"redis-script-redisrate@1 sluice-script-flexible@1 redis-script-flexible@1 sluice-script-ratelimitredis@1 " +
		"redis-script-ratelimitredis@1 sluice-script-ulule@1 redis-script-ulule@1"
	if strings.Join(got, " ") != want {
		t.Errorf("runs with one server CPU:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	for _, n := range []string{"2 cores: skipped", "4 cores: skipped", "8 cores: skipped", "io-threads on 1 core: not run"} {
		if !strings.Contains(strings.Join(skipped, "\n"), n) {
			t.Errorf("skipped %q lacks %q", skipped, n)
		}
	}

	runs, skipped = coresPlan(b, []int{1, 2, 4, 8}, 8, []string{"sluice-token", "redis-incr"})
	got = got[:0]
	for _, r := range runs {
		got = append(got, fmt.Sprintf("%s/%s@%d", r.sc.name, r.sc.server, r.procs))
	}
	want = "sluice-token/sluice@1 sluice-token/sluice@2 sluice-token/sluice@4 sluice-token/sluice@8 redis-incr/redis@1 " +
		"redis-incr-iothreads/redis-iothreads@2 redis-incr-iothreads/redis-iothreads@4 redis-incr-iothreads/redis-iothreads@8"
	if strings.Join(got, " ") != want {
		t.Errorf("runs with eight server CPUs:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	if len(skipped) != 1 {
		t.Errorf("skipped with eight server CPUs: %q; want only Redis io-threads on 1 core", skipped)
	}
	if findScenario("redis-incr").server != "redis" {
		t.Errorf("ioThreaded changed the shared scenario")
	}
}

// TestCoresFlags: core counts are read, sorted and deduplicated; the
// generator's share defaults to half the CPUs; what the comparison cannot
// honour is refused.
func TestCoresFlags(t *testing.T) {
	if got, err := parseCores("8, 1,2,4,2"); err != nil || fmt.Sprint(got) != "[1 2 4 8]" {
		t.Errorf("parseCores = %v, %v; want [1 2 4 8]", got, err)
	}
	for _, bad := range []string{"0", "x", "1,,2", "2000"} {
		if _, err := parseCores(bad); err == nil {
			t.Errorf("parseCores(%q) accepted", bad)
		}
	}
	for _, tc := range []struct{ cpus, gen, want int }{{2, 0, 1}, {3, 0, 1}, {16, 0, 8}, {64, 0, 32}, {16, 4, 4}} {
		if got := splitGen(tc.cpus, tc.gen); got != tc.want {
			t.Errorf("splitGen(%d, %d) = %d; want %d", tc.cpus, tc.gen, got, tc.want)
		}
	}
	for _, argv := range [][]string{
		{"-gen-cpus", "2"},
		{"-cores", "1,0"},
		{"-cores", "1", "-gen-cpus", "-1"},
		{"-cores", "1", "-sluice", "127.0.0.1:1"},
		{"-cores", "1", "-redis", "127.0.0.1:1"},
		{"-cores", "1", "-pin", "off"},
	} {
		if _, err := parseFlags(argv, &bytes.Buffer{}); err == nil {
			t.Errorf("%q accepted", argv)
		}
	}
	o, err := parseFlags([]string{"-cores", "1,2", "-redis", "off"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.dur != 3*time.Second || o.rounds != 3 {
		t.Errorf("-cores: -d %v, -rounds %d; want 3s and 3", o.dur, o.rounds)
	}
}

// TestCoresServerThreads: the comparison's servers start with the threads
// of their cores: sluice with --event-loops, Redis with --io-threads, as
// each reports through CONFIG GET.
func TestCoresServerThreads(t *testing.T) {
	sl := sluiceTarget(t)
	sl.threads = eventLoops
	rd := redisTarget(t)
	rd.threads = ioThreads
	for _, tc := range []struct {
		tg          *target
		param, want string
	}{{sl, "event-loops", "3"}, {rd, "io-threads", "3"}} {
		srv, err := tc.tg.open(context.Background(), 3)
		if err != nil {
			t.Fatal(err)
		}
		v, err := srv.call(5*time.Second, "CONFIG", "GET", tc.param)
		srv.stop()
		if err != nil {
			t.Fatal(err)
		}
		if v.Kind != '*' || len(v.Elems) != 2 || string(v.Elems[1].Text) != tc.want {
			t.Errorf("%s: CONFIG GET %s = %s; want %s", tc.tg.kind, tc.param, v.String(), tc.want)
		}
	}
}
