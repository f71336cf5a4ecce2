package cluster

import (
	"errors"
	"testing"
	"time"
)

// CatchUp on the ready leader reads its own commit index, confirmed by a
// quorum; a follower's ReadIndex refuses (CLUSTERDOWN), which is what
// META.INDEX answers there.
func TestCatchUpOnTheLeader(t *testing.T) {
	g := newGroup(t, 3)
	l := g.leader()
	if _, err := take(l.client(t), "k", 10); err != nil {
		t.Fatalf("RL.TOKEN k: %v", err)
	}
	applied := l.node.fsm.AppliedIndex()
	index, err := l.node.ReadIndex()
	if err != nil || index < applied {
		t.Fatalf("leader ReadIndex = %d, %v; want at least its applied index %d", index, err, applied)
	}
	if err := l.node.CatchUp(time.Second); err != nil {
		t.Fatalf("leader CatchUp: %v", err)
	}
	if _, err := otherThan(g, l).node.ReadIndex(); !errors.Is(err, errNotLeader) {
		t.Fatalf("follower ReadIndex: %v; want %v", err, errNotLeader)
	}
}

// A replica whose group has no leader gives up after the wait it was
// given, with errCatchUp, rather than blocking its caller.
func TestCatchUpWithoutLeaderIsBounded(t *testing.T) {
	g := newGroup(t, 3)
	l := g.leader()
	m := otherThan(g, l)
	for _, o := range g.members {
		if o != m {
			g.stop(o)
		}
	}
	const wait = 300 * time.Millisecond
	for i := range 3 { // while it still names the stopped leader, and once it names none
		start := time.Now()
		err := m.node.CatchUp(wait)
		took := time.Since(start)
		if !errors.Is(err, errCatchUp) {
			t.Fatalf("attempt %d: CatchUp without a quorum = %v; want %v", i, err, errCatchUp)
		}
		if took < wait || took > wait+3*time.Second {
			t.Fatalf("attempt %d: CatchUp gave up after %v; want about %v", i, took, wait)
		}
	}
}
