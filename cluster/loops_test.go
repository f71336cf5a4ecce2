package cluster

import (
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/internal/testutil"
)

// A replicated node's event loops: decisions wait for their entry without
// blocking the loop, commands that wait otherwise run on a goroutine, and
// a pipeline mixing them is answered in command order, on the leader and
// on a follower (which forwards).
func TestPipelineOnEventLoopsAnswersInOrder(t *testing.T) {
	g := newGroup(t, 3)
	ld := g.leader()
	var f *member
	for _, m := range g.members {
		if m != ld {
			f = m
		}
	}
	for _, m := range []*member{ld, f} {
		if n := m.srv.EventLoops(); n != 2 {
			t.Fatalf("%s serves from %d event loops; want 2", m.id, n)
		}
		key := "order-" + m.id
		dec := "*5\r\n$8\r\nRL.FIXED\r\n$" + strconv.Itoa(len(key)) + "\r\n" + key + "\r\n$2\r\n10\r\n$2\r\n1h\r\n$1\r\n1\r\n"
		bad := "RL.FIXED " + key + " ten 1h\r\n"
		pipeline := dec + dec + dec + "EXISTS " + key + "\r\n" + dec + "PING\r\n" + bad + dec + "DEL " + key + "\r\n" + dec
		want := []string{"[:1 :10 :9 ", "[:1 :10 :8 ", "[:1 :10 :7 ", ":1", "[:1 :10 :6 ", "+PONG", "-ERR",
			"[:1 :10 :5 ", ":1", "[:1 :10 :9 "}
		cl := testutil.Dial(t, m.addr)
		for round := range 3 {
			cl.Send(pipeline)
			for i, w := range want {
				if got := cl.Reply(); !strings.HasPrefix(got, w) {
					t.Fatalf("%s, round %d: reply %d = %q; want %q…", m.id, round, i, got, w)
				}
			}
			cl.Do("DEL " + key + "\r\n")
		}
	}
	g.assertSameState()
}
