package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/go-redis/v9"
	"github.com/sluice-rl/sluice/commands"
	"github.com/sluice-rl/sluice/keyslot"
)

// Resharding in the in-process sharded cluster (shard_test.go): slots move
// between the two groups under load from go-redis's ClusterClient, with
// leaders closed at each step of a migration.

type testResharder struct{ n *Node }

func (r testResharder) Migrate(lo, hi int, to uint16, timeout time.Duration) (uint64, error) {
	return r.n.Migrate(lo, hi, to, timeout)
}

func (r testResharder) Rebalance(groups []uint16, chunk int, timeout time.Duration) ([]uint64, error) {
	return r.n.Rebalance(groups, chunk, timeout)
}

func (r testResharder) Forget(group uint16) error { return r.n.Forget(group) }

func (r testResharder) MigrationList() []commands.Migration {
	var out []commands.Migration
	for _, m := range r.n.MigrationsOf() {
		out = append(out, commands.Migration{Epoch: m.Epoch, Lo: m.Lo, Hi: m.Hi, From: int(m.From), To: int(m.To),
			State: m.State.String(), Started: time.Unix(0, m.Started), Deadline: time.Unix(0, m.Deadline)})
	}
	return out
}

// loadKey is one key of the load and what its clients saw.
type loadKey struct {
	key      string
	capacity int64
	calls    atomic.Int64 // decisions with a definite answer
	admitted atomic.Int64
	unknown  atomic.Int64 // attempts whose outcome the client could not learn
	h        *history     // every call on the key, whichever group answered it
}

// hiddenClient is the porcupine client of the attempts go-redis retried
// by itself after their connection broke.
const hiddenClient = 99

// brokenAttempts counts, per key of keys, every attempt of a node client
// of cc whose connection failed: go-redis retries such an attempt
// elsewhere by itself, so an attempt that had been applied before its
// connection broke (a leader killed after its commit) is charged once
// more than the client sees. The key checks allow each such attempt
// either way, and the key's history records each as an operation of
// unknown outcome.
type brokenAttempts map[string]*loadKey

func (b brokenAttempts) DialHook(next redis.DialHook) redis.DialHook { return next }

func (b brokenAttempts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		call := time.Now()
		err := next(ctx, cmd)
		var re redis.Error
		if err != nil && !errors.As(err, &re) && len(cmd.Args()) > 1 {
			if k := b[fmt.Sprint(cmd.Args()[1])]; k != nil {
				k.unknown.Add(1)
				if len(cmd.Args()) == 4 { // a take, not a peek
					k.h.take(hiddenClient, 1, call, takeOutput{kind: "unknown"}, time.Now())
				}
			}
		}
		return err
	}
}

