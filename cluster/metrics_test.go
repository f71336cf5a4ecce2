package cluster

import (
	"testing"
	"time"
)

func TestMetricsCountForwardsAppliesAndLeaderChanges(t *testing.T) {
	g := newGroup(t, 3)
	leader := g.leader()
	var follower *member
	for _, m := range g.members {
		if m != leader {
			follower = m
			break
		}
	}
	before := leader.node.Metrics()
	rdb := follower.client(t)
	for i := 0; i < 3; i++ {
		if _, err := take(rdb, "k", 10); err != nil {
			t.Fatal(err)
		}
	}
	f := follower.node.Metrics()
	if f.Forwarded < 3 || f.ForwardedOps < 3 {
		t.Errorf("the follower forwarded %d submissions of %d operations; want at least 3 of 3", f.Forwarded, f.ForwardedOps)
	}
	l := leader.node.Metrics()
	if l.Forwarded != 0 {
		t.Errorf("the leader forwarded %d submissions; want 0", l.Forwarded)
	}
	if got := l.ApplyCount - before.ApplyCount; got < 3 {
		t.Errorf("the leader observed %d entries applied; want at least the 3 decisions", got)
	}
	var sum int64
	for _, n := range l.Apply {
		sum += n
	}
	if sum != l.ApplyCount || l.ApplySum <= 0 {
		t.Errorf("apply buckets sum to %d, count %d, total time %v", sum, l.ApplyCount, l.ApplySum)
	}
	for _, m := range g.members {
		if c := m.node.Metrics().LeaderChanges; c < 1 {
			t.Errorf("%s saw %d leader changes; want at least the first election", m.id, c)
		}
	}
	// The leader steps down: every node sees another change.
	changes := follower.node.Metrics().LeaderChanges
	g.stop(leader)
	g.leader()
	deadline := time.Now().Add(5 * time.Second)
	for follower.node.Metrics().LeaderChanges == changes {
		if time.Now().After(deadline) {
			t.Fatalf("%s saw no leader change in 5 s after the leader stopped", follower.id)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestApplyBucketsAreThePowersOfTwoOfMicroseconds(t *testing.T) {
	var m nodeMetrics
	for _, c := range []struct {
		d    time.Duration
		want int
	}{{0, 0}, {time.Microsecond, 0}, {1500 * time.Nanosecond, 1}, {2 * time.Microsecond, 1},
		{3 * time.Microsecond, 2}, {time.Millisecond, 10}, {time.Hour, ApplyBuckets}} {
		m = nodeMetrics{}
		m.observeApply(c.d)
		for k := range m.apply {
			if n := m.apply[k].Load(); (k == c.want) != (n == 1) {
				t.Errorf("observeApply(%v): bucket %d holds %d; want it in bucket %d (bound %v)", c.d, k, n, c.want, ApplyBound(c.want))
			}
		}
		if c.want < ApplyBuckets && c.d > ApplyBound(c.want) {
			t.Errorf("%v is above its bucket's bound %v", c.d, ApplyBound(c.want))
		}
	}
}
