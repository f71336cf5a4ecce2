package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-rl/sluice/keyslot"
)

// A follower forwards its clients' operations (RAFT.FORWARD, META.FORWARD);
// the entries that say which slots a group serves and where its members
// are (opOwn, opMember, and on a data group opSlots and opGroup) are only
// ever appended by a leader for itself. A forwarded submission carrying
// one, as crafted by a client with @admin, must change nothing: an opOwn
// of every slot would make its group serve the other groups' slots too,
// forever (the duty loop never drops a slot).
func TestForwardRefusesALeadersOwnEntries(t *testing.T) {
	procs := newShardedCluster(t)
	ctx := context.Background()
	g1 := groupLeader(t, procs, 1)
	rdb := redis.NewClient(&redis.Options{Addr: g1.addr, Protocol: 2, MaxRetries: -1})
	defer rdb.Close()
	now := time.Now().UnixNano()
	all := []slotRange{{lo: 0, hi: keyslot.Slots - 1, group: 1}}
	for _, c := range []struct {
		cmd string
		o   op
	}{
		{"RAFT.FORWARD", op{code: opOwn, epoch: 99, ranges: all}},
		{"RAFT.FORWARD", op{code: opMember, id: g1.id, addr: "127.0.0.1:1"}},
		{"RAFT.FORWARD", op{code: opSlots, epoch: 99, ranges: all}},
		{"META.FORWARD", op{code: opOwn, epoch: 99, ranges: all}},
		{"META.FORWARD", op{code: opMember, id: g1.id, addr: "127.0.0.1:1"}},
	} {
		target := rdb
		if c.cmd == "META.FORWARD" {
			ml := metaLeader(t, procs)
			target = redis.NewClient(&redis.Options{Addr: ml.addr, Protocol: 2, MaxRetries: -1})
			defer target.Close()
		}
		err := target.Do(ctx, c.cmd, appendBatch(nil, now, []op{c.o})).Err()
		if err == nil || !strings.Contains(err.Error(), "own entries") {
			t.Errorf("%s of op %d: %v; want a refusal", c.cmd, c.o.code, err)
		}
	}
	time.Sleep(300 * time.Millisecond) // a duty period: what was applied has applied
	for _, p := range procs {
		rs, epoch, _ := p.data.fsm.owned()
		var set slotSet
		for _, r := range rs {
			set.add(r)
		}
		if set.count() != keyslot.Slots/2 || epoch != 1 {
			t.Errorf("%s (group %d) owns %d slots at epoch %d; want %d at epoch 1", p.id, p.group, set.count(), epoch, keyslot.Slots/2)
		}
		if addr := p.data.fsm.Member(g1.id); p.group == 1 && addr != g1.addr {
			t.Errorf("%s: member %s at %q; want %s", p.id, g1.id, addr, g1.addr)
		}
		if addr := p.meta.fsm.Member(g1.id); addr != g1.addr {
			t.Errorf("%s: meta member %s at %q; want %s", p.id, g1.id, addr, g1.addr)
		}
	}
	// A data group's record, as its leader forwards it to the meta
	// group's leader, still applies.
	o, err := g1.data.groupRecord()
	if err != nil {
		t.Fatal(err)
	}
	ml := metaLeader(t, procs)
	mc := redis.NewClient(&redis.Options{Addr: ml.addr, Protocol: 2, MaxRetries: -1})
	defer mc.Close()
	if err := mc.Do(ctx, "META.FORWARD", appendBatch(nil, now, []op{o})).Err(); err != nil {
		t.Fatalf("META.FORWARD of a group record: %v", err)
	}
}

func metaLeader(t *testing.T, procs []*shardProc) *shardProc {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, p := range procs {
			if p.meta.Ready() {
				return p
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the meta group has no leader")
	return nil
}