func (b brokenAttempts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// watch makes cc count its broken attempts on keys.
func watch(cc *redis.ClusterClient, keys []*loadKey) {
	b := brokenAttempts{}
	for _, k := range keys {
		b[k.key] = k
	}
	cc.OnNewNode(func(rdb *redis.Client) { rdb.AddHook(b) })
}

// load drives RL.TOKEN on keys from workers goroutines, each key on two
// of them (on all if workers < 4) so that calls on a key overlap, until
// stop is closed. tolerate says which errors may end a call with an
// unknown outcome (a closed leader); any other error is a failure. Every
// call goes into its key's history.
type load struct {
	keys     []*loadKey
	failures atomic.Int64
	firstErr atomic.Value
	wg       sync.WaitGroup
	stop     chan struct{}
}

// movingKeys returns count keys whose slots are in lo-hi: every third
// with a capacity no test reaches (a key the client never sees denied,
// whose remaining tokens tell exactly how many were taken), the others
// with capacity 30 (a key that runs dry, which must never admit more).
func movingKeys(lo, hi, count int) []*loadKey {
	var keys []*loadKey
	for i := 0; len(keys) < count; i++ {
		k := fmt.Sprintf("mv:%d", i)
		if s := keyslot.Of([]byte(k)); s < lo || s > hi {
			continue
		}
		c := int64(30)
		if len(keys)%3 == 0 {
			c = 100000
		}
		keys = append(keys, &loadKey{key: k, capacity: c})
	}
	return keys
}

func startLoad(cc *redis.ClusterClient, keys []*loadKey, workers int, tolerate func(error) bool) *load {
	start := time.Now()
	for _, k := range keys {
		k.h = &history{start: start}
	}
	watch(cc, keys)
	l := &load{keys: keys, stop: make(chan struct{})}
	stride := max(workers/2, 1)
	for w := 0; w < workers; w++ {
		l.wg.Add(1)
		go func(w int) {
			defer l.wg.Done()
			ctx := context.Background()
			for {
				for i := w % stride; i < len(keys); i += stride {
					select {
					case <-l.stop:
						return
					default:
					}
					k := keys[i]
					call := time.Now()
					v, err := cc.Do(ctx, "RL.TOKEN", k.key, "1/h", k.capacity).Slice()
					ret := time.Now()
					var re redis.Error
					out := takeOutput{kind: "unknown"}
					switch {
					case err == nil:
						out = takeOutput{kind: "ok", allowed: v[0] == int64(1), remaining: int(v[2].(int64))}
						k.calls.Add(1)
						if out.allowed {
							k.admitted.Add(1)
						}
					case errors.As(err, &re) && nothingApplied(err):
						out = takeOutput{kind: "none"}
					}
					k.h.take(w, 1, call, out, ret)
					switch {
					case err == nil:
					case tolerate != nil && tolerate(err):
						k.unknown.Add(1)
					default:
						l.failures.Add(1)
						l.firstErr.CompareAndSwap(nil, fmt.Sprintf("%s: %v", k.key, err))
					}
				}
			}
		}(w)
	}
	return l
}

// nothingApplied reports whether err is a reply that a client retries by
// itself because the server applied nothing.
func nothingApplied(err error) bool {
	for _, p := range []string{"MOVED ", "ASK ", "TRYAGAIN", "CLUSTERDOWN", "LOADING", "READONLY"} {
		if strings.HasPrefix(err.Error(), p) {
			return true
		}
	}
	return false
}

// finish stops the load and checks every key against its model: never
// more admitted than the capacity; a key that never ran dry admitted
// every definite call; the tokens left account for every admission
// exactly, give or take the calls of unknown outcome. It records each
// key's final peek in the key's history.
func (l *load) finish(t *testing.T, cc *redis.ClusterClient) {
	t.Helper()
	close(l.stop)
	l.wg.Wait()
	if n := l.failures.Load(); n > 0 {
		t.Errorf("%d calls failed with errors a client does not retry; first: %v", n, l.firstErr.Load())
	}
	ctx := context.Background()
	var calls int64
	for _, k := range l.keys {
		admitted, kcalls := k.admitted.Load(), k.calls.Load()
		calls += kcalls
		// A peek (cost 0) changes nothing, so it may be retried when a
		// closed node's answer leaves it unknown.
		call := time.Now()
		v, err := cc.Do(ctx, "RL.TOKEN", k.key, "1/h", k.capacity, 0).Slice()
		for try := 0; err != nil && try < 100; try++ {
			time.Sleep(20 * time.Millisecond)
			call = time.Now()
			v, err = cc.Do(ctx, "RL.TOKEN", k.key, "1/h", k.capacity, 0).Slice()
		}
		if err != nil {
			t.Fatalf("%s: peek: %v", k.key, err)
		}
		remaining := v[2].(int64)
		k.h.take(0, 0, call, takeOutput{kind: "ok", allowed: v[0] == int64(1), remaining: int(remaining)}, time.Now())
		if admitted > k.capacity {
			t.Errorf("%s admitted %d at capacity %d", k.key, admitted, k.capacity)
		}
		unknown := k.unknown.Load()
		if unknown == 0 && admitted != min(kcalls, k.capacity) {
			t.Errorf("%s admitted %d of %d calls at capacity %d", k.key, admitted, kcalls, k.capacity)
		}
		if hi, lo := k.capacity-admitted, k.capacity-admitted-unknown; remaining > hi || remaining < lo {
			t.Errorf("%s: %d tokens left after %d admitted (%d unknown) at capacity %d; want %d to %d",
				k.key, remaining, admitted, unknown, k.capacity, lo, hi)
		}
	}
	var unknown int64
	for _, k := range l.keys {
		unknown += k.unknown.Load()
	}
	t.Logf("%d keys, %d decisions with a definite answer, %d unknown", len(l.keys), calls, unknown)
}

// linearizable checks each key's history, its final peek included, with
// porcupine against a bucket that does not refill (1/h refills no token
// within a test), each key within a bound: a history porcupine cannot
// decide in time fails the test as surely as one it finds not
// linearizable. Call it after finish, on a load without kills: every
// call of unknown outcome may take effect at any later point, so the
// hundreds a leader kill leaves make the search exponential.
func (l *load) linearizable(t *testing.T) {
	t.Helper()
	began := time.Now()
	var ops, slowest int
	var slowestTook time.Duration
	for _, k := range l.keys {
		t0 := time.Now()
		res := porcupine.CheckOperationsTimeout(counterModel(int(k.capacity)), k.h.ops, 10*time.Second)
		took := time.Since(t0)
		ops += len(k.h.ops)
		if took > slowestTook {
			slowest, slowestTook = len(k.h.ops), took
		}
		switch res {
		case porcupine.Illegal:
			t.Errorf("%s: the history of %d operations is not linearizable against a bucket of %d", k.key, len(k.h.ops), k.capacity)
		case porcupine.Unknown:
			t.Errorf("%s: porcupine did not decide the history of %d operations within 10s", k.key, len(k.h.ops))
		}
	}
	t.Logf("porcupine: %d keys, %d operations in %v (slowest key: %d operations in %v)", len(l.keys), ops, time.Since(began), slowest, slowestTook)
}

// waitMigration waits until every process's meta replica records epoch
// as finished, and returns its state.
func waitMigration(t *testing.T, procs []*shardProc, epoch uint64, within time.Duration) MigrationState {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var st MigrationState
		done := true
		for _, p := range procs {
			if p.closed.Load() {
				continue
			}
			m, ok := p.meta.migration(epoch)
			done = done && ok && m.State != MigrationPlanned
			st = m.State
		}
		if done {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("migration %d not finished after %v: %+v", epoch, within, procs[0].meta.Migrations())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkSettled waits until every slot is owned by exactly one group's
// log on every live replica, that group being the meta table's owner,
// and no slot is left sealed.
func checkSettled(t *testing.T, procs []*shardProc) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := settled(procs)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func settled(procs []*shardProc) error {
	var table [keyslot.Slots]uint16
	ref := procs[0]
	for _, p := range procs {
		if !p.closed.Load() {
			ref = p
			break
		}
	}
	_, owners, _, _ := ref.meta.SlotTable()
	for _, o := range owners {
		for s := o.Lo; s <= o.Hi; s++ {
			table[s] = o.Group
		}
	}
	for _, p := range procs {
		if p.closed.Load() {
			continue
		}
		_, other, _, _ := p.meta.SlotTable()
		if fmt.Sprint(other) != fmt.Sprint(owners) {
			return fmt.Errorf("%s: slot table %v, %s's %v", p.id, other, ref.id, owners)
		}
		v, _ := p.data.fsm.fenceView()
		for s := 0; s < keyslot.Slots; s++ {
			if owns := v.owned.has(s); owns != (table[s] == p.group) {
				return fmt.Errorf("%s (group %d): owns slot %d %v; the table gives it to %d", p.id, p.group, s, owns, table[s])
			}
			if v.mig[s].state == slotSealed {
				return fmt.Errorf("%s: slot %d still sealed at epoch %d", p.id, s, v.mig[s].epoch)
			}
		}
	}
	return nil
}

func migrate(t *testing.T, cc *redis.ClusterClient, slots string, group int, extra ...any) uint64 {
	t.Helper()
	args := append([]any{"SLUICE.MIGRATE", slots, group}, extra...)
	epoch, err := cc.Do(context.Background(), args...).Int64()
	if err != nil {
		t.Fatalf("SLUICE.MIGRATE %s %d: %v", slots, group, err)
	}
	return uint64(epoch)
}

func newLoadClient(procs []*shardProc) *redis.ClusterClient {
	return redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{procs[0].addr, procs[3].addr}, Protocol: 2,
		MaxRedirects: 40, MinRetryBackoff: 2 * time.Millisecond, MaxRetryBackoff: 100 * time.Millisecond})
}

func TestMigrateSlotsThereAndBackUnderLoad(t *testing.T) {
	procs := newShardedCluster(t)
	cc := newLoadClient(procs)
	defer cc.Close()
	keys := movingKeys(0, 999, 120)
	l := startLoad(cc, keys, 6, outcomeUnknown)
	time.Sleep(300 * time.Millisecond)

	e1 := migrate(t, cc, "0-999", 2)
	if st := waitMigration(t, procs, e1, 20*time.Second); st != MigrationCommitted {
		t.Fatalf("migration %d to group 2: %v", e1, st)
	}
	checkSettled(t, procs)
	time.Sleep(300 * time.Millisecond)
	e2 := migrate(t, cc, "0-999", 1, "TIMEOUT", 20000)
	if st := waitMigration(t, procs, e2, 20*time.Second); st != MigrationCommitted {
		t.Fatalf("migration %d back to group 1: %v", e2, st)
	}
	checkSettled(t, procs)
	time.Sleep(300 * time.Millisecond)
	l.finish(t, cc)
	l.linearizable(t)

	// SLUICE.MIGRATIONS lists both; CLUSTER SLOTS names the owners.
	list, err := cc.Do(context.Background(), "SLUICE.MIGRATIONS").Slice()
	if err != nil || len(list) != 2 {
		t.Fatalf("SLUICE.MIGRATIONS = %v, %v", list, err)
	}
	m := map[any]any{}
	for i, kv := 0, list[1].([]any); i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	if m["state"] != "committed" || m["slots"] != "0-999" || m["from"] != int64(2) || m["to"] != int64(1) {
		t.Fatalf("SLUICE.MIGRATIONS[1] = %v", m)
	}
	// The moving keys' slots hold no keys at group 2 any more.
	for _, p := range procs {
		if p.group != 2 {
			continue
		}
		if _, n := p.data.st.Export(p.data.fsm.AppliedTime(), func(k []byte) bool { return keyslot.Of(k) < 1000 }, 1<<20); n != 0 {
			t.Fatalf("%s holds %d keys of slots it gave back", p.id, n)
		}
	}
}

func TestMigrateRefusals(t *testing.T) {
	procs := newShardedCluster(t)
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: procs[1].addr, Protocol: 2})
	defer rdb.Close()
	for _, c := range []struct {
		args []any
		want string
	}{
		{[]any{"SLUICE.MIGRATE", "0-9000", 2}, "more than one owner"},
		{[]any{"SLUICE.MIGRATE", "0-10", 1}, "owns the slots already"},
		{[]any{"SLUICE.MIGRATE", "0-10", 7}, "no such data group"},
		{[]any{"SLUICE.MIGRATE", "10-0", 2}, "slots must be"},
		{[]any{"SLUICE.MIGRATE", "16384", 2}, "slots must be"},
		{[]any{"SLUICE.MIGRATE", "1", 2, "TIMEOUT", 0}, "not an integer"},
	} {
		err := rdb.Do(ctx, c.args...).Err()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error with %q", c.args, err, c.want)
		}
	}
}

