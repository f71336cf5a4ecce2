package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-rl/sluice/keyslot"
)

// Real sharded clusters on 127.0.0.1: G data groups of three processes,
// each process also a replica of the meta group, under load on every
// group while one process is killed with SIGKILL. Each group's history
// is checked with porcupine against a counter; the groups that lost no
// member must not notice.

// shardedProcs is a running sharded cluster: groups[g-1] are data group
// g's processes, in start order.
type shardedProcs struct {
	t      *testing.T
	groups [][]*proc
	flags  map[*proc][]string // the flags of each process's first start, which restarts repeat
}

// startShardedCluster starts groups data groups of three processes each, as
// docs/cluster.md describes: group 1's first process bootstraps its group
// and the meta group; every other one joins the meta group through it.
// always(p), if not nil, gives flags every start of p passes.
func startShardedCluster(t *testing.T, groups int, always func(p *proc) []string) *shardedProcs {
	t.Helper()
	bin := buildSluice(t)
	base := t.TempDir()
	c := &shardedProcs{t: t, flags: map[*proc][]string{}}
	for g := 1; g <= groups; g++ {
		var ps []*proc
		for i := 1; i <= 3; i++ {
			id := fmt.Sprintf("g%dn%d", g, i)
			p := &proc{t: t, bin: bin, id: id, raftIP: fmt.Sprintf("127.0.0.%d", 30+3*(g-1)+i),
				dir: filepath.Join(base, id), logPath: filepath.Join(base, id+".log"), portsPath: filepath.Join(base, id+".ports")}
			if always != nil {
				p.always = always(p)
			}
			ps = append(ps, p)
		}
		c.groups = append(c.groups, ps)
	}
	t.Cleanup(func() {
		for _, p := range c.all() {
			p.kill()
		}
		if t.Failed() {
			for _, p := range c.all() {
				t.Logf("--- %s log:\n%s", p.id, p.logTail())
			}
		}
	})
	seed := ""
	for g, ps := range c.groups {
		common := []string{"--cluster-group", strconv.Itoa(g + 1), "--cluster-groups", strconv.Itoa(groups)}
		first := append(slices.Clone(common), "--bootstrap", "yes")
		if seed != "" {
			first = append(first, "--cluster-seed", seed)
		}
		c.startFirst(ps[0], first)
		if seed == "" {
			seed = ps[0].addr()
		}
		waitFor(t, 15*time.Second, func() bool { return ps[0].info("role") == "leader" && ps[0].info("ready") == "true" })
		for _, p := range ps[1:] {
			c.startFirst(p, append(slices.Clone(common), "--join", ps[0].addr(), "--cluster-seed", seed))
		}
	}
	c.waitRouted()
	return c
}

// waitRouted waits until every process routes every group's slots to a
// leader it knows.
func (c *shardedProcs) waitRouted() {
	c.t.Helper()
	waitFor(c.t, 30*time.Second, func() bool {
		for _, p := range c.all() {
			for g := range c.groups {
				if c.movedTarget(p, g+1) == "" {
					return false
				}
			}
		}
		return true
	})
}

func (c *shardedProcs) startFirst(p *proc, flags []string) {
	c.flags[p] = flags
	p.start(flags...)
}

// restart starts a killed process again with its first start's flags,
// which a process with state in its --dir ignores (--bootstrap, --join,
// --cluster-seed).
func (c *shardedProcs) restart(p *proc) { p.start(c.flags[p]...) }

func (c *shardedProcs) all() []*proc {
	var out []*proc
	for _, ps := range c.groups {
		out = append(out, ps...)
	}
	return out
}

// keyIn returns a key of data group g's slots (the slots are split evenly
// and contiguously among the groups, group 1 first), with prefix.
func (c *shardedProcs) keyIn(g int, prefix string) string {
	per := keyslot.Slots / len(c.groups)
	lo, hi := (g-1)*per, g*per-1
	if g == len(c.groups) {
		hi = keyslot.Slots - 1
	}
	for i := 0; ; i++ {
		k := fmt.Sprintf("%s:%d", prefix, i)
		if s := keyslot.Of([]byte(k)); s >= lo && s <= hi {
			return k
		}
	}
}

