package cluster

import (
	"context"
	"sync"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/redis/go-redis/v9"
	"github.com/sluice-rl/sluice/compat"
)

// A transaction sent to a follower is forwarded whole and is one entry of
// the log: its decisions are applied together on every replica.
func TestTransactionIsOneLogEntry(t *testing.T) {
	g := newGroup(t, 3)
	ld := g.leader()
	var follower *member
	for _, m := range g.members {
		if m != ld {
			follower = m
			break
		}
	}
	ctx := context.Background()
	rdb := follower.client(t)
	rdb.Do(ctx, "RL.FIXED", "warm", 1, "1h") // the members' own entries (addresses) are in before this
	g.converged()
	before := ld.node.raft.LastIndex()
	cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "RL.FIXED", "a", 5, "1h")
		p.Do(ctx, "RL.TOKEN", "b", "1/h", 5, 2)
		p.Do(ctx, "RL.FIXED", "a", 5, "1h", 3)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	g.converged()
	if n, ops := entriesWith(t, g.leader(), before, opTx); n != 1 || ops != 4 {
		t.Fatalf("EXEC of three decisions took %d log entries with %d ops; want 1 entry of a tx op and its 3", n, ops)
	}
	want := []int64{4, 3, 1} // remaining after each, in order
	for i, c := range cmds {
		v, err := c.(*redis.Cmd).Int64Slice()
		if err != nil || v[0] != 1 || v[2] != want[i] {
			t.Fatalf("decision %d of the transaction = %v, %v; want admitted, %d remaining", i, v, err, want[i])
		}
	}
	g.assertSameState()
}

// WATCH through a follower sees a write made through another node, and
// racing transactions from every node admit exactly the capacity.
func TestTransactionsThroughEveryNode(t *testing.T) {
	g := newGroup(t, 3)
	ctx := context.Background()
	a, b := g.members[1].client(t), g.members[2].client(t)
	err := a.Watch(ctx, func(tx *redis.Tx) error {
		b.Do(ctx, "RL.FIXED", "w", 10, "1h")
		_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Do(ctx, "RL.FIXED", "w", 10, "1h")
			return nil
		})
		return err
	}, "w")
	if err != redis.TxFailedErr {
		t.Fatalf("EXEC after a write to the watched key on another node = %v; want TxFailedErr", err)
	}
	const capacity = 40 // even: pairs are admitted or denied together
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := int64(0)
	for _, m := range g.members {
		rdb := m.client(t)
		for w := 0; w < 2; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 5; i++ {
					cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
						p.Do(ctx, "RL.FIXED", "hot", capacity, "1h")
						p.Do(ctx, "RL.FIXED", "hot", capacity, "1h")
						return nil
					})
					if err != nil {
						t.Error(err)
						return
					}
					x, _ := cmds[0].(*redis.Cmd).Int64Slice()
					y, _ := cmds[1].(*redis.Cmd).Int64Slice()
					if x[0] != y[0] {
						t.Errorf("a transaction's takes were split: %v %v", x, y)
					}
					mu.Lock()
					admitted += x[0] + y[0]
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if admitted != capacity {
		t.Fatalf("transactions admitted %d units; want exactly %d", admitted, capacity)
	}
	g.assertSameState()
}

// A transaction mixing decisions, string commands, a known script and
// key-space commands, sent to a follower, is one entry of the log, and its
// replies are in order, each command seeing the ones before it.
func TestTransactionWithStringsAndScriptIsOneLogEntry(t *testing.T) {
	g := newGroup(t, 3)
	ld := g.leader()
	var follower *member
	for _, m := range g.members {
		if m != ld {
			follower = m
			break
		}
	}
	ctx := context.Background()
	rdb := follower.client(t)
	rdb.Do(ctx, "RL.FIXED", "warm", 1, "1h")
	g.converged()
	before := ld.node.raft.LastIndex()
	cmds, _ := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "SET", "s", 5, "PX", 60000)
		p.Do(ctx, "RL.FIXED", "a", 5, "1h")
		p.Do(ctx, "INCRBY", "s", 2)
		p.Do(ctx, "GET", "s")
		p.Do(ctx, "TYPE", "a")
		p.Do(ctx, "DEL", "a")
		p.Do(ctx, "RL.FIXED", "a", 5, "1h")
		p.Do(ctx, "EXISTS", "s", "a", "z")
		p.Do(ctx, "INCR", "a") // a limiter's state: WRONGTYPE, in place
		p.Do(ctx, "EVALSHA", compat.RateLimitRedisIncrementSHA1, 1, "hits", 60000, 0)
		p.Do(ctx, "EVALSHA", compat.RateLimitRedisIncrementSHA1, 1, "hits", 60000, 0)
		return nil
	})
	g.converged()
	if n, ops := entriesWith(t, g.leader(), before, opTx); n != 1 || ops != 12 {
		t.Fatalf("EXEC of eleven commands took %d log entries with %d ops; want 1 entry of a tx op and its 11", n, ops)
	}
	var got []any
	for _, c := range cmds {
		v, err := c.(*redis.Cmd).Result()
		if err != nil {
			v = "err:" + err.Error()[:9]
		}
		if s, ok := v.([]any); ok {
			v = s[0] // a script's count of hits
			if len(s) == 5 {
				v = s[2] // a decision's remaining
			}
		}
		got = append(got, v)
	}
	want := []any{"OK", int64(4), int64(7), "7", "rl-fixed", int64(1), int64(4), int64(2), "err:WRONGTYPE", int64(1), int64(2)}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("the transaction's replies = %v; want %v", got, want)
		}
	}
	g.assertSameState()
}

// A pipeline of script calls sent to a follower is one submission, so one
// entry of the log, and each call sees the ones before it.
func TestPipelinedScriptsAreOneLogEntry(t *testing.T) {
	g := newGroup(t, 3)
	ld := g.leader()
	var follower *member
	for _, m := range g.members {
		if m != ld {
			follower = m
			break
		}
	}
	ctx := context.Background()
	rdb := follower.client(t)
	rdb.Do(ctx, "RL.FIXED", "warm", 1, "1h")
	g.converged()
	before := ld.node.raft.LastIndex()
	pipe := rdb.Pipeline()
	var cmds []*redis.Cmd
	for i := 0; i < 8; i++ {
		cmds = append(cmds, pipe.Do(ctx, "EVALSHA", compat.RateLimitRedisIncrementSHA1, 1, "hits", 60000, 0))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	g.converged()
	if n, ops := entriesWith(t, g.leader(), before, opExec); n != 1 || ops != 8 {
		t.Fatalf("a pipeline of eight EVALSHA took %d log entries (the last of %d ops); want 1 of 8", n, ops)
	}
	for i, c := range cmds {
		v, err := c.Int64Slice()
		if err != nil || v[0] != int64(i+1) {
			t.Fatalf("call %d of the pipeline = %v, %v; want %d hits", i, v, err, i+1)
		}
	}
	g.assertSameState()
}

// entriesWith counts the log entries after index from that hold an op of
// code, and the ops of the last of them. Other entries may land meanwhile
// (a new leader's member entry under load).
func entriesWith(t *testing.T, m *member, from uint64, code opCode) (n, ops int) {
	t.Helper()
	last := m.node.raft.LastIndex()
	for i := from + 1; i <= last; i++ {
		var l raft.Log
		if err := m.logs.GetLog(i, &l); err != nil || l.Type != raft.LogCommand {
			continue
		}
		_, decoded, err := decodeBatch(l.Data)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range decoded {
			if o.code == code {
				n, ops = n+1, len(decoded)
				break
			}
		}
	}
	return n, ops
}
