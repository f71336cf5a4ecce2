package main

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/resp"
	"github.com/sluice-rl/sluice/keyslot"
)

// The cluster plan: its flags and runs, the slot table a cluster client
// reads, the CPU shares by role, its own block of RESULTS.md, and one run
// against a real cluster of 3 groups of 3 processes.

func TestClusterPlanFlags(t *testing.T) {
	for _, argv := range [][]string{{"-cluster-groups", "0"}, {"-cluster-groups", "9"}, {"-plan", "clusters"}} {
		if _, err := parseFlags(argv, &bytes.Buffer{}); err == nil {
			t.Errorf("parseFlags(%q) accepted it", argv)
		}
	}
	o, err := parseFlags([]string{"-plan", "cluster", "-cluster-groups", "4"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.plan != "cluster" || o.clusterGroups != 4 || o.cluster != 3 || o.rounds != 3 || o.rls.wanted(o.plan) {
		t.Fatalf("plan %q, %d groups of %d, %d rounds, RLS %v; want cluster, 4 of 3, 3 rounds, no RLS",
			o.plan, o.clusterGroups, o.cluster, o.rounds, o.rls.wanted(o.plan))
	}

	b := base{conns: 50, keys: 100_000, dur: time.Second, algo: "all", w: testWorkload, nodes: 3, groups: 3}
	runs := clusterRuns(b)
	want := []string{"sluice-token", "group-token", "cluster-token"}
	if len(runs) != len(clusterDepths)*len(want) {
		t.Fatalf("%d runs; want %d", len(runs), len(clusterDepths)*len(want))
	}
	for i, r := range runs {
		depth, name := clusterDepths[i/len(want)], want[i%len(want)]
		if r.group != groupSharded || r.depth != depth || r.sc.name != name || r.conns != 50 || r.keys != 100_000 {
			t.Fatalf("run %d: %s P%d c%d keys %d in %q; want %s P%d c50 keys 100000 in %q",
				i, r.sc.name, r.depth, r.conns, r.keys, r.group, name, depth, groupSharded)
		}
	}
	if sc := findScenario("cluster-token"); sc.server != "cluster" || sc.prefix != findScenario("group-token").prefix {
		t.Fatalf("cluster-token: server %q prefix %q; want the cluster, group-token's keys", sc.server, sc.prefix)
	}
}

// slotsReply is a CLUSTER SLOTS reply of the given ranges, each {lo, hi, port}.
func slotsReply(ranges ...[3]int64) *resp.Value {
	v := &resp.Value{Kind: '*'}
	for _, r := range ranges {
		node := resp.Value{Kind: '*', Elems: []resp.Value{{Kind: '$', Text: []byte("127.0.0.1")}, {Kind: ':', Num: r[2]},
			{Kind: '$', Text: []byte("id")}}}
		v.Elems = append(v.Elems, resp.Value{Kind: '*', Elems: []resp.Value{{Kind: ':', Num: r[0]}, {Kind: ':', Num: r[1]}, node}})
	}
	return v
}

func TestParseSlotMap(t *testing.T) {
	sm, err := parseSlotMap(slotsReply([3]int64{0, 5460, 7001}, [3]int64{5461, 10922, 7002}, [3]int64{10923, 16383, 7003}))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(sm.addrs, " ") != "127.0.0.1:7001 127.0.0.1:7002 127.0.0.1:7003" {
		t.Fatalf("primaries %v", sm.addrs)
	}
	for slot, want := range map[int]string{0: "7001", 5460: "7001", 5461: "7002", 12182: "7003", 16383: "7003"} {
		if got := sm.addrs[sm.owner[slot]]; !strings.HasSuffix(got, ":"+want) {
			t.Errorf("slot %d → %s; want port %s", slot, got, want)
		}
	}
	if got := sm.addrs[sm.owner[keyslot.Of([]byte("foo"))]]; got != "127.0.0.1:7003" { // foo is in slot 12182
		t.Errorf("foo → %s; want 127.0.0.1:7003", got)
	}
	if k := sm.keyOf(1); sm.owner[keyslot.Of([]byte(k))] != 1 {
		t.Errorf("keyOf(1) = %q, in slot %d", k, keyslot.Of([]byte(k)))
	}
	for name, bad := range map[string]*resp.Value{
		"a slot uncovered": slotsReply([3]int64{0, 16382, 7001}),
		"a slot twice":     slotsReply([3]int64{0, 16383, 7001}, [3]int64{100, 100, 7002}),
		"past the last":    slotsReply([3]int64{0, 16384, 7001}),
		"an error":         {Kind: '-', Text: []byte("ERR This instance has cluster support disabled")},
	} {
		if _, err := parseSlotMap(bad); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

func TestSharesPerDecision(t *testing.T) {
	// 3 groups of 3: 2 million decisions, the leaders 6 s in all, the six
	// followers 4 s: a leader 3 s/M, a follower 4/(2·2) = 1 s/M.
	sh := &shares{leader: 6 * time.Second, follower: 4 * time.Second, leaders: 3, followers: 6}
	if l, f := sh.perM(2_000_000); l != 3 || f != 1 {
		t.Fatalf("perM = %v, %v; want 3, 1", l, f)
	}
	if l, _ := sh.perM(0); !math.IsNaN(l) {
		t.Fatalf("perM(0) = %v; want NaN", l)
	}
	r := &result{spec: runSpec{group: groupSharded, sc: findScenario("cluster-token"), depth: 16}, shares: sh,
		t: &tally{hist: newHistogram(), problems: map[string]*problem{}, ok: 2_000_000}, elapsed: time.Second}
	rep := &report{base: base{nodes: 3, groups: 3}, results: []*result{r}}
	ms := rep.clusterModel()
	if len(ms) != 1 {
		t.Fatalf("%d model rows; want 1", len(ms))
	}
	// One group: 10⁶/3 per core; each group of a cluster: 10⁶/(3 + 2·1);
	// 3 groups on 3 machines ÷ one group: 3·3/5.
	if m := ms[0]; math.Abs(m.one-1e6/3) > 1 || math.Abs(m.perGroup-2e5) > 1 || !strings.Contains(strings.Join(m.row(), "|"), "1.80 at G=3") {
		t.Fatalf("model %+v %q; want 333,333/s, 200,000/s × G, 1.80 at G=3", m, m.row())
	}
}

func TestClusterSectionKeepsTheOtherSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "RESULTS.md")
	if err := os.WriteFile(path, spliceSection([]byte("# Results\n\nkept\n"), "the RESP section\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &result{spec: runSpec{group: groupSharded, sc: findScenario("cluster-token"), depth: 16},
		shares: &shares{leader: 6 * time.Second, follower: 4 * time.Second, leaders: 3, followers: 6},
		t:      &tally{hist: newHistogram(), problems: map[string]*problem{}, ok: 2_000_000}, elapsed: time.Second}
	rep := &report{plan: "cluster", argv: "cd bench && go run . -plan cluster", base: base{nodes: 3, groups: 3}, results: []*result{r}}
	for i := 0; i < 2; i++ { // twice: the block is replaced, not added again
		if err := rep.writeMarkdown(path); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(path)
	doc := string(b)
	for _, want := range []string{"kept", "the RESP section", "| cluster RL.TOKEN → each slot's leader | 16 | 3 × 3 | 2,000,000 |",
		"Extrapolated, not measured", "1.80 at G=3"} {
		if !strings.Contains(doc, want) {
			t.Errorf("RESULTS.md lacks %q:\n%s", want, doc)
		}
	}
	if strings.Count(doc, shardedBegin) != 1 || strings.Count(doc, sectionBegin) != 1 {
		t.Fatalf("sections duplicated:\n%s", doc)
	}
}

// A run against a real cluster of 3 groups of 3: every reply is a decision
// (no MOVED or TRYAGAIN: each key went to its slot's leader), the keys fall
// in every group's slots, the CPU of 3 leaders and 6 followers is read, and
// no process outlives the run.
func TestClusterRun(t *testing.T) {
	tg := &target{kind: "cluster", bin: sluiceTarget(t).bin, dir: t.TempDir(), cl: clusterTarget{groups: 3, size: 3, fsync: true}}
	srv, err := tg.open(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, r := range srv.roles() {
		pids = append(pids, r.pid)
	}
	sm := srv.shards
	srv.stop()
	assertGone(t, pids)
	if len(pids) != 9 || len(sm.addrs) != 3 {
		t.Fatalf("%d processes, %d primaries; want 9 and 3", len(pids), len(sm.addrs))
	}
	spec := smokeSpec("cluster-token", 700*time.Millisecond)
	hit := map[uint8]bool{}
	for k := uint64(0); k < spec.keys; k++ {
		hit[sm.owner[keyslot.Of(appendKey(nil, spec.sc.prefix, k))]] = true
	}
	if len(hit) != 3 {
		t.Fatalf("the run's keys fall in %d groups' slots; want all 3", len(hit))
	}

	res, err := execute(context.Background(), spec, map[string]*target{"cluster": tg})
	if err != nil {
		t.Fatal(err)
	}
	if res.skipped != "" || res.t.errors != 0 || res.t.ok == 0 {
		t.Fatalf("skipped %q, errors %d %v, ok %d", res.skipped, res.t.errors, res.t.sortedProblems(), res.t.ok)
	}
	sh := res.shares
	if sh == nil || sh.leaders != 3 || sh.followers != 6 || sh.leader <= 0 || !res.cpuKnown || res.srvCPU < sh.leader+sh.follower {
		t.Fatalf("shares %+v, all processes %v (known %v); want 3 leaders and 6 followers within the total", sh, res.srvCPU, res.cpuKnown)
	}
	if r := res.repl; r == nil || r.problem != "" || r.entries <= 0 || r.ops < float64(res.t.ok)*0.5 || r.elections != 0 {
		t.Fatalf("the leaders' replication stats %+v for %d decisions; want all 3 leaders' entries, no election", r, res.t.ok)
	}
	t.Logf("%s; leader %.1f s/M, follower %.1f s/M; %s", res.summary(), res.figs().leaderPerM, res.figs().followerPerM,
		strings.Join(res.replRow(), "|"))
}