// movedTarget asks p, with a key of data group g's slots, where group g's
// leader is: p's own group answers the key itself (its leader is p's data
// leader's RESP address from INFO), another group's process answers
// MOVED. "" if p does not know.
func (c *shardedProcs) movedTarget(p *proc, g int) string {
	if slices.Contains(c.groups[g-1], p) {
		id := p.info("leader_id")
		for _, q := range c.groups[g-1] {
			if q.id == id {
				return q.addr()
			}
		}
		return ""
	}
	rdb := redis.NewClient(&redis.Options{Addr: p.addr(), Protocol: 2, PoolSize: 1, MaxRetries: -1,
		DialTimeout: 300 * time.Millisecond, ReadTimeout: time.Second})
	defer rdb.Close()
	err := rdb.Do(context.Background(), "RL.TOKEN", c.keyIn(g, "probe"), "1/h", 10, 0).Err()
	if err == nil {
		c.t.Errorf("%s served a key of group %d's slots", p.id, g)
		return ""
	}
	f := strings.Fields(err.Error())
	if len(f) == 3 && f[0] == "MOVED" {
		return f[2]
	}
	return ""
}

// groupLeader returns data group g's leader among its live processes.
func (c *shardedProcs) groupLeader(g int) *proc {
	var waited *proc
	waitFor(c.t, 15*time.Second, func() bool {
		waited = leaderOf(c.groups[g-1])
		return waited != nil && waited.info("ready") == "true"
	})
	return waited
}

// doOn sends one command to p.
func (p *proc) doOn(args ...any) (any, error) {
	rdb := redis.NewClient(&redis.Options{Addr: p.addr(), Protocol: 2, PoolSize: 1, MaxRetries: -1, ReadTimeout: 5 * time.Second})
	defer rdb.Close()
	return rdb.Do(context.Background(), args...).Result()
}

// metaMembers is META.MEMBERS as p answers it: each member's id and role.
func metaMembers(p *proc) (map[string]string, error) {
	rdb := redis.NewClient(&redis.Options{Addr: p.addr(), Protocol: 2, PoolSize: 1, MaxRetries: -1,
		DialTimeout: 300 * time.Millisecond, ReadTimeout: time.Second})
	defer rdb.Close()
	v, err := rdb.Do(context.Background(), "META.MEMBERS").Slice()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, m := range v {
		fields, ok := m.([]any)
		if !ok || len(fields)%2 != 0 {
			return nil, fmt.Errorf("META.MEMBERS row %v", m)
		}
		row := map[string]string{}
		for i := 0; i < len(fields); i += 2 {
			row[fmt.Sprint(fields[i])] = fmt.Sprint(fields[i+1])
		}
		out[row["id"]] = row["role"]
	}
	return out, nil
}

// groupLoad is one data group's key under load from one client per
// process of the group, with its history and the instants and latencies
// of its successful decisions.
type groupLoad struct {
	group int
	key   string
	h     *history

	mu   sync.Mutex
	oks  []time.Time         // when each acknowledged decision returned, in order per client
	lat  []time.Duration     // and how long it took
	errs map[string][]string // each client address's errors (CLUSTERDOWN, UNKNOWN, timeouts …)
}

// loadGroups drives every group's key from one client per process until
// stop closes.
func (c *shardedProcs) loadGroups(prefix string, capacity int, stop <-chan struct{}) ([]*groupLoad, *sync.WaitGroup) {
	var wg sync.WaitGroup
	start := time.Now()
	var loads []*groupLoad
	client := 0
	for g, ps := range c.groups {
		gl := &groupLoad{group: g + 1, key: c.keyIn(g+1, prefix), h: &history{start: start}, errs: map[string][]string{}}
		loads = append(loads, gl)
		for _, p := range ps {
			wg.Add(1)
			go gl.drive(c.t, &wg, client, p.addr(), capacity, stop)
			client++
		}
	}
	return loads, &wg
}

func (gl *groupLoad) drive(t *testing.T, wg *sync.WaitGroup, id int, addr string, capacity int, stop <-chan struct{}) {
	defer wg.Done()
	rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, PoolSize: 1, MaxRetries: -1,
		DialTimeout: 300 * time.Millisecond, ReadTimeout: 4 * time.Second, WriteTimeout: time.Second})
	defer rdb.Close()
	for {
		select {
		case <-stop:
			return
		default:
		}
		call := time.Now()
		v, err := rdb.Do(context.Background(), "RL.TOKEN", gl.key, "1/h", capacity).Slice()
		ret := time.Now()
		out, ok := takeOutputOf(v, err)
		if !ok {
			t.Errorf("client %d on %s: unexpected error %v", id, addr, err)
			return
		}
		gl.h.record(id, call, out, ret)
		gl.mu.Lock()
		if out.kind == "ok" {
			gl.oks = append(gl.oks, ret)
			gl.lat = append(gl.lat, ret.Sub(call))
		} else {
			gl.errs[addr] = append(gl.errs[addr], fmt.Sprintf("%s: %v", ret.Format("15:04:05.000"), err))
		}
		gl.mu.Unlock()
		if out.kind != "ok" {
			time.Sleep(50 * time.Millisecond) // a node down or electing: don't spin
		}
		time.Sleep(pace)
	}
}