// outcomeUnknown reports whether err is the UNKNOWN reply: a leader lost
// its leadership while the decision was being committed. On a machine
// whose cores are shared, fastRaft's timings make such an election
// possible without a kill; the key checks then allow the call either
// way. Any other error must not reach the client.
func outcomeUnknown(err error) bool { return strings.HasPrefix(err.Error(), "UNKNOWN ") }

// isUnknown reports whether err leaves a decision's outcome unknown: the
// connection or the leader went away after the request left.
func isUnknown(err error) bool {
	s := err.Error()
	return strings.HasPrefix(s, "UNKNOWN") || strings.Contains(s, "EOF") || strings.Contains(s, "connection reset") || strings.Contains(s, "connection refused") ||
		strings.Contains(s, "closed") || strings.Contains(s, "shutdown") || strings.Contains(s, "TRYAGAIN") ||
		strings.Contains(s, "CLUSTERDOWN") || errors.Is(err, context.DeadlineExceeded)
}

// killProc stops a process as kill -9 would, without its data: its
// RESP server, its data node and its meta replica.
func killProc(p *shardProc) {
	p.closed.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	p.srv.Shutdown(ctx)
	cancel()
	<-p.served
	p.data.Close()
	p.meta.Close()
}

// hookSource makes every node of group hold a migration's source steps
// to fn.
func hookSource(procs []*shardProc, group uint16, fn func(step string) bool) {
	for _, p := range procs {
		if p.group == group {
			p.data.moveHook.Store(&fn)
		}
	}
}

