package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The group scenarios and the fault trials against real sluice processes:
// a group forms, a run through its leader and its follower reports the
// leader's batches, a failover and a recovery trial time what they should,
// and no process outlives what started it.

func testGroupTarget(t *testing.T, follower bool) *target {
	t.Helper()
	bin := sluiceTarget(t).bin
	return &target{kind: "group", bin: bin, dir: t.TempDir(), grp: groupTarget{size: 3, fsync: true, follower: follower}}
}

// alive reports whether a process exists (and is not a zombie).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + itoa(int64(pid)) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

func assertGone(t *testing.T, pids []int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d is still running", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func TestGroupRuns(t *testing.T) {
	for _, follower := range []bool{false, true} {
		name := "group-token"
		if follower {
			name = "group-token-follower"
		}
		tg := testGroupTarget(t, follower)
		spec := smokeSpec(name, 700*time.Millisecond)
		spec.w = workload{rate: "10", capacity: 100, window: 10, cost: 1}
		res, err := execute(context.Background(), spec, map[string]*target{findScenario(name).server: tg})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.skipped != "" || res.t.errors != 0 || res.t.ok == 0 {
			t.Fatalf("%s: skipped %q, errors %d %v, ok %d", name, res.skipped, res.t.errors, res.t.sortedProblems(), res.t.ok)
		}
		if !res.cpuKnown || res.srvCPU <= 0 {
			t.Fatalf("%s: server CPU known %v, %v; want the group's CPU read", name, res.cpuKnown, res.srvCPU)
		}
		r := res.repl
		if r == nil || r.problem != "" || r.entries <= 0 || r.opsPerEntry() < 1 || r.maxBatch < 1 || r.elections != 0 {
			t.Fatalf("%s: replication stats %+v; want entries written, at least one op each, no election", name, r)
		}
		if got := r.ops; got < float64(res.t.ok)*0.5 {
			t.Errorf("%s: the leader counted %.0f ops for %d measured decisions", name, got, res.t.ok)
		}
		row := strings.Join(res.replRow(), "|")
		if !strings.Contains(row, "not met") && res.opsPerSec() < replTarget {
			t.Errorf("%s: row %q; want the target reported not met at %.0f/s", name, row, res.opsPerSec())
		}
		t.Logf("%s: %s; %s", name, res.summary(), row)
		entries, _ := os.ReadDir(tg.dir)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "group-") {
				t.Errorf("%s: the group's directory %s was left behind", name, e.Name())
			}
		}
		assertNoneStarted(t)
	}
}

// assertNoneStarted checks that every process bench started was stopped.
func assertNoneStarted(t *testing.T) {
	t.Helper()
	started.Lock()
	var pids []int
	for _, s := range started.list {
		pids = append(pids, s.pid)
	}
	started.Unlock()
	if len(pids) != 0 {
		t.Errorf("processes %v are still on the started list", pids)
	}
}

// TestGroupStopAll: a group's processes are on the started list, so that
// bench's exit path (and Ctrl-C) stops them.
func TestGroupStopAll(t *testing.T) {
	tg := testGroupTarget(t, false)
	g, started, err := startGroup(context.Background(), groupConfig{bin: tg.bin, dir: tg.dir, size: 3, fsync: false})
	if err != nil {
		t.Fatal(err)
	}
	pids := g.pids()
	if len(pids) != 3 {
		t.Fatalf("pids %v; want 3", pids)
	}
	leader := g.leader()
	if leader == nil {
		t.Fatal("no leader after startGroup")
	}
	if leader != started {
		t.Fatalf("startGroup returned %s as the leader; the group names %s", started.id, leader.id)
	}
	r, err := leader.info(time.Second)
	if err != nil || r["fsync"] != "false" || r["members"] != "3" {
		t.Fatalf("leader's INFO replication %v %v; want fsync false, 3 members", r, err)
	}
	stopAll()
	assertGone(t, pids)
}

func TestFailoverTrial(t *testing.T) {
	tg := testGroupTarget(t, false)
	r, err := failoverTrial(context.Background(), groupConfig{bin: tg.bin, dir: tg.dir, size: 3, fsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(r)
	switch {
	case r.elected == "" || r.elected == r.killed:
		t.Errorf("killed %s, elected %q; want another node elected", r.killed, r.elected)
	case r.first <= 0 || r.first > r.all || r.all > failoverLimit:
		t.Errorf("first %v, all %v; want 0 < first <= all <= %v", r.first, r.all, failoverLimit)
	case r.clientsN != 2*probesPerNode:
		t.Errorf("%d clients; want %d on each of 2 survivors", r.clientsN, probesPerNode)
	}
	// A leader is only elected after a follower's heartbeat timeout (1 s by default).
	if r.first < 500*time.Millisecond {
		t.Errorf("first admitted decision %v after the kill; want one after an election", r.first)
	}
	assertNoneStarted(t)
}

func TestRecoveryTrial(t *testing.T) {
	tg := testGroupTarget(t, false)
	cfg := groupConfig{bin: tg.bin, dir: tg.dir, size: 3, fsync: true}
	for _, snap := range []bool{true, false} {
		r, err := recoveryTrial(context.Background(), cfg, 3000, snap, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Log(r)
		switch {
		case r.localKeys != 3001:
			t.Errorf("snapshot %v: the restarted node holds %d keys; want 3,000 and the sentinel", snap, r.localKeys)
		case r.listening <= 0 || r.caughtUp < r.listening || r.stateAt < r.listening:
			t.Errorf("snapshot %v: listening %v, caught up %v, state %v; want listening first", snap, r.listening, r.caughtUp, r.stateAt)
		case snap && (r.snapshots < 1 || r.snapBytes == 0):
			t.Errorf("%d snapshots of %d bytes on disk; want RAFT.SNAPSHOT's", r.snapshots, r.snapBytes)
		case !snap && r.snapshots != 0:
			t.Errorf("%d snapshots on disk; want none without RAFT.SNAPSHOT", r.snapshots)
		case r.target <= 0 || r.logBytes == 0:
			t.Errorf("target index %d, log %d bytes; want both positive", r.target, r.logBytes)
		}
	}
	assertNoneStarted(t)
}

func TestTrialFlags(t *testing.T) {
	for _, argv := range [][]string{
		{"-cluster", "0"},
		{"-cluster", "8"},
		{"-failover", "3", "-cluster", "1"},
		{"-recovery", "-1"},
		{"-recovery", "1", "-recovery-keys", "0"},
		{"-recovery", "1", "-recovery-down", "-1s"},
	} {
		var stderr bytes.Buffer
		if _, err := parseFlags(argv, &stderr); err == nil {
			t.Errorf("%v: accepted; want an error", argv)
		}
	}
	o, err := parseFlags([]string{"-failover", "5"}, &bytes.Buffer{})
	if err != nil || !o.trials.wanted() || o.cluster != 3 || o.trials.keys != 100_000 {
		t.Fatalf("-failover 5: %+v, %v; want trials on a group of 3", o, err)
	}
}