// window returns the group's acknowledged decisions that returned in
// [from, to]: their latencies, and the longest gap between consecutive
// ones (from from and up to to included).
func (gl *groupLoad) window(from, to time.Time) (lat []time.Duration, maxGap time.Duration) {
	gl.mu.Lock()
	defer gl.mu.Unlock()
	var at []time.Time
	for i, t := range gl.oks {
		if !t.Before(from) && !t.After(to) {
			at = append(at, t)
			lat = append(lat, gl.lat[i])
		}
	}
	sort.Slice(at, func(i, j int) bool { return at[i].Before(at[j]) })
	prev := from
	for _, t := range append(at, to) {
		maxGap = max(maxGap, t.Sub(prev))
		prev = t
	}
	return lat, maxGap
}

// firstOKAfter is when the group's first decision sent after instant at
// returned acknowledged, waiting up to d for one.
func (gl *groupLoad) firstOKAfter(t *testing.T, at time.Time, d time.Duration) time.Time {
	t.Helper()
	var first time.Time
	waitFor(t, d, func() bool {
		gl.mu.Lock()
		defer gl.mu.Unlock()
		for i, ok := range gl.oks {
			// A decision sent before at and answered after it (committed
			// before a kill) says nothing about the time after at.
			if ok.Add(-gl.lat[i]).After(at) && (first.IsZero() || ok.Before(first)) {
				first = ok
			}
		}
		return !first.IsZero()
	})
	return first
}

// errorsFrom returns the errors of the group's clients on processes other
// than those at skip.
func (gl *groupLoad) errorsFrom(skip ...string) []string {
	gl.mu.Lock()
	defer gl.mu.Unlock()
	var out []string
	for addr, errs := range gl.errs {
		if !slices.Contains(skip, addr) {
			out = append(out, errs...)
		}
	}
	return out
}

func p99(lat []time.Duration) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	return s[(len(s)-1)*99/100]
}

// metaLeader returns the meta group's leader as the live process p sees
// it, or nil.
func (c *shardedProcs) metaLeader(p *proc) *proc {
	members, err := metaMembers(p)
	if err != nil {
		return nil
	}
	for _, q := range c.all() {
		if members[q.id] == "leader" {
			return q
		}
	}
	return nil
}

// transferMeta hands the meta group's leadership to the voter to, or
// away from its leader if to is nil, and waits until it has moved.
func (c *shardedProcs) transferMeta(to *proc) {
	c.t.Helper()
	from := c.metaLeader(c.groups[0][0])
	if from == nil || from == to {
		if from == nil {
			c.t.Fatal("no meta leader")
		}
		return
	}
	args := []any{"META.TRANSFER"}
	if to != nil {
		args = append(args, to.id)
	}
	if _, err := from.doOn(args...); err != nil {
		c.t.Fatalf("%v on %s: %v", args, from.id, err)
	}
	waitFor(c.t, 15*time.Second, func() bool {
		now := c.metaLeader(c.groups[0][0])
		return now != nil && now != from && (to == nil || now == to)
	})
}

// terms returns each data group's leader's term.
func (c *shardedProcs) terms() map[int]string {
	out := map[int]string{}
	for g := range c.groups {
		out[g+1] = c.groupLeader(g + 1).info("term")
	}
	return out
}

// noErrors fails the test if a client of gl's group, on a process other
// than those at skip, saw an error, unless the group elected a leader
// on its own since term: a leader starved of CPU (a loaded machine,
// -race) misses its lease, and then the errors are the group's own.
func (c *shardedProcs) noErrors(gl *groupLoad, term string, skip ...string) {
	c.t.Helper()
	errs := gl.errorsFrom(skip...)
	if len(errs) == 0 {
		return
	}
	if now := c.groupLeader(gl.group).info("term"); now != term {
		c.t.Logf("group %d elected a leader on its own (term %s, then %s): its clients saw %d errors, e.g. %v",
			gl.group, term, now, len(errs), errs[0])
		return
	}
	c.t.Fatalf("group %d's clients saw %d errors in term %s, e.g. %v", gl.group, len(errs), term, errs[0])
}

// caughtUp waits until p, restarted, follows its data group's leader and
// has applied what that leader had committed when asked.
func caughtUp(t *testing.T, ps []*proc, p *proc) {
	t.Helper()
	waitFor(t, 30*time.Second, func() bool {
		l := leaderOf(ps)
		if l == nil || l == p || p.info("leader_id") != l.id {
			return false
		}
		target, _ := strconv.ParseUint(l.info("commit_index"), 10, 64)
		got, _ := strconv.ParseUint(p.info("applied_index"), 10, 64)
		return got >= target
	})
}

