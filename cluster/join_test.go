package cluster

import (
	"strings"
	"testing"

	"github.com/hashicorp/raft"
)

// RAFT.JOIN (META.JOIN) of an id that is a member at another Raft address
// (a second process given the same --node-id, or a typo) would move that
// member to the new address in the group's configuration: the leader's
// own id, so that no follower could reach it again. It must be refused,
// the configuration unchanged; the same id at the same address stays a
// no-op, so that a joiner can retry.
func TestJoinRefusesAMemberIDAtAnotherAddress(t *testing.T) {
	g := newGroup(t, 3)
	l := g.leader()
	before := l.node.raft.GetConfiguration().Configuration()
	for _, id := range []string{l.id, otherThan(g, l).id} {
		err := l.node.Join(id, "127.0.0.1:1", "127.0.0.1:2", true)
		if err == nil || !strings.Contains(err.Error(), "already a member") {
			t.Fatalf("JOIN %s at another address: %v; want a refusal", id, err)
		}
	}
	if after := l.node.raft.GetConfiguration().Configuration(); !sameServers(before, after) {
		t.Fatalf("configuration changed from %+v to %+v", before.Servers, after.Servers)
	}
	m := otherThan(g, l)
	if err := l.node.Join(m.id, string(m.trans.LocalAddr()), m.addr, false); err != nil {
		t.Fatalf("JOIN %s again at its own address: %v", m.id, err)
	}
}

func otherThan(g *group, l *member) *member {
	for _, m := range g.members {
		if m != l {
			return m
		}
	}
	return nil
}

func sameServers(a, b raft.Configuration) bool {
	if len(a.Servers) != len(b.Servers) {
		return false
	}
	for i := range a.Servers {
		if a.Servers[i] != b.Servers[i] {
			return false
		}
	}
	return true
}