func TestMigrateAbortsPastItsDeadlineAndUnseals(t *testing.T) {
	procs := newShardedCluster(t)
	cc := newLoadClient(procs)
	defer cc.Close()
	keys := movingKeys(0, 999, 60)
	l := startLoad(cc, keys, 4, outcomeUnknown)
	time.Sleep(200 * time.Millisecond)
	// The source stops after its seal until the deadline has passed.
	var once sync.Once
	hookSource(procs, 1, func(step string) bool {
		stop := false
		if step == "sealed" {
			once.Do(func() { time.Sleep(600 * time.Millisecond); stop = true })
		}
		return stop
	})
	e := migrate(t, cc, "0-999", 2, "TIMEOUT", 300)
	if st := waitMigration(t, procs, e, 20*time.Second); st != MigrationAborted {
		t.Fatalf("migration %d: %v; want aborted", e, st)
	}
	checkSettled(t, procs)
	for _, p := range procs {
		if v, _ := p.data.fsm.fenceView(); p.group == 2 && !v.rangeAt(0, 999, e, slotNone) {
			t.Fatalf("%s has not refused epoch %d: %+v", p.id, e, v.mig[0])
		}
	}
	time.Sleep(200 * time.Millisecond)
	l.finish(t, cc)
	l.linearizable(t)
}