// checkGroups checks each group's history with porcupine and that every
// process of the group reports the same state of its key.
func (c *shardedProcs) checkGroups(loads []*groupLoad, capacity int) {
	c.t.Helper()
	for _, gl := range loads {
		c.t.Logf("group %d (key %s):", gl.group, gl.key)
		checkHistory(c.t, gl.h, capacity)
		sameState(c.t, c.groups[gl.group-1], gl.key, capacity)
	}
}

// TestProcessShardedGroupLeaderKill9 kills one data group's leader with
// SIGKILL while every group takes decisions: only that group's key
// pauses, through its election; the other groups answer every request
// throughout; MOVED then names the new leader everywhere; the killed
// process, restarted on its --dir, catches up; and no group's history
// over-admits or breaks linearizability. Group 3's leader leads only its
// data group; group 1's first leader, the process that started the meta
// group, leads the meta group too.
func TestProcessShardedGroupLeaderKill9(t *testing.T) {
	t.Run("group 3", func(t *testing.T) { groupLeaderKill9(t, 3, false) })
	t.Run("group 1 and the meta group", func(t *testing.T) { groupLeaderKill9(t, 1, true) })
}

func groupLeaderKill9(t *testing.T, victim int, leadsMeta bool) {
	killGroupLeader(t, startShardedCluster(t, 3, nil), victim, leadsMeta, "load")
}

// killGroupLeader runs one kill -9 cycle on c with keys of prefix.
func killGroupLeader(t *testing.T, c *shardedProcs, victim int, leadsMeta bool, prefix string) {
	const capacity = 3000
	stop := make(chan struct{})
	loads, wg := c.loadGroups(prefix, capacity, stop)
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
			wg.Wait()
		}
	}()
	time.Sleep(time.Second)

	ld := c.groupLeader(victim)
	terms := c.terms()
	if leadsMeta {
		c.transferMeta(ld)
	} else if c.metaLeader(c.groups[1][0]) == ld {
		c.transferMeta(nil)
	}
	killedAt := time.Now()
	ld.kill()
	resumed := loads[victim-1].firstOKAfter(t, killedAt, 20*time.Second)
	pause := resumed.Sub(killedAt)
	t.Logf("group %d's leader %s killed: its key's first decision %v later", victim, ld.id, pause.Round(time.Millisecond))
	for _, gl := range loads {
		if gl.group == victim {
			continue
		}
		lat, gap := gl.window(killedAt, resumed)
		t.Logf("group %d during that pause: %d decisions, p99 %v, longest gap %v", gl.group, len(lat),
			p99(lat).Round(time.Microsecond), gap.Round(time.Millisecond))
		if len(lat) == 0 {
			t.Fatalf("group %d decided nothing during group %d's pause of %v", gl.group, victim, pause)
		}
	}

	// Redirects: every live process of the other groups names the new
	// leader (from the meta group's record of the group).
	nl := c.groupLeader(victim)
	waitFor(t, 15*time.Second, func() bool {
		for _, p := range c.all() {
			if !slices.Contains(c.groups[victim-1], p) {
				if got := c.movedTarget(p, victim); got != nl.addr() {
					return false
				}
			}
		}
		return true
	})

	restartedAt := time.Now()
	c.restart(ld)
	caughtUp(t, c.groups[victim-1], ld)
	t.Logf("%s restarted and caught up in %v", ld.id, time.Since(restartedAt).Round(time.Millisecond))
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()

	for _, gl := range loads {
		if gl.group == victim {
			continue
		}
		c.noErrors(gl, terms[gl.group])
	}
	c.checkGroups(loads, capacity)
	// The restarted process is a meta replica again: it routes another
	// group's key to that group's leader.
	// (Its meta replica catches up after its data replica: wait for it.)
	other := 1 + victim%len(c.groups)
	want := c.groupLeader(other).addr()
	waitFor(t, 15*time.Second, func() bool { return c.movedTarget(ld, other) == want })
}

// TestProcessShardedMetaLeaderKill9 kills the meta group's leader, on a
// process that leads no data group, while every group takes decisions:
// the decisions never need the meta group, so every group answers every
// request on its live processes throughout; a new meta leader takes
// over and records a data group's new leader; the killed process,
// restarted, rejoins both groups.
func TestProcessShardedMetaLeaderKill9(t *testing.T) {
	c := startShardedCluster(t, 2, nil)
	// The meta voters are usually group 1's processes (the first to join); move
	// the meta leadership to one that does not lead group 1.
	g1 := c.groups[0]
	d1 := c.groupLeader(1)
	var target *proc
	members, err := metaMembers(d1)
	for _, p := range othersThan(g1, d1) {
		if members[p.id] == "leader" || members[p.id] == "follower" {
			target = p
		}
	}
	if target == nil && err == nil && members[d1.id] != "" && members[d1.id] != "nonvoter" {
		// Group 2's processes joined the meta group before group 1's
		// others did: move group 1's leadership off its one meta voter.
		others := othersThan(g1, d1)
		rdb := redis.NewClient(&redis.Options{Addr: d1.addr(), Protocol: 2, MaxRetries: -1})
		err = rdb.Do(context.Background(), "RAFT.TRANSFER", others[0].id).Err()
		rdb.Close()
		waitFor(t, 15*time.Second, func() bool { l := leaderOf(g1); return l != nil && l != d1 && l.info("ready") == "true" })
		target, d1 = d1, c.groupLeader(1)
	}
	if target == nil {
		t.Fatalf("no meta voter in group 1 to lead the meta group alone: %v %v", members, err)
	}
	c.transferMeta(target)

	const capacity = 3000
	stop := make(chan struct{})
	loads, wg := c.loadGroups("load", capacity, stop)
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
			wg.Wait()
		}
	}()
	time.Sleep(time.Second)
	if leaderOf(g1) == target {
		t.Fatalf("%s leads both group 1 and the meta group", target.id)
	}
	terms := c.terms()
	killedAt := time.Now()
	target.kill()
	var ml *proc
	waitFor(t, 20*time.Second, func() bool { ml = c.metaLeader(d1); return ml != nil && ml != target })
	elected := time.Now()
	t.Logf("meta leader %s killed: %s leads the meta group %v later", target.id, ml.id, elected.Sub(killedAt).Round(time.Millisecond))
	time.Sleep(500 * time.Millisecond)
	for _, gl := range loads {
		lat, gap := gl.window(killedAt, elected)
		t.Logf("group %d meanwhile: %d decisions, p99 %v, longest gap %v", gl.group, len(lat),
			p99(lat).Round(time.Microsecond), gap.Round(time.Millisecond))
		if len(lat) == 0 {
			t.Fatalf("group %d decided nothing while the meta group elected a leader", gl.group)
		}
		c.noErrors(gl, terms[gl.group], target.addr())
	}

	// The new meta leader records a data group's leadership change: hand
	// group 2's leadership over, and group 1's processes route to it.
	d2 := c.groupLeader(2)
	rdb := redis.NewClient(&redis.Options{Addr: d2.addr(), Protocol: 2, MaxRetries: -1})
	if err := rdb.Do(context.Background(), "RAFT.TRANSFER").Err(); err != nil {
		t.Fatalf("RAFT.TRANSFER on %s: %v", d2.id, err)
	}
	rdb.Close()
	nl := c.groupLeader(2)
	if nl == d2 {
		t.Fatalf("%s still leads group 2 after RAFT.TRANSFER", d2.id)
	}
	waitFor(t, 15*time.Second, func() bool {
		for _, p := range othersThan(g1, target) {
			if c.movedTarget(p, 2) != nl.addr() {
				return false
			}
		}
		return true
	})

	c.restart(target)
	caughtUp(t, g1, target)
	waitFor(t, 15*time.Second, func() bool {
		m, err := metaMembers(ml)
		return err == nil && m[target.id] == "follower" && c.movedTarget(target, 2) == nl.addr()
	})
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()

	c.noErrors(loads[0], terms[1], target.addr())
	c.checkGroups(loads, capacity)
}

// TestProcessShardedSoak repeats the kill -9 of a data group's leader on
// one 3x3 cluster until -soak has passed, each cycle on the next group
// with fresh keys (every third cycle the meta leader's group, with the
// meta leadership on the victim). Skipped unless -soak is given:
//
//	go test ./cluster -run TestProcessShardedSoak -soak 10m -timeout 30m
func TestProcessShardedSoak(t *testing.T) {
	if *soak == 0 {
		t.Skip("a long run: go test ./cluster -run TestProcessShardedSoak -soak 10m")
	}
	c := startShardedCluster(t, 3, nil)
	end := time.Now().Add(*soak)
	for cycle := 0; time.Now().Before(end); cycle++ {
		victim := 1 + cycle%len(c.groups)
		t.Logf("cycle %d: group %d", cycle, victim)
		killGroupLeader(t, c, victim, victim == 1, fmt.Sprintf("soak%d", cycle))
	}
}