// TestMigrateFinishesAfterLeaderKills closes the source's or the
// target's leader at each step of a migration: the migration finishes or
// aborts, every slot ends with one owner, and no key over-admits or
// loses an acknowledged decision.
func TestMigrateFinishesAfterLeaderKills(t *testing.T) {
	for _, step := range []string{"planned", "sealed", "shipped", "recorded"} {
		for _, victim := range []uint16{1, 2} {
			t.Run(fmt.Sprintf("%s/group%d", step, victim), func(t *testing.T) {
				procs := newShardedCluster(t)
				cc := newLoadClient(procs)
				defer cc.Close()
				keys := movingKeys(0, 999, 60)
				l := startLoad(cc, keys, 4, isUnknown)
				time.Sleep(200 * time.Millisecond)
				var once sync.Once
				kills := make(chan *shardProc, 1)
				hookSource(procs, 1, func(s string) bool {
					stop := false
					if s == step {
						once.Do(func() {
							p := groupLeader(t, procs, victim)
							stop = true
							if victim == 1 {
								kills <- p // its Close waits for this pass to end
							} else {
								killProc(p)
							}
						})
					}
					return stop
				})
				go func() { killProc(<-kills) }()
				e := migrate(t, cc, "0-999", 2, "TIMEOUT", 20000)
				start := time.Now()
				st := waitMigration(t, procs, e, 30*time.Second)
				finished := time.Since(start)
				checkSettled(t, procs)
				settledIn := time.Since(start)
				time.Sleep(200 * time.Millisecond)
				l.finish(t, cc)
				t.Logf("migration %d %v after %v, settled after %v, checked after %v", e, st, finished.Round(time.Millisecond),
					settledIn.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
			})
		}
	}
}

// TestDrainAndRebalanceUnderLoad drains group 2 into group 1 with
// SLUICE.REBALANCE GROUPS 1, then spreads the slots over both again, under
// load on keys of every part of the slot space.
func TestDrainAndRebalanceUnderLoad(t *testing.T) {
	procs := newShardedCluster(t)
	cc := newLoadClient(procs)
	defer cc.Close()
	ctx := context.Background()
	keys := movingKeys(0, keyslot.Slots-1, 120)
	l := startLoad(cc, keys, 6, outcomeUnknown)
	time.Sleep(200 * time.Millisecond)

	if err := cc.Do(ctx, "SLUICE.FORGET", 2).Err(); err == nil || !strings.Contains(err.Error(), "still owns slot 8192") {
		t.Fatalf("SLUICE.FORGET of a group with slots: %v", err)
	}
	rebalance := func(args ...any) {
		t.Helper()
		epochs, err := cc.Do(ctx, append([]any{"SLUICE.REBALANCE", "CHUNK", 2048, "TIMEOUT", 20000}, args...)...).Int64Slice()
		if err != nil || len(epochs) != 4 {
			t.Fatalf("SLUICE.REBALANCE %v = %v, %v; want 4 migrations", args, epochs, err)
		}
		for _, e := range epochs {
			if st := waitMigration(t, procs, uint64(e), 30*time.Second); st != MigrationCommitted {
				t.Fatalf("migration %d: %v", e, st)
			}
		}
		checkSettled(t, procs)
	}
	rebalance("GROUPS", 1)
	if _, owners, _, _ := procs[0].meta.SlotTable(); len(owners) != 1 || owners[0].Group != 1 {
		t.Fatalf("after draining group 2: %+v", owners)
	}
	time.Sleep(200 * time.Millisecond)
	rebalance()
	if _, owners, _, _ := procs[0].meta.SlotTable(); fmt.Sprint(owners) != "[{0 8191 1} {8192 16383 2}]" {
		t.Fatalf("after rebalancing: %+v", owners)
	}
	time.Sleep(200 * time.Millisecond)
	l.finish(t, cc)
	l.linearizable(t)
}
